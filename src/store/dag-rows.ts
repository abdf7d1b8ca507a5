/** Row <-> model mapping of the DAG tables (store/dags.ts), shared by both stores (as rows.ts is for tasks). */
import type { DagDefinition } from '../core/dag/dag-definition.js';
import type { RunState, SkipReason } from '../core/dag/release.js';
import type { TaskResult } from '../core/task.js';
import type { TaskState } from '../core/task-state.js';
import type { DagRecord, DagRunRecord, DagRunStep, DagSummary } from './dags.js';

/** dags joined with one of its dag_versions rows. */
export interface DagVersionRow {
  id: string;
  owner: string;
  name: string;
  version: number;
  definition: string;
  hash: string;
  step_count: number;
  created_at: number;
  first_created_at: number;
}

export interface DagSummaryRow {
  id: string;
  owner: string;
  name: string;
  latest_version: number;
  step_count: number;
  description: string | null;
  created_at: number;
  updated_at: number;
}

export interface DagRunRow {
  id: string;
  owner: string;
  dag_id: string;
  dag_name: string;
  version: number;
  state: string;
  params: string;
  step_count: number;
  step_states: string;
  schedule_id: string | null;
  scheduled_at: number | null;
  created_at: number;
  updated_at: number;
  ended_at: number | null;
}

export interface DagRunStepRow {
  id: string;
  dag_step: string;
  state: string;
  skip_reason: string | null;
  attempts: number;
  result: string | null;
  outputs: string | null;
  updated_at: number;
  released_at: number | null;
  started_at: number | null;
}

export function dagFromRow(r: DagVersionRow): DagRecord {
  return {
    id: r.id,
    owner: r.owner,
    name: r.name,
    version: r.version,
    definition: JSON.parse(r.definition) as DagDefinition,
    hash: r.hash,
    createdAt: r.created_at,
    firstCreatedAt: r.first_created_at,
  };
}

export function dagSummaryFromRow(r: DagSummaryRow): DagSummary {
  return { id: r.id, owner: r.owner, name: r.name, version: r.latest_version, stepCount: r.step_count, description: r.description ?? null, createdAt: r.created_at, updatedAt: r.updated_at };
}

export function dagRunFromRow(r: DagRunRow): DagRunRecord {
  return {
    id: r.id,
    owner: r.owner,
    dagId: r.dag_id,
    dagName: r.dag_name,
    version: r.version,
    state: r.state as RunState,
    params: JSON.parse(r.params) as Record<string, string>,
    stepCount: r.step_count,
    stepStates: r.step_states,
    scheduleId: r.schedule_id ?? null,
    scheduledAt: r.scheduled_at ?? null,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    endedAt: r.ended_at ?? null,
  };
}

const ENDED: ReadonlySet<string> = new Set(['succeeded', 'failed', 'cancelled', 'skipped']);

export function dagRunStepFromRow(r: DagRunStepRow): DagRunStep {
  return {
    step: r.dag_step,
    taskId: r.id,
    state: r.state as TaskState,
    skipReason: (r.skip_reason as SkipReason | null) ?? null,
    attempts: r.attempts,
    releasedAt: r.released_at ?? null,
    startedAt: r.started_at ?? null,
    endedAt: ENDED.has(r.state) ? r.updated_at : null,
    result: r.result === null ? null : (JSON.parse(r.result) as TaskResult),
    outputs: r.outputs === null ? null : (JSON.parse(r.outputs) as Record<string, string>),
  };
}

/**
 * What dagRunSteps reads (both stores): each step of the run with the time of
 * its latest release and its first attempt since then (a retried run's step
 * reports its new run-through, not the failed one).
 */
export const DAG_RUN_STEPS_SQL = (param: string) => `WITH s AS (
  SELECT t.id, t.dag_step, t.state, t.skip_reason, t.attempts, t.result, t.outputs, t.updated_at,
    (SELECT max(e.at) FROM task_events e WHERE e.task_id = t.id AND e.reason = 'released') AS released_at
  FROM tasks t WHERE t.dag_run_id = ${param}
)
SELECT s.*, (SELECT min(a.started_at) FROM attempts a WHERE a.task_id = s.id AND a.started_at >= coalesce(s.released_at, 0)) AS started_at FROM s`;
