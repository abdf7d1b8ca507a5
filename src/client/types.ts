/**
 * The wire types of the REST API (docs/api.md). These are what the server
 * sends and accepts: times are ISO-8601 strings in UTC (not the epoch
 * milliseconds the core model uses inside the server), durations in requests
 * are milliseconds or strings like "30s".
 *
 * The dashboard uses these too (web/src/api/types.ts re-exports them), so
 * this file imports nothing: no DOM- or Node-only types beyond AbortSignal,
 * which both have.
 */

export type TaskState = 'ready' | 'waiting' | 'running' | 'retrying' | 'succeeded' | 'failed' | 'cancelled' | 'skipped';
export type AttemptState = 'running' | 'succeeded' | 'failed' | 'timed_out' | 'cancelled' | 'lost';
export type Role = 'admin' | 'user' | 'worker';

/** A duration in a request: integer milliseconds, or "500ms", "30s", "5m", "1h30m". */
export type DurationInput = number | string;

/** Body of `POST /v1/tasks`. Exactly one of `command` and `script`. The server rejects unknown fields. */
export interface SubmitTaskRequest {
  command?: string;
  args?: string[];
  script?: string;
  interpreter?: string[];
  name?: string;
  kind?: 'batch';
  env?: Record<string, string>;
  timeout?: DurationInput;
  retry?: {
    maxRetries?: number;
    baseDelay?: DurationInput;
    factor?: number;
    maxDelay?: DurationInput;
  };
  priority?: number;
  labels?: Record<string, string>;
  /** Placement: run only on a worker whose labels include every K=V here. */
  requires?: Record<string, string>;
  /** Absolute directory the task runs in on the worker (default: a fresh work directory). */
  cwd?: string;
  /** Run later, at this ISO 8601 time with a zone (a past time runs now; at most 366 days ahead). Not with `delay`. */
  runAt?: string;
  /** Run later, this long after the submit. Not with `runAt`. */
  delay?: DurationInput;
}

export interface TaskResult {
  /** `start_failed`: the process could not be started (see `error`); the task failed without a retry. */
  outcome: Exclude<AttemptState, 'running'> | 'start_failed';
  attempt: number;
  exitCode: number | null;
  signal: string | null;
  error: string | null;
  durationMs: number | null;
}

/** A task's retry policy as the API shows it: milliseconds (requests may also use duration strings). */
export interface RetryPolicy {
  maxRetries: number;
  baseDelayMs: number;
  factor: number;
  maxDelayMs: number;
}

export interface Task {
  id: string;
  owner: string;
  name: string;
  kind: 'batch';
  state: TaskState;
  command: string | null;
  args: string[];
  script: string | null;
  interpreter: string[];
  /** Values only for the task's owner: for anyone else each value is "" and envRedacted is true. */
  env: Record<string, string>;
  envRedacted: boolean;
  timeoutMs: number | null;
  /** Absolute directory the task runs in on the worker; null = its work directory. */
  cwd: string | null;
  retry: RetryPolicy;
  priority: number;
  labels: Record<string, string>;
  requires: Record<string, string>;
  attempts: number;
  retriesUsed: number;
  lostCount: number;
  /** ISO time a retrying task's backoff ends, or a `ready` task submitted to run later is released; else null. */
  runAfter: string | null;
  /** The cron schedule whose run this task is (it may since have been deleted), else null. */
  scheduleId: string | null;
  /** ISO time of the slot this run is for; null when not a schedule's run or run out of schedule. */
  scheduledAt: string | null;
  /** The DAG run this task is a step of, and the step's name; null for other tasks. */
  dagRunId: string | null;
  dagStep: string | null;
  /** Why a skipped DAG step was skipped; null unless the state is `skipped`. */
  skipReason: 'upstream_failed' | 'upstream_skipped' | 'condition_not_met' | null;
  createdAt: string;
  updatedAt: string;
  /** Set once, when the task ends after an attempt. */
  result: TaskResult | null;
  /**
   * KEY=VALUE pairs the succeeding attempt wrote to the file named by DROVER_OUTPUT:
   * recorded once, when the task succeeded; null when it wrote none or has not succeeded.
   */
  outputs: Record<string, string> | null;
}

export interface Attempt {
  id: number;
  number: number;
  workerId: string;
  state: AttemptState;
  startedAt: string;
  endedAt: string | null;
  exitCode: number | null;
  signal: string | null;
  error: string | null;
  durationMs: number | null;
}

/** One state transition of a task (`Event` in docs/api.md; renamed so it does not shadow the DOM `Event`). */
export interface TaskEvent {
  id: number;
  from: TaskState | null;
  to: TaskState;
  reason: string;
  actor: string;
  at: string;
  detail: Record<string, unknown> | null;
}

export interface TaskDetail {
  task: Task;
  attempts: Attempt[];
  events: TaskEvent[];
}

