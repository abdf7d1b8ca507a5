/**
 * The store: the one data system (design.md: the datastore is also the queue).
 * SQLite and PostgreSQL implement this interface and pass one contract suite
 * (test/store/contract.ts). Every method that changes a task is atomic: one
 * statement or one transaction, with a guard that makes a race impossible.
 * State changes follow core/task-state.ts and write one event row each.
 */
import type { AttemptStore } from './attempts.js';
import type { DagStore } from './dags.js';
import type { FeedStore } from './feed.js';
import type { TaskViewStore } from './task-views.js';
import type { WebSessionStore } from './web-sessions.js';
import type { LeadershipStore } from './leadership.js';
import type { LogStore } from './logs.js';
import type { ScheduleStore } from './schedules.js';
import type { StoreSignal } from './signals.js';
import type { TaskStore } from './tasks.js';
import type { TokenStore } from './tokens.js';
import type { WorkerStore } from './workers.js';

export type { AttemptEndResult, Claim, ClaimingWorker, EndGuard, RenewResult, ReportCheck } from './attempts.js';
export type { LogStore, NewLogChunk } from './logs.js';
export type { StoreSignal } from './signals.js';
export type { CancelResult, CreateManyResult, CreateResult, Idempotency, NewTask, TaskFilter, TaskPage } from './tasks.js';
export type { Role, TokenRecord } from './tokens.js';
export type { WorkerRecord } from './workers.js';
export type { Change, ChangePage, ChangeTopic, FeedStore } from './feed.js';
export type { MinuteStat, RunningAttemptView, TaskSummary, TaskSummaryPage, TaskViewStore } from './task-views.js';
export type { WebSessionRecord, WebSessionStore } from './web-sessions.js';
export type { FireLeader, FireRequest, FireResult, ScheduleFilter, SchedulePage, ScheduleRecord, ScheduleRun, ScheduleSpec, ScheduleStore, SkipReason } from './schedules.js';
export type { AttemptOutcome } from '../core/task.js';
export type { DagCancelResult, DagFilter, DagRecord, DagRunFilter, DagRunPage, DagRunRecord, DagRunStep, DagStore, DagSummary, StartDagRun } from './dags.js';

export interface StoreCapabilities {
  /** Several servers may share this store (PostgreSQL); false for SQLite (one server per file). */
  multiServer: boolean;
  /**
   * Writes requested together share one transaction (SQLite's group commit), so
   * issuing many claims at once costs about one commit. False: each write is its
   * own transaction and round trips (PostgreSQL).
   */
  groupCommit: boolean;
  /**
   * Whose clock lease arithmetic uses (store/attempts.ts): 'caller' (SQLite:
   * the `now` passed in) or 'database' (PostgreSQL: the server's `now()`).
   */
  leaseClock: 'caller' | 'database';
}

/**
 * The whole store: one interface per concern (tokens.ts, tasks.ts,
 * attempts.ts, logs.ts, workers.ts, leadership.ts, feed.ts, task-views.ts,
 * web-sessions.ts, schedules.ts, dags.ts), each implemented once per
 * backend in its own file (sqlite/, postgres/), plus the lifecycle here.
 * Later features (services, artifacts) add their own interface and files.
 */
export interface Store
  extends TokenStore,
    TaskStore,
    AttemptStore,
    LogStore,
    WorkerStore,
    LeadershipStore,
    FeedStore,
    TaskViewStore,
    WebSessionStore,
    ScheduleStore,
    DagStore {
  readonly capabilities: StoreCapabilities;

  /**
   * Registers a listener for signals (see StoreSignal); returns the unsubscribe
   * function. Signals are hints: listeners re-read the store, and a periodic
   * sweep covers a signal lost while a connection was down.
   *
   * Which changes signal what (both stores; checked by the contract suite):
   *   createTask (when created), retryTask, promoteDue (each id)  → wake + task
   *   createTasks (when created)  → wake (once)
   *   fireSchedules / fireSchedule (when it created a task)  → wake (once)
   *   endAttempt      → task (+ wake when the task is, or stays, waiting)
   *   claimNext, appendLogs (when stored)  → task
   *   cancelTask      → task (+ cancel when an attempt was running)
 *   a DAG step released by a run's progress (start, an end, a cancel, a retry) → wake + task; skipped → task
   *   requestDrain    → drain
   */
  onSignal(listener: (signal: StoreSignal) => void): () => void;

  /** Applies numbered migrations not yet applied. Idempotent. */
  migrate(): Promise<void>;
  close(): Promise<void>;
}
