/**
 * DAGs (issue 12): their definitions (versioned), their runs, and the run's
 * progress, which every store writes inside the transaction that ended a
 * step (dag-progress.ts), never afterwards from memory.
 *
 * A run's steps are tasks (tasks.dag_run_id, dag_step): each has the retries,
 * timeout, logs, fencing and history of any task. Starting a run inserts all
 * of them in one transaction: the roots `waiting`, the others `ready`
 * (pending; core/dag/release.ts). When a step's task ends (an attempt's end,
 * a cancel, the lost cap), the same transaction decides its dependents
 * (release or skip, following skips down the graph) and, once every step has
 * ended, the run's state. Both stores serialize a run's progress: SQLite has
 * one writer; PostgreSQL locks the run's row first (see postgres/dags.ts), so
 * two steps ending at once on two servers cannot both miss the release of
 * the step that waits for both.
 *
 * States of a run: running ──► succeeded | failed (its last step ended) |
 * cancelled (cancelDagRun); failed | cancelled ──(retryDagRun)──► running.
 */
import type { DagDefinition } from '../core/dag/dag-definition.js';
import { ConflictError } from '../core/errors.js';
import type { RunState, SkipReason } from '../core/dag/release.js';
import type { Attempt, TaskResult } from '../core/task.js';
import type { TaskState } from '../core/task-state.js';

export interface DagRecord {
  /** ULID of the DAG's first apply; stays across versions. */
  id: string;
  owner: string;
  name: string;
  version: number;
  definition: DagDefinition;
  /** sha256 (hex) of the stored definition's JSON. */
  hash: string;
  /** When this version was applied. */
  createdAt: number;
  /** When the DAG was first applied. */
  firstCreatedAt: number;
}

/** A DAG as lists show it: its newest version, without the definition. */
export interface DagSummary {
  id: string;
  owner: string;
  name: string;
  version: number;
  stepCount: number;
  description: string | null;
  createdAt: number;
  updatedAt: number;
}

export interface DagFilter {
  owner?: string;
  /** Keyset: names after this one (ascending, per owner). */
  cursor?: string;
  limit: number;
}

export interface DagRunRecord {
  id: string;
  owner: string;
  dagId: string;
  dagName: string;
  version: number;
  state: RunState;
  params: Record<string, string>;
  stepCount: number;
  /**
   * What the run's progress decides from: one character per step
   * (core/dag/step-states.ts), kept with every step change that matters to a
   * decision. Internal (not in the API): the steps' tasks are the record.
   */
  stepStates: string;
  /** A cron schedule's run of the DAG, and its slot; both null otherwise. */
  scheduleId: string | null;
  scheduledAt: number | null;
  createdAt: number;
  updatedAt: number;
  /** When it reached succeeded, failed or cancelled; null while running. */
  endedAt: number | null;
}

export interface DagRunFilter {
  owner?: string;
  /** One DAG's runs (by its id). */
  dagId?: string;
  /**
   * Runs whose id starts with this (1..26 upper-case Crockford base32
   * characters): `drover dag status 01JF8Z` resolves a prefix as task ids do.
   * Run ids are ULIDs, so it is one range of the primary key.
   */
  idPrefix?: string;
  /** Keyset: runs with id < cursor (newest first). */
  cursor?: string;
  limit: number;
}

export interface DagRunPage {
  runs: DagRunRecord[];
  nextCursor: string | null;
}

/** One step of a run as `drover dag status` shows it. */
export interface DagRunStep {
  step: string;
  taskId: string;
  state: TaskState;
  skipReason: SkipReason | null;
  attempts: number;
  /** When it became eligible (released), null while pending or if skipped. */
  releasedAt: number | null;
  /** Its first attempt's start; null if it never ran. */
  startedAt: number | null;
  /** When it ended (its task's last change once terminal); null while not ended. */
  endedAt: number | null;
  result: TaskResult | null;
  /** The KEY=VALUE outputs it wrote to $DROVER_OUTPUT (on success), else null. */
  outputs: Record<string, string> | null;
}

