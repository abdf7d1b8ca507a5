/** Tasks: submit, read, list, cancel, retry, backoff promotion. */
import type { Attempt, Task, TaskEvent, TaskSpec } from '../core/task.js';
import type { TaskState } from '../core/task-state.js';
import type { NewTask } from './batch.js';
import type { Claim, ClaimingWorker } from './attempts.js';

export type { NewTask } from './batch.js';

export interface TaskFilter {
  state?: TaskState;
  namePrefix?: string;
  owner?: string;
  /**
   * Inclusive: createdAt >= createdAfter. Task ids are ULIDs of their
   * createdAt (core/ids.ts newTaskId), so the stores turn a time range into an
   * id range too and every filter is an index range in id order.
   */
  createdAfter?: number;
  /** Exclusive: createdAt < createdBefore (half-open, so adjacent ranges do not overlap). */
  createdBefore?: number;
  /** Ids starting with this (upper-case Crockford base32, 1..26 characters): search by id. */
  idPrefix?: string;
  /** Keyset cursor: the nextCursor of the page before (order created: tasks with id < cursor). */
  cursor?: string;
  /**
   * `created` (default): newest created first (ORDER BY id DESC). `ended`:
   * newest end first, for `state` failed or cancelled only (task-list.ts
   * ENDED_ORDER_STATES; their indexes); its cursor is "<updatedAt>.<id>".
   */
  order?: 'created' | 'ended';
  /** A schedule's runs (tasks.schedule_id, fired or run by hand): the tasks_schedule_id range (migration 8). */
  scheduleId?: string;
  limit: number;
}

export interface TaskPage {
  tasks: Task[];
  /** Pass as `cursor` for the next page; null on the last page. */
  nextCursor: string | null;
}

/**
 * An idempotent submit: (owner, key) is unique in the store. `requestHash`
 * identifies the request body, so the same key with a different body is a
 * conflict rather than a silent return of the first task.
 */
export interface Idempotency {
  key: string;
  requestHash: string;
}

/** How a new task starts (createTask's and createTasks' options). */
export interface CreateOptions {
  /**
   * Run later: the task is stored `ready` with this runAfter (epoch ms) and
   * only the `submitted` event (detail { runAfter }); promoteDue releases it
   * (ready → waiting, `released`, detail { scheduled: true, runAfter }) once
   * it is due. Null or absent: released at once, as before.
   */
  runAfter?: number | null;
  /** Merged into the `submitted` event's detail, e.g. { rerunOf: <task id> }. */
  detail?: Record<string, unknown> | null;
  /**
   * createTask only, with runAfter null: claim the new task for this worker in
   * the same atomic write when no other task is waiting and the worker's
   * labels satisfy its requires (core/placement.ts), exactly as claimMany
   * would have a moment later (waiting → running, event `claimed`, a new
   * attempt with its fencing token and lease). Otherwise the task is stored
   * waiting, as without it. The caller holds a free slot of that worker for
   * it (scheduler.ts reserveForSubmit) and sends the assignment.
   * Why: on an idle system the submit and the claim were two commits in a
   * row, each with its WAL flush, before the agent heard of the task
   * (issue 9, submit → process started).
   */
  claimFor?: { worker: ClaimingWorker; leaseMs: number } | null;
}

export interface CreateResult {
  /** As stored: `running` when `claim` is set. */
  task: Task;
  /** False: the idempotency key was seen before and this is the task it made then. */
  created: boolean;
  /** CreateOptions.claimFor took effect: the new task's claim (task as above, and its attempt). */
  claim?: Claim | null;
}

export interface CreateManyResult {
  /** In the order given. */
  tasks: Task[];
  /** False: the batch's idempotency key was seen before and these are the tasks it made then. */
  created: boolean;
}

export interface CancelResult {
  task: Task;
  /** The running attempt the worker must stop, if any (it now has a stop reason). */
  runningAttempt: Attempt | null;
}

export interface TaskStore {
  /**
   * Stores a new task and releases it (ready → waiting), writing both events,
   * atomically. With `idem`, a second call with the same owner and key
   * returns the first task (created: false) and writes nothing; the same key
   * with another requestHash throws ConflictError.
   */
  createTask(id: string, owner: string, spec: TaskSpec, actor: string, now: number, idem?: Idempotency, opts?: CreateOptions): Promise<CreateResult>;
  /**
   * Stores 1..MAX_BATCH (store/batch.ts) new tasks of one owner and releases
   * them, as createTask does for each (the same rows, the same two events,
   * the same feed rows and counters), all in one transaction: every task is
   * stored or none is. A taken id throws ConflictError and stores nothing;
   * an empty or oversized batch throws InvalidInputError naming `tasks`.
   * With `idem` (the batch's key and the hash of the whole batch), item i is
   * stored under the key batchItemKey(idem.key, i): a second call with the
   * same owner, key and hash returns the first call's tasks in order
   * (created: false) and writes nothing; the key with another hash or
   * another number of items throws ConflictError. Signals one `wake` (no
   * `task` signals: nobody can be following a task that did not exist).
   * An item with `runAfter` is stored `ready` to run later, as createTask's
   * CreateOptions.runAfter says.
   */
  createTasks(owner: string, tasks: readonly NewTask[], actor: string, now: number, idem?: Idempotency): Promise<CreateManyResult>;
  getTask(id: string): Promise<Task | null>;
  listTasks(filter: TaskFilter): Promise<TaskPage>;
  listAttempts(taskId: string): Promise<Attempt[]>;
  getAttempt(attemptId: number): Promise<Attempt | null>;
  listEvents(taskId: string): Promise<TaskEvent[]>;

  /** Cancels a non-terminal task per core/cancel-plan.ts planCancel. Throws ConflictError if it is terminal. */
  cancelTask(id: string, actor: string, now: number): Promise<CancelResult>;

  /**
   * failed|cancelled → waiting with a fresh retry budget, per planRetry. An
   * old attempt still running keeps its stop reason and is not ended here:
   * claimNext skips the task until that attempt ends. Throws ConflictError otherwise.
   */
  retryTask(id: string, actor: string, now: number): Promise<Task>;

  /**
   * For at most `limit` tasks of each kind due by `now` (runAfter <= now, earliest first):
   * retrying → waiting (`backoff_elapsed`, detail { runAfter }) and scheduled
   * ready → waiting (`released`, detail { scheduled: true, runAfter }).
   * Returns their ids.
   */
  promoteDue(now: number, limit: number): Promise<string[]>;

  /** Earliest runAfter among retrying and scheduled ready tasks, for the scheduler's timer. */
  nextDueAt(): Promise<number | null>;
}
