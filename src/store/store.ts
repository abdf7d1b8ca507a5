/**
 * The store: the one data system (design.md: the datastore is also the queue).
 * SQLite and PostgreSQL implement this interface and pass one contract suite
 * (test/store/contract.ts). Every method that changes a task is atomic: one
 * statement or one transaction, with a guard that makes a race impossible.
 * State changes follow core/task-state.ts and write one event row each.
 */
import type { AttemptEndInput } from '../core/attempt-end.js';
import type { Attempt, AttemptOutcome, LogChunk, Task, TaskEvent, TaskSpec } from '../core/task.js';
import type { TaskState } from '../core/task-state.js';

export type Role = 'admin' | 'user' | 'worker';

export interface TokenRecord {
  id: string;
  name: string;
  /** The user the token acts for; tasks it submits belong to this user. */
  user: string;
  role: Role;
  /** sha256 of the secret, hex. The secret itself is never stored. */
  secretHash: string;
  createdAt: number;
  revokedAt: number | null;
  lastUsedAt: number | null;
}

export interface TaskFilter {
  state?: TaskState;
  namePrefix?: string;
  owner?: string;
  /** Inclusive: createdAt >= createdAfter. */
  createdAfter?: number;
  /** Exclusive: createdAt < createdBefore (half-open, so adjacent ranges do not overlap). */
  createdBefore?: number;
  /** Keyset cursor: return tasks with id < cursor (newest first). */
  cursor?: string;
  limit: number;
}

export interface TaskPage {
  tasks: Task[];
  /** Pass as `cursor` for the next page; null on the last page. */
  nextCursor: string | null;
}

/** A claimed attempt, ready to push to the worker. */
export interface Claim {
  task: Task;
  attempt: Attempt;
}

export type ReportCheck = { ok: true; attempt: Attempt } | { ok: false; reason: string };

export interface AttemptEndResult {
  task: Task;
  attempt: Attempt;
}

export interface CancelResult {
  task: Task;
  /** The running attempt the worker must stop, if any. */
  runningAttempt: Attempt | null;
}

export interface WorkerRecord {
  id: string;
  hostname: string;
  slots: number;
  labels: Record<string, string>;
  connectedAt: number;
  lastSeenAt: number;
  state: 'connected' | 'disconnected';
}

export interface NewLogChunk {
  seq: number;
  stream: 'stdout' | 'stderr';
  data: Buffer;
}

/**
 * What the store tells every server attached to it, after the change is
 * committed. PostgreSQL: NOTIFY to every LISTENing server, this one included;
 * `cancel` inside the changing transaction (sent if and only if it commits),
 * the frequent hints `wake` and `task` right after the commit (a crash in
 * between loses the hint; the one-second sweeps cover it). SQLite: emitted in
 * this process after the commit (one server per file).
 */
export type StoreSignal =
  /** A task became waiting (submitted, backoff over, requeued, retried): dispatch. */
  | { kind: 'wake' }
  /** A task changed state or has new output: wake its log followers. */
  | { kind: 'task'; taskId: string }
  /** A running attempt must stop (its task was cancelled): the server holding its worker sends `cancel`. */
  | { kind: 'cancel'; taskId: string; attemptId: number }
  /** An admin drained a worker: the server holding its connection sends `drain`. */
  | { kind: 'drain'; workerId: string; reason: string };

export interface StoreCapabilities {
  /** Several servers may share this store (PostgreSQL); false for SQLite (one server per file). */
  multiServer: boolean;
  /**
   * Writes requested together share one transaction (SQLite's group commit), so
   * issuing many claims at once costs about one commit. False: each write is its
   * own transaction and round trips (PostgreSQL).
   */
  groupCommit: boolean;
}

export interface Store {
  readonly capabilities: StoreCapabilities;

  /**
   * Registers a listener for signals (see StoreSignal); returns the unsubscribe
   * function. Signals are hints: listeners re-read the store, and a periodic
   * sweep covers a signal lost while a connection was down.
   *
   * Which changes signal what (both stores; checked by the contract suite):
   *   createTask, retryTask, promoteDue (each id)  → wake + task
   *   endAttempt                                   → task (+ wake when the task is back to waiting)
   *   claimNext, appendLogs (when stored)          → task
   *   cancelTask                                   → task (+ cancel when an attempt was running)
   *   requestDrain                                 → drain
   */
  onSignal(listener: (signal: StoreSignal) => void): () => void;