export interface StartDagRun {
  runId: string;
  dag: DagRecord;
  /** Resolved (core/dag/params.ts resolveParams). */
  params: Record<string, string>;
  /** One new task id per step, in the definition's step order. */
  taskIds: string[];
  actor: string;
  now: number;
  /** A cron schedule's run (its slot is unique per schedule; see fire in schedules.ts); null otherwise. */
  slot?: { scheduleId: string; scheduledAt: number | null } | null;
}

export interface DagCancelResult {
  run: DagRunRecord;
  /** Attempts that were running: their workers must stop them (each now has a stop reason). */
  stopped: Attempt[];
}

export interface DagStore {
  /**
   * Stores the definition as the DAG's next version, or returns the newest
   * version unchanged (created: false) when its hash is the same. `id` is
   * used only when the DAG is new.
   */
  applyDag(id: string, owner: string, definition: DagDefinition, hash: string, now: number): Promise<{ dag: DagRecord; created: boolean }>;
  /** The newest version, or `version`; null when none. */
  getDag(owner: string, name: string, version?: number): Promise<DagRecord | null>;
  getDagVersion(dagId: string, version: number): Promise<DagRecord | null>;
  /** Ordered by (owner, name); at most `limit`, one more tells a next page. */
  listDags(filter: DagFilter): Promise<{ dags: DagSummary[]; nextCursor: string | null }>;

  /** Creates the run and every step's task in ONE transaction (see the header). Signals `wake`. */
  startDagRun(req: StartDagRun): Promise<DagRunRecord>;
  getDagRun(id: string): Promise<DagRunRecord | null>;
  /** Newest first. */
  listDagRuns(filter: DagRunFilter): Promise<DagRunPage>;
  /** The run's steps in its definition's order (a step whose task retention removed is left out). */
  dagRunSteps(runId: string): Promise<DagRunStep[]>;
  /**
   * How many steps of each run are in each state (the `dag runs` table's
   * "succeeded/total"), in one read over the tasks' (dag_run_id, dag_step)
   * index; a run with no step task left (retention) is absent.
   */
  dagRunStepCounts(runIds: readonly string[]): Promise<Map<string, Partial<Record<TaskState, number>>>>;
  /**
   * Cancels a running run: every step that has not ended is cancelled (running
   * attempts get a stop order, as cancelTask gives one), and the run ends
   * `cancelled`, in one transaction. ConflictError when it has ended; null
   * when there is no such run.
   */
  cancelDagRun(id: string, actor: string, now: number): Promise<DagCancelResult | null>;
  /**
   * Re-runs the failed and cancelled steps and those skipped because of them
   * (core/dag/retry-plan.ts), keeping the succeeded ones, in one transaction;
   * the run is `running` again. ConflictError when it is running, has nothing
   * to retry, or a step's old attempt is still stopping; null when there is no such run.
   */
  retryDagRun(id: string, actor: string, now: number): Promise<DagRunRecord | null>;
}

/** Actor of the transitions a run's progress makes (releases, skips, the run's end). */
export const DAG_ACTOR = 'dag';

/**
 * A DAG step's task is retried with its run (`drover dag retry RUN`), which
 * also re-decides the steps after it; a retry of the task alone would leave
 * them skipped and the run ended.
 */
export function dagStepRetryConflict(t: { id: string; dag_run_id: string | null; dag_step: string | null }): ConflictError {
  return new ConflictError(`task ${t.id} is step "${t.dag_step}" of DAG run ${t.dag_run_id}; retry the run instead (drover dag retry ${t.dag_run_id}, or POST /v1/dag-runs/${t.dag_run_id}/retry)`);
}

/** A run's changed step (its task reached a terminal state) that the same transaction must follow up. */
export interface DagChange {
  runId: string;
  taskId: string;
  /** The step's name and the terminal state its task reached. */
  step: string;
  state: TaskState;
  /**
   * The step's outputs as this transaction leaves them (the stored JSON text,
   * null for none), when the writer knows them: the release of its
   * dependents then need not read them back (PostgreSQL's dag-runs.ts).
   * Undefined: not known, read from the store.
   */
  outputs?: string | null;
}
