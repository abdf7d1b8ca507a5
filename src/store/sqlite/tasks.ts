/**
 * Tasks on SQLite (store/tasks.ts): submit, read, list, cancel, retry,
 * backoff promotion. Cancel and retry persist the plans of
 * core/cancel-plan.ts; every write is one IMMEDIATE transaction (db.ts), so
 * the rows a plan was made from cannot change before it is stored.
 */
import { planCancel, planRetry } from '../../core/cancel-plan.js';
import { ConflictError, InvalidInputError, NotFoundError } from '../../core/errors.js';
import type { Attempt, Task, TaskEvent, TaskSpec } from '../../core/task.js';
import { assertTransition } from '../../core/task-state.js';
import { attemptFromRow, eventFromRow, taskFromRow, taskSpecParams, type AttemptRow, type EventRow, type TaskRow } from '../rows.js';
import type { CancelResult, CreateOptions, CreateResult, Idempotency, TaskFilter, TaskPage, TaskStore } from '../tasks.js';
import { newWaitingTask, submittedDetail } from '../batch.js';
import type { SqliteDb } from './db.js';
import { attemptRow, checkLimit, insertEvent, runningAttemptOf, SCHEDULER_ACTOR, taskRow } from './records.js';
import { isUniqueViolation } from './sqlite-errors.js';
import { sqliteCreateTasks } from './create-tasks.js';
import { claimIn } from './attempts.js';
import { sqliteTaskListQuery } from './task-views.js';
import { taskPageOf } from '../task-list.js';
import { dagStepRetryConflict } from '../dags.js';
import { progressDagRuns } from './dag-runs.js';

function idempotencyConflict(key: string, taskId: string): ConflictError {
  return new ConflictError(
    `Idempotency-Key "${key}" was already used for a different request (task ${taskId}); repeat that request unchanged to get its task, or use a new key`,
  );
}

/** Stores the plan's stop order on the attempt (it stays running); the updated row. */
function storeStop(d: SqliteDb, stop: { attemptId: number; reason: string }): AttemptRow | undefined {
  return d.q("UPDATE attempts SET stop_reason = ? WHERE id = ? AND state = 'running' RETURNING *").get(stop.reason, stop.attemptId) as AttemptRow | undefined;
}

/**
 * planCancel persisted, inside the caller's write: the task cancelled, its
 * running attempt (if any) given a stop order, one event, the signals. Does
 * not decide a DAG run's progress: cancelTask does that after it, and a DAG
 * run's cancel ends the run itself (sqlite/dags.ts).
 */
export function cancelIn(d: SqliteDb, row: TaskRow, actor: string, now: number): CancelResult {
  const running = runningAttemptOf(d, row);
  const plan = planCancel(taskFromRow(row), running ?? null);
  const task = d.q('UPDATE tasks SET state = ?, run_after = NULL, updated_at = ? WHERE id = ? RETURNING *').get(plan.event.to, now, row.id) as TaskRow;
  const stopped = plan.stop ? storeStop(d, plan.stop) : undefined;
  insertEvent(d, row.id, plan.event.from, plan.event.to, plan.event.reason, actor, now, plan.event.detail);
  d.signal({ kind: 'task', taskId: row.id });
  if (stopped) d.signal({ kind: 'cancel', taskId: row.id, attemptId: stopped.id });
  return { task: taskFromRow(task), runningAttempt: stopped ? attemptFromRow(stopped) : null };
}

/**
 * The due queries (promoteDue, nextDueAt): each a range of a partial index in
 * run_after order, tasks_due (retrying) or tasks_ready_due (ready with a
 * run_after). Named with INDEXED BY (without statistics SQLite's planner
 * prefers tasks_state_id and a sort), the state a literal so that the partial
 * index applies; test/store/query-plans.test.ts checks them.
 */
const DUE_INDEX = { retrying: 'tasks_due', ready: 'tasks_ready_due' } as const;
export const DUE_SQL = {
  /** ?1 now, ?2 limit. */
  due: (state: 'retrying' | 'ready') =>
    `SELECT id, run_after, state FROM tasks INDEXED BY ${DUE_INDEX[state]} WHERE state = '${state}' AND run_after <= ? ORDER BY run_after, id LIMIT +?`,
  next:
    'SELECT min(t) AS t FROM (SELECT min(run_after) AS t FROM tasks INDEXED BY tasks_due WHERE state = \'retrying\'' +
    " UNION ALL SELECT min(run_after) FROM tasks INDEXED BY tasks_ready_due WHERE state = 'ready' AND run_after IS NOT NULL)",
} as const;