export interface ListTasksQuery {
  state?: TaskState;
  /** Name prefix. */
  name?: string;
  /** Admins only; users always see their own tasks. */
  owner?: string;
  createdAfter?: string;
  createdBefore?: string;
  /** Id prefix: 1..26 Crockford base32 characters, any case. */
  id?: string;
  /** The runs of this schedule (the caller's, or `owner`'s for an admin). */
  schedule?: string;
  /** 1..500, server default 50. */
  limit?: number;
  /** The previous page's `nextCursor`. */
  cursor?: string;
  /** `created` (default): newest created first; `ended`: newest end first, with `state` failed or cancelled only. */
  order?: 'created' | 'ended';
}

/** A row of `GET /v1/tasks` and of the stream: no command, script, args or env. */
export interface TaskSummary {
  id: string;
  owner: string;
  name: string;
  kind: 'batch';
  state: TaskState;
  priority: number;
  attempts: number;
  retriesUsed: number;
  /** The current (latest) attempt's worker, timing and end; null before the first claim. */
  workerId: string | null;
  createdAt: string;
  updatedAt: string;
  startedAt: string | null;
  endedAt: string | null;
  durationMs: number | null;
  exitCode: number | null;
  signal: string | null;
  /** The final result's error when the task ended, else the current attempt's. */
  error: string | null;
  /**
   * How the task ended (its result's outcome: succeeded, failed, timed_out, cancelled, lost, start_failed)
   * once terminal; before that how its current attempt ended; null while it runs or before a claim.
   */
  outcome: TaskResult['outcome'] | null;
  runAfter: string | null;
  /** The cron schedule whose run this task is (it may since have been deleted), else null. */
  scheduleId: string | null;
  /** ISO time of the slot this run is for; null when not a schedule's run or run out of schedule. */
  scheduledAt: string | null;
  /** The DAG run this task is a step of, and the step's name; null for other tasks. */
  dagRunId: string | null;
  dagStep: string | null;
  /** Why a skipped DAG step was skipped; null unless the state is `skipped`. */
  skipReason: 'upstream_failed' | 'upstream_skipped' | 'condition_not_met' | null;
}

export interface TaskPage {
  tasks: TaskSummary[];
  nextCursor: string | null;
}

export type StateCounts = Record<TaskState, number>;

export interface CountsAnswer {
  counts: StateCounts;
  total: number;
}

export interface MinuteStat {
  /** ISO start of the minute. */
  minute: string;
  started: number;
  succeeded: number;
  failed: number;
  cancelled: number;
  /** First attempts started in the minute, and their submit-to-start latency (null when none). */
  latencyCount: number;
  latencyAvgMs: number | null;
  latencyMaxMs: number | null;
}

export interface LogChunk {
  id: number;
  attempt: number;
  stream: 'stdout' | 'stderr';
  at: string;
  /** base64 of the bytes. */
  data: string;
}

export interface LogChunkPage {
  /** Ascending by id. */
  chunks: LogChunk[];
  /** No chunk of the task precedes the first one returned. */
  atStart: boolean;
  /** More output may come (not terminal, or its last attempt still stopping). */
  running: boolean;
}

export interface LogChunksQuery {
  /** The chunks just before this chunk id (page backwards). */
  before?: number;
  /** The chunks after this chunk id. */
  after?: number;
  /** 1..32 (default 32). */
  limit?: number;
  /** With `after`: wait up to this many ms (0..25000) for a chunk or the task's end. */
  wait?: number;
  signal?: AbortSignal;
}

/** Events of `GET /v1/stream`. */
export type StreamEvent =
  | { type: 'hello'; id: string; cursor: string; serverTime: string }
  | { type: 'changes'; id: string; cursor: string; tasks: TaskSummary[]; workers: WorkerInfo[] }
  | { type: 'reset'; id: string; cursor: string; reason: string };

export interface LogsQuery {
  /** Only this attempt's output, without the `--- drover: attempt N ---` marker. */
  attempt?: number;
  /** Keep the response open and stream new output until the task is terminal. */
  follow?: boolean;
  signal?: AbortSignal;
}

export interface Token {
  id: string;
  name: string;
  user: string;
  role: Role;
  createdAt: string;
  revokedAt: string | null;
  lastUsedAt: string | null;
}

export interface CreateTokenRequest {
  name: string;
  role?: Role;
  user?: string;
}

export interface CreatedToken {
  token: Token;
  /** Shown once; the server keeps only its hash. */
  secret: string;
}

export type WorkerState = 'connected' | 'draining' | 'disconnected' | 'lost';

export interface RunningAttemptRef {
  attemptId: number;
  taskId: string;
  taskName: string;
  startedAt: string;
}

export interface WorkerInfo {
  id: string;
  hostname: string;
  labels: Record<string, string>;
  slots: number;
  /** Running attempts on it, everyone's. */
  slotsUsed: number;
  /** lost: the store says connected but nothing was heard from it within the lease. */
  state: WorkerState;
  connectedAt: string;
  lastSeenAt: string;
  drainingAt: string | null;
  /** Its running attempts (a user sees only their own tasks here). */
  runningAttempts: RunningAttemptRef[];
}
