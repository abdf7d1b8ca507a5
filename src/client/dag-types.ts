/** The /v1/dags and /v1/dag-runs payloads (docs/api.md, "DAGs"); times are ISO 8601 strings. */
import type { TaskTemplate } from './schedule-types.js';
import type { SubmitTaskRequest, TaskResult, TaskState } from './types.js';

export type StepCondition = 'success' | 'failure' | 'always';
export type DagRunState = 'running' | 'succeeded' | 'failed' | 'cancelled';
export type SkipReason = 'upstream_failed' | 'upstream_skipped' | 'condition_not_met';

/** A step of a DAG body: a submit body (without runAt/delay; named by the step) plus its dependencies and condition. */
export type DagStepRequest = Omit<SubmitTaskRequest, 'runAt' | 'delay' | 'name'> & {
  name: string;
  depends_on?: string[];
  when?: StepCondition;
  /** Shorthand for retry.maxRetries. */
  retries?: number;
};

/** What a DAG file holds (YAML or JSON) and POST /v1/dags takes. */
export interface DagRequest {
  name: string;
  description?: string;
  /** Declared run parameters and their defaults; absent: a run may pass any. */
  params?: Record<string, string>;
  steps: DagStepRequest[];
}

export interface DagStep {
  name: string;
  dependsOn: string[];
  when: StepCondition;
  task: TaskTemplate;
}

export interface Dag {
  id: string;
  name: string;
  owner: string;
  version: number;
  description: string | null;
  params: Record<string, string> | null;
  hash: string;
  steps: DagStep[];
  /** When this version was applied. */
  createdAt: string;
  firstCreatedAt: string;
}

export interface DagApplyResult {
  dag: Dag;
  /** False: the newest version already was this definition; nothing was stored. */
  created: boolean;
}

export interface DagSummary {
  id: string;
  name: string;
  owner: string;
  version: number;
  stepCount: number;
  description: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface DagPage {
  dags: DagSummary[];
  nextCursor: string | null;
}

export interface DagRun {
  id: string;
  dag: string;
  dagId: string;
  version: number;
  owner: string;
  state: DagRunState;
  params: Record<string, string>;
  stepCount: number;
  scheduleId: string | null;
  scheduledAt: string | null;
  createdAt: string;
  updatedAt: string;
  endedAt: string | null;
}

/** A run as GET /v1/dag-runs lists it. */
export interface DagRunListItem extends DagRun {
  /** Its steps by state. */
  counts: Partial<Record<TaskState, number>>;
}

export interface DagRunPage {
  runs: DagRunListItem[];
  nextCursor: string | null;
}

export interface DagRunStep {
  name: string;
  dependsOn: string[];
  when: StepCondition;
  taskId: string;
  state: TaskState;
  skipReason: SkipReason | null;
  attempts: number;
  releasedAt: string | null;
  startedAt: string | null;
  endedAt: string | null;
  durationMs: number | null;
  result: TaskResult | null;
  outputs: Record<string, string> | null;
  /** On the critical path. */
  critical: boolean;
}

export interface DagRunDetail {
  run: DagRun;
  /** In the definition's order. */
  steps: DagRunStep[];
  /** Step names, first to last. */
  criticalPath: string[];
  /** Steps by state. */
  counts: Partial<Record<TaskState, number>>;
}

export interface ListDagsQuery {
  owner?: string;
  limit?: number;
  cursor?: string;
}

export interface ListDagRunsQuery {
  dag?: string;
  /** Runs whose id starts with this (1..26 characters of a run id, any case). */
  id?: string;
  owner?: string;
  limit?: number;
  cursor?: string;
}