export function sqliteTasks(d: SqliteDb): TaskStore {
  return {
    /**
     * With `idem`, the lookup of (owner, key) and the insert are one
     * IMMEDIATE transaction, so two submits with one key cannot both insert;
     * the unique index tasks_owner_idempotency_key backs it up.
     */
    async createTask(id: string, owner: string, spec: TaskSpec, actor: string, now: number, idem?: Idempotency, opts: CreateOptions = {}): Promise<CreateResult> {
      if (idem && (typeof idem.key !== 'string' || idem.key === '')) throw new InvalidInputError('Idempotency-Key', 'must be a non-empty string');
      const runAfter = opts.runAfter ?? null;
      return d.write(() => {
        if (idem) {
          const first = d.q('SELECT * FROM tasks WHERE owner = ? AND idempotency_key = ?').get(owner, idem.key) as TaskRow | undefined;
          if (first) {
            if (first.request_hash !== idem.requestHash) throw idempotencyConflict(idem.key, first.id);
            return { task: taskFromRow(first), created: false };
          }
        }
        assertTransition('ready', 'waiting', 'released');
        // claimFor (CreateOptions): only when nothing else waits, read under the write lock this transaction holds.
        const claimFor = runAfter === null ? opts.claimFor : null;
        const claiming = claimFor ? d.q("SELECT 1 FROM tasks INDEXED BY tasks_queue WHERE state = 'waiting' LIMIT 1").get() === undefined : false;
        try {
          // Stored directly as waiting: both transitions happen in this transaction, so `ready` is never visible.
          // A task to run later stays ready (with run_after) until promoteDue releases it.
          d.q(
            `INSERT INTO tasks (id, owner, state, name, kind, command, args, script, interpreter, env, timeout_ms, cwd,
               max_retries, retry_base_delay_ms, retry_factor, retry_max_delay_ms, priority, labels, requires,
               idempotency_key, request_hash, run_after, created_at, updated_at)
             VALUES (@id, @owner, @state, @name, @kind, @command, @args, @script, @interpreter, @env, @timeout_ms, @cwd,
               @max_retries, @retry_base_delay_ms, @retry_factor, @retry_max_delay_ms, @priority, @labels, @requires,
               @idempotency_key, @request_hash, @run_after, @now, @now)`,
          ).run({
            id,
            owner,
            now,
            state: runAfter === null ? 'waiting' : 'ready',
            run_after: runAfter,
            ...taskSpecParams(spec),
            idempotency_key: idem?.key ?? null,
            request_hash: idem?.requestHash ?? null,
          });
        } catch (e) {
          if (isUniqueViolation(e)) throw new ConflictError(`task ${id} already exists`);
          throw e;
        }
        insertEvent(d, id, null, 'ready', 'submitted', actor, now, submittedDetail(runAfter, opts.detail));
        if (runAfter === null) insertEvent(d, id, 'ready', 'waiting', 'released', actor, now, null);
        // The queue was empty, so the claim's choice is this task, or nothing if the worker's labels do not satisfy its requires.
        const claim = claiming ? (claimIn(d, claimFor!.worker, 1, now, claimFor!.leaseMs)[0] ?? null) : null;
        // `wake` only for a task left waiting (as on PostgreSQL): one claimed here has nothing for a dispatch pass,
        // and that pass would hold the worker's other free slots while it found so, so a submit just after this
        // one would be stored waiting instead of claimed (seen as a flaky e2e/run-task case).
        if (runAfter === null && !claim) d.signal({ kind: 'wake' }, { kind: 'task', taskId: id });
        else d.signal({ kind: 'task', taskId: id });
        if (claim) return { task: claim.task, created: true, claim };
        // Built from what was written, as the claim and the end do (no RETURNING *: reading 35 columns back cost more).
        return { task: newWaitingTask(id, owner, spec, now, runAfter), created: true, claim: null };
      });
    },

    createTasks: sqliteCreateTasks(d),

    async getTask(id: string): Promise<Task | null> {
      return d.read(() => {
        const row = taskRow(d, id);
        return row ? taskFromRow(row) : null;
      });
    },

    /**
     * Newest first (id DESC; ids are ULIDs), keyset by id: the query of
     * task-list.ts (every filter an index range), with all columns.
     */
    async listTasks(filter: TaskFilter): Promise<TaskPage> {
      checkLimit(filter.limit);
      const q = sqliteTaskListQuery(filter, 'tasks');
      return d.read(() => {
        const { items, nextCursor } = taskPageOf((d.q(q.sql).all(...q.params) as TaskRow[]).map(taskFromRow), filter);
        return { tasks: items, nextCursor };
      });
    },

    async listAttempts(taskId: string): Promise<Attempt[]> {
      return d.read(() => (d.q('SELECT * FROM attempts WHERE task_id = ? ORDER BY number').all(taskId) as AttemptRow[]).map(attemptFromRow));
    },

    async getAttempt(attemptId: number): Promise<Attempt | null> {
      return d.read(() => {
        const row = attemptRow(d, attemptId);
        return row ? attemptFromRow(row) : null;
      });
    },

    async listEvents(taskId: string): Promise<TaskEvent[]> {
      return d.read(() => (d.q('SELECT * FROM task_events WHERE task_id = ? ORDER BY id').all(taskId) as EventRow[]).map(eventFromRow));
    },

    /**
     * The task becomes cancelled at once; its running attempt (if any) gets
     * the stop order and stays running until its worker reports the end or
     * its lease expires (attempts.ts).
     */
    async cancelTask(id: string, actor: string, now: number): Promise<CancelResult> {
      return d.write(() => {
        const row = taskRow(d, id);
        if (!row) throw new NotFoundError('task', id);
        const res = cancelIn(d, row, actor, now);
        // A DAG step: its dependents are decided in this transaction too.
        if (row.dag_run_id !== null) progressDagRuns(d, [{ runId: row.dag_run_id, taskId: id, step: row.dag_step!, state: 'cancelled' }], now);
        return res;
      });
    },

    /**
     * failed|cancelled → waiting with a fresh budget. An old attempt still
     * running is not ended: it keeps its stop order, and claimNext skips the
     * task until that attempt has ended, so two runs never overlap.
     */
    async retryTask(id: string, actor: string, now: number): Promise<Task> {
      return d.write(() => {
        const row = taskRow(d, id);
        if (!row) throw new NotFoundError('task', id);
        if (row.dag_run_id !== null) throw dagStepRetryConflict(row);
        const running = runningAttemptOf(d, row);
        const plan = planRetry(taskFromRow(row), running ? { id: running.id, stopReason: running.stop_reason } : null);
        const task = d
          .q('UPDATE tasks SET state = ?, retries_used = 0, lost_count = 0, result = NULL, run_after = NULL, updated_at = ? WHERE id = ? RETURNING *')
          .get(plan.event.to, now, id) as TaskRow;
        if (plan.stop) storeStop(d, plan.stop);
        insertEvent(d, id, plan.event.from, plan.event.to, plan.event.reason, actor, now, plan.event.detail);
        d.signal({ kind: 'wake' }, { kind: 'task', taskId: id });
        // A stop order that is new (the attempt had none) must reach its worker now.
        if (plan.stop && running && running.stop_reason === null) d.signal({ kind: 'cancel', taskId: id, attemptId: running.id });
        return taskFromRow(task);
      });
    },

    /**
     * Retrying and scheduled ready tasks are ranges of two partial indexes, tasks_due and
     * tasks_ready_due (run_after, id; schema 13): each read in run_after order (at most `limit` of each), promoted in due order.
     */
    async promoteDue(now: number, limit: number): Promise<string[]> {
      checkLimit(limit);
      return d.write(() => {
        const dueIn = (state: 'retrying' | 'ready') => d.q(DUE_SQL.due(state)).all(now, limit) as Array<Pick<TaskRow, 'id' | 'run_after' | 'state'>>;
        const due = [...dueIn('retrying'), ...dueIn('ready')]
          .sort((a, b) => a.run_after! - b.run_after! || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
        const promote = d.q("UPDATE tasks SET state = 'waiting', run_after = NULL, updated_at = ? WHERE id = ? AND state = ?");
        for (const t of due) {
          if (t.state === 'retrying') {
            assertTransition('retrying', 'waiting', 'backoff_elapsed');
            promote.run(now, t.id, 'retrying');
            insertEvent(d, t.id, 'retrying', 'waiting', 'backoff_elapsed', SCHEDULER_ACTOR, now, { runAfter: t.run_after });
          } else {
            assertTransition('ready', 'waiting', 'released');
            promote.run(now, t.id, 'ready');
            insertEvent(d, t.id, 'ready', 'waiting', 'released', SCHEDULER_ACTOR, now, { scheduled: true, runAfter: t.run_after });
          }
          d.signal({ kind: 'wake' }, { kind: 'task', taskId: t.id });
        }
        return due.map((t) => t.id);
      });
    },

    async nextDueAt(): Promise<number | null> {
      return d.read(() => (d.q(DUE_SQL.next).get() as { t: number | null }).t);
    },
  };
}
