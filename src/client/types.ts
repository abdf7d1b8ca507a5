/**
 * The wire types of the REST API (docs/api.md). These are what the server
 * sends and accepts: times are ISO-8601 strings in UTC (not the epoch
 * milliseconds the core model uses inside the server), durations in requests
 * are milliseconds or strings like "30s".
 */

export type TaskState = 'ready' | 'waiting' | 'running' | 'retrying' | 'succeeded' | 'failed' | 'cancelled';
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
}

export interface TaskResult {
  outcome: Exclude<AttemptState, 'running'>;
  attempt: number;
  exitCode: number | null;
  signal: string | null;
  error: string | null;
  durationMs: number | null;
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
  env: Record<string, string>;
  timeoutMs: number | null;
  retry: { maxRetries: number; baseDelayMs: number; factor: number; maxDelayMs: number };
  priority: number;
  labels: Record<string, string>;
  requires: Record<string, string>;
  attempts: number;
  retriesUsed: number;
  lostCount: number;
  /** ISO time a retrying task's backoff ends, else null. */
  runAfter: string | null;
  createdAt: string;
  updatedAt: string;
  /** Set once, when the task ends after an attempt. */
  result: TaskResult | null;
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
  /** 1..500, server default 50. */
  limit?: number;
  /** The previous page's `nextCursor`. */
  cursor?: string;
}

export interface TaskPage {
  tasks: Task[];
  nextCursor: string | null;
}

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

export interface WorkerInfo {
  id: string;
  hostname: string;
  slots: number;
  labels: Record<string, string>;
  state: string;
  connectedAt: string;
  lastSeenAt: string;
  /** How many attempts it runs now (the server may send the attempt ids instead). */
  running: number | unknown[];
}