  /**
   * Singleton duties (the lease sweeper, later cron): takes or renews the lease
   * `name` for `holder` until now + ttlMs, in one atomic statement that
   * succeeds only if the lease is free, expired, or already this holder's.
   * True while `holder` leads.
   */
  acquireLeadership(name: string, holder: string, now: number, ttlMs: number): Promise<boolean>;

  /** Applies numbered migrations not yet applied. Idempotent. */
  migrate(): Promise<void>;
  close(): Promise<void>;

  // tokens
  createToken(t: Omit<TokenRecord, 'revokedAt' | 'lastUsedAt'>): Promise<TokenRecord>;
  getToken(id: string): Promise<TokenRecord | null>;
  listTokens(): Promise<TokenRecord[]>;
  /** False when no such token or already revoked. */
  revokeToken(id: string, now: number): Promise<boolean>;
  countTokens(): Promise<number>;

  // tasks
  /** Stores a new task and releases it (ready → waiting), writing both events, atomically. */
  createTask(id: string, owner: string, spec: TaskSpec, actor: string, now: number): Promise<Task>;
  getTask(id: string): Promise<Task | null>;
  listTasks(filter: TaskFilter): Promise<TaskPage>;
  listAttempts(taskId: string): Promise<Attempt[]>;
  getAttempt(attemptId: number): Promise<Attempt | null>;
  listEvents(taskId: string): Promise<TaskEvent[]>;

  /**
   * Claims the best waiting task (highest priority, then oldest) for a worker:
   * waiting → running, a new attempt with a fresh lease, one event. Atomic; two
   * concurrent callers never claim the same task. Null when nothing is waiting.
   */
  claimNext(workerId: string, now: number, leaseMs: number): Promise<Claim | null>;

  /** Is `attemptId` with this token the task's current, running attempt? Read-only. */
  checkReport(attemptId: number, fencingToken: number): Promise<ReportCheck>;

  /**
   * Ends an attempt and moves its task per core/attempt-end.ts, atomically and
   * fenced: null (and no change) if the attempt is no longer running.
   */
  endAttempt(attemptId: number, fencingToken: number, end: Omit<AttemptEndInput, 'attempt'>, actor: string, now: number): Promise<AttemptEndResult | null>;

  /** Records a rejected (fenced) report as an event on the task; no-op for an attempt id that never existed. */
  recordFencedReport(attemptId: number, kind: string, actor: string, now: number): Promise<void>;

  /** Extends the leases of the worker's running attempts to now + leaseMs. Returns how many. */
  renewLeases(workerId: string, attemptIds: number[], now: number, leaseMs: number): Promise<number>;

  /** Running attempts whose lease ended before `now`; each is ended as `lost` by the caller. */
  expiredAttempts(now: number): Promise<Attempt[]>;

  /** retrying → waiting for every task whose backoff ended by `now`. Returns the task ids. */
  promoteDue(now: number): Promise<string[]>;

  /** Earliest runAfter among retrying tasks, for the scheduler's timer. */
  nextDueAt(): Promise<number | null>;

  /** Cancels a non-terminal task. Throws ConflictError if it is terminal. */
  cancelTask(id: string, actor: string, now: number): Promise<CancelResult>;

  /**
   * failed|cancelled → waiting with a fresh retry budget. Throws ConflictError otherwise.
   * An attempt of a task cancelled while running that is still marked running is ended
   * as `cancelled` here, so it is fenced and never returned by expiredAttempts.
   */
  retryTask(id: string, actor: string, now: number): Promise<Task>;

  // logs
  /**
   * Appends chunks of the attempt's output; false (nothing written) if the attempt is not current.
   * A chunk whose (attempt, seq) is already stored is skipped, so a re-send after a reconnect is harmless.
   */
  appendLogs(attemptId: number, fencingToken: number, chunks: NewLogChunk[], now: number): Promise<boolean>;
  /** Chunks of the task with id > afterId in order, at most `limit`. */
  readLogs(taskId: string, afterId: number, limit: number, attempt?: number): Promise<LogChunk[]>;

  // workers
  upsertWorker(w: Omit<WorkerRecord, 'state'>): Promise<void>;
  markWorkerDisconnected(id: string, now: number): Promise<void>;
  /** Signals `drain` for a known worker (to whichever server holds it); false if no such worker. */
  requestDrain(workerId: string, reason: string): Promise<boolean>;
  listWorkers(): Promise<WorkerRecord[]>;
}

export type { AttemptOutcome };
