/**
 * The task model (seed: "metadata": id, owner, what to run, created time,
 * result, retry count). Times are epoch milliseconds inside Drover; the API
 * renders them as ISO-8601 strings.
 */
import type { RetryPolicy } from './retry-policy.js';
import type { TaskState, TransitionReason } from './task-state.js';

export type TaskKind = 'batch';

/** What a user asks for. Either `command` (+ `args`, run without a shell) or `script` (+ `interpreter`). */
export interface TaskSpec {
  name: string;
  kind: TaskKind;
  command: string | null;
  args: string[];
  script: string | null;
  /** argv that runs the script file, e.g. ["sh"] or ["python3", "-u"]; the script's path is appended. */
  interpreter: string[];
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
/** How an attempt ended, as a worker (or the lease sweeper, for `lost`) reports it. */
export type AttemptOutcome = Exclude<AttemptState, 'running'>;

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
  /** retrying: when the backoff ends. */
  runAfter: number | null;
  currentAttemptId: number | null;
  createdAt: number;
  updatedAt: number;
  /** Set once, when the task reaches a terminal state after an attempt. */
  result: TaskResult | null;
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
