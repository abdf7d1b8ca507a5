/**
 * The task model (seed: "metadata": id, owner, what to run, created time,
 * result, retry count). Times are epoch milliseconds inside Drover; the API
 * renders them as ISO-8601 strings.
 */
import type { RetryPolicy } from './retry-policy.js';
import type { SkipReason } from './dag/release.js';
import type { TaskState, TransitionReason } from './task-state.js';
import type { TaskOutputs } from './task-outputs.js';

export type TaskKind = 'batch';

/** The longest inline script, in characters (code points, as the API's schema counts them). */
export const MAX_SCRIPT_CHARS = 512 * 1024;

/** What a user asks for. Either `command` (+ `args`, run without a shell) or `script` (+ `interpreter`). */
export interface TaskSpec {
  name: string;
  kind: TaskKind;
  command: string | null;
  args: string[];
  script: string | null;
  /**
   * argv that runs the script file, e.g. ["sh"] or ["python3", "-u"]; the script's path is appended.
   * Empty: the script file is executed itself (it starts with `#!`, and the kernel reads that line);
   * server/task-input.ts picks this for a script with a shebang and no interpreter given.
   */
  interpreter: string[];
  /**
   * Absolute directory the attempt runs in, on the worker; null = the attempt's fresh work
   * directory. HOME and DROVER_OUTPUT_DIR stay the work directory either way.
   */
  cwd: string | null;
  env: Record<string, string>;
  /** Wall-clock limit of one attempt; null = none. */
  timeoutMs: number | null;
  retry: RetryPolicy;
  /** Higher runs first among waiting tasks. */
  priority: number;
  labels: Record<string, string>;
  /** Placement: the task runs only on a worker whose labels hold every K=V here (core/placement.ts). */
  requires: Record<string, string>;
}

export type AttemptState = 'running' | 'succeeded' | 'failed' | 'timed_out' | 'cancelled' | 'lost';
/**
 * How an attempt ended, as a worker (or the lease sweeper, for `lost`) reports it.
 * `start_failed`: the process could not be started at all (command not found,
 * permission denied, not executable, missing cwd); it is stored as attempt state
 * `failed` (attemptStateOf) and ends the task `failed` at once, without a retry
 * (core/attempt-end.ts): it would fail the same way again.
 * `returned`: the worker gave back an assignment it held queued (prefetch) and
 * never started, because the server asked it to (protocol `give_back`: another
 * worker had a free slot). Stored as attempt state `lost`; the task waits
 * again at once, without using a retry or counting as a lost worker.
 */
export type AttemptOutcome = Exclude<AttemptState, 'running'> | 'start_failed' | 'returned';

/** The attempt state an outcome is stored as (the attempts table keeps its six states). */
export function attemptStateOf(outcome: AttemptOutcome): Exclude<AttemptState, 'running'> {
  return outcome === 'start_failed' ? 'failed' : outcome === 'returned' ? 'lost' : outcome;
}

export interface TaskResult {
  outcome: AttemptOutcome;
  attempt: number;
  exitCode: number | null;
  signal: string | null;
  error: string | null;
  durationMs: number | null;
}

export interface Task extends TaskSpec {
  id: string;
  owner: string;
  state: TaskState;
  /** Attempts started so far. */
  attempts: number;
  retriesUsed: number;
  lostCount: number;
  /** retrying: when the backoff ends; ready: when a task submitted to run later (runAt/delay) is released. */
  runAfter: number | null;
  currentAttemptId: number | null;
  createdAt: number;
  updatedAt: number;
  /** Set once, when the task reaches a terminal state after an attempt. */
  result: TaskResult | null;
  /**
   * What the succeeding attempt wrote to DROVER_OUTPUT (core/task-outputs.ts):
   * recorded once, when the task becomes succeeded; null when it wrote none
   * (or the task has not succeeded).
   */
  outputs: TaskOutputs | null;
  /**
   * The cron schedule that created this task (store/schedules.ts fireSchedule), and the
   * slot (epoch ms) it was created for; both null for a task a user submitted. The id
   * may outlive its schedule (a deleted schedule leaves its tasks as they are).
   */
  scheduleId: string | null;
  scheduledAt: number | null;
  /** The DAG run this task is a step of (store/dags.ts), and the step's name; both null for other tasks. */
  dagRunId: string | null;
  dagStep: string | null;
  /** Why a DAG step was skipped (core/dag/release.ts); null unless the state is `skipped`. */
  skipReason: SkipReason | null;
}

export interface Attempt {
  id: number;
  /**
   * Random per attempt (core/ids.ts newFencingToken), known only to the store
   * and the attempt's worker: every report must carry it (core/fence.ts).
   * Secret: never rendered by the API.
   */
  fencingToken: string;
  /** Set by a cancel or a superseding retry: the worker must stop this attempt (core/cancel-plan.ts). */
  stopReason: string | null;
  taskId: string;
  number: number;
  workerId: string;
  state: AttemptState;
  startedAt: number;
  endedAt: number | null;
  leaseExpiresAt: number;
  exitCode: number | null;
  signal: string | null;
  error: string | null;
  durationMs: number | null;
}

export interface TaskEvent {
  id: number;
  taskId: string;
  from: TaskState | null;
  to: TaskState;
  reason: TransitionReason | 'fenced_report';
  actor: string;
  at: number;
  detail: Record<string, unknown> | null;
}

export interface LogChunk {
  /** Position in the task's log across attempts; the follow cursor. */
  id: number;
  attempt: number;
  seq: number;
  stream: 'stdout' | 'stderr';
  at: number;
  data: Buffer;
}
