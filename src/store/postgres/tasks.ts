/**
 * TaskStore on PostgreSQL (store/tasks.ts is the contract). Cancel and retry
 * persist the plans of core/cancel-plan.ts; every change to a task happens
 * with its row locked (FOR NO KEY UPDATE, see postgres-store.ts), so what the
 * plan was made from stays true until COMMIT.
 */
import { planCancel, planRetry, type PlannedEvent, type StopIntent } from '../../core/cancel-plan.js';
import { ConflictError, NotFoundError } from '../../core/errors.js';
import type { Attempt, Task, TaskEvent, TaskSpec } from '../../core/task.js';
import { assertTransition } from '../../core/task-state.js';
import { attemptFromRow, eventFromRow, taskFromRow, type AttemptRow, type EventRow, type TaskRow } from '../rows.js';
import type { CancelResult, CreateOptions, CreateResult, Idempotency, TaskFilter, TaskPage, TaskStore } from '../tasks.js';
import { newWaitingTask, submittedDetail } from '../batch.js';
import type { Db, Tx } from './db.js';
import { isUniqueViolation } from './pg-errors.js';
import { taskSpecColumns } from './rows.js';
import { checkLimit, SCHEDULER_ACTOR } from './sql.js';
import { postgresCreateTasks } from './create-tasks.js';
import { createTaskSql } from './create-task-sql.js';
import { newFencingToken } from '../../core/ids.js';
import { postgresTaskListQuery } from './task-views.js';
import { taskPageOf } from '../task-list.js';
import { dagStepRetryConflict } from '../dags.js';
import { lockRun, progressDagRuns } from './dag-runs.js';

/**
 * The due queries (promoteDue, nextDueAt): retrying tasks through tasks_due,
 * scheduled ready ones through tasks_ready_due (both partial, in run_after
 * order); test/store/query-plans.test.ts checks them.
 */
export const DUE_SQL = {
  /** $1 now, $2 limit (of each kind). */
  promote: `WITH backoff AS (
               SELECT id, run_after, state FROM tasks
               WHERE state = 'retrying' AND run_after <= $1
               ORDER BY run_after, id
               LIMIT $2
               FOR NO KEY UPDATE SKIP LOCKED
             ), scheduled AS (
               SELECT id, run_after, state FROM tasks
               WHERE state = 'ready' AND run_after IS NOT NULL AND run_after <= $1
               ORDER BY run_after, id
               LIMIT $2
               FOR NO KEY UPDATE SKIP LOCKED
             ), due AS (
               SELECT * FROM backoff UNION ALL SELECT * FROM scheduled
             )
             UPDATE tasks t SET state = 'waiting', run_after = NULL, updated_at = $1
             FROM due WHERE t.id = due.id AND t.state = due.state
             RETURNING t.id, due.run_after, due.state AS from_state`,
  next: `SELECT least((SELECT min(run_after) FROM tasks WHERE state = 'retrying'),
                  (SELECT min(run_after) FROM tasks WHERE state = 'ready' AND run_after IS NOT NULL)) AS t`,
} as const;

export function postgresTasks(db: Db): TaskStore {
  return {
    /**
     * One statement (create-task-sql.ts) writes the task and its two events
     * (submitted, released), and with claimFor its claim when nothing else
     * waits, in autocommit (Db.single): two round trips fewer than BEGIN/COMMIT
     * (measured, issue 9: the PostgreSQL server's CPU went mostly to socket
     * writes, one per statement). A connection lost while the statement is
     * out leaves its outcome unknown (UnavailableError, 503), which is what
     * the Idempotency-Key is for: the CLI sends one and retries with it.
     * With an idempotency key, ON CONFLICT on the unique (owner, key) index
     * makes it race-safe: of two submits with one key, the second waits for
     * the first to commit and then inserts nothing (no task, no events), and
     * the existing row is read in a new statement, whose snapshot sees it.
     */
    async createTask(id: string, owner: string, spec: TaskSpec, actor: string, now: number, idem?: Idempotency, opts: CreateOptions = {}): Promise<CreateResult> {
      assertTransition('ready', 'waiting', 'released');
      const runAfter = opts.runAfter ?? null;
      const claimFor = runAfter === null ? (opts.claimFor ?? null) : null;
      if (claimFor) assertTransition('waiting', 'running', 'claimed');
      const detail = submittedDetail(runAfter, opts.detail);
      const { columns, values } = taskSpecColumns(spec);
      const params = [id, owner, now, actor, idem?.key ?? null, idem?.requestHash ?? null, runAfter, detail === null ? null : JSON.stringify(detail), ...values];
      if (claimFor) params.push(claimFor.worker.id, JSON.stringify(claimFor.worker.labels), newFencingToken(), claimFor.leaseMs, SCHEDULER_ACTOR, JSON.stringify(spec.requires));
      const row = await db.single(async (tx) => {
        let r: { state: string; attempt: AttemptRow | null } | undefined;
        try {
          r = (await tx.query<{ state: string; attempt: AttemptRow | null }>(createTaskSql(columns, claimFor !== null), params)).rows[0];
        } catch (e) {
          if (isUniqueViolation(e)) throw new ConflictError(`task ${id} already exists`);
          throw e;
        }
        if (r) {
          if (runAfter === null && r.state === 'waiting') tx.signal({ kind: 'wake' }, { kind: 'task', taskId: id });
          else tx.signal({ kind: 'task', taskId: id });
        }
        return r;
      });
      // The row is what was just written: built here rather than sent back (RETURNING * cost the
      // parse of 35 columns' description and values at every submit; see the comment above).
      if (row) {
        const task = newWaitingTask(id, owner, spec, now, runAfter);
        if (!row.attempt) return { task, created: true, claim: null };
        const attempt = attemptFromRow(row.attempt);
        const claimed: Task = { ...task, state: 'running', attempts: 1, currentAttemptId: attempt.id };
        return { task: claimed, created: true, claim: { task: claimed, attempt } };
      }
      // Only the idempotency index can have stopped the insert (a taken id throws above).
      const first = await db.read(async (q) => (await q.query<TaskRow>('SELECT * FROM tasks WHERE owner = $1 AND idempotency_key = $2', [owner, idem!.key])).rows[0]);
      if (!first) throw new Error(`createTask: idempotency key ${JSON.stringify(idem!.key)} conflicted but no task holds it`);
      if (first.request_hash !== idem!.requestHash) {
        throw new ConflictError(
          `Idempotency-Key ${JSON.stringify(idem!.key)} was already used for a different request (task ${first.id}); use a new key for a new task`,
        );
      }
      return { task: taskFromRow(first), created: false };
    },

    createTasks: postgresCreateTasks(db),

    async getTask(id: string): Promise<Task | null> {
      return db.read(async (q) => {
        const row = (await q.query<TaskRow>('SELECT * FROM tasks WHERE id = $1', [id])).rows[0];
        return row ? taskFromRow(row) : null;
      });
    },

    /**
     * Newest first (id DESC; ids are ULIDs, compared byte-wise in the "C"
     * collation), keyset by id: the query of task-list.ts (every filter an
     * index range), with all columns.
     */
    async listTasks(filter: TaskFilter): Promise<TaskPage> {
      checkLimit('limit', filter.limit);
      const q = postgresTaskListQuery(filter, 'tasks');
      return db.read(async (c) => {
        const { items, nextCursor } = taskPageOf((await c.query<TaskRow>(q.sql, q.params)).rows.map(taskFromRow), filter);
        return { tasks: items, nextCursor };
      });
    },

    async listAttempts(taskId: string): Promise<Attempt[]> {
      return db.read(async (q) => (await q.query<AttemptRow>('SELECT * FROM attempts WHERE task_id = $1 ORDER BY number', [taskId])).rows.map(attemptFromRow));
    },

    async getAttempt(attemptId: number): Promise<Attempt | null> {
      if (!Number.isSafeInteger(attemptId)) return null;
      return db.read(async (q) => {
        const row = (await q.query<AttemptRow>('SELECT * FROM attempts WHERE id = $1', [attemptId])).rows[0];
        return row ? attemptFromRow(row) : null;
      });
    },

    async listEvents(taskId: string): Promise<TaskEvent[]> {
      return db.read(async (q) => (await q.query<EventRow>('SELECT * FROM task_events WHERE task_id = $1 ORDER BY id', [taskId])).rows.map(eventFromRow));
    },

    /**
     * The task becomes cancelled at once; its running attempt (if any) gets
     * the stop reason and stays running until the worker reports the end
     * (endAttempt then records the result without a second transition) or its
     * lease expires. `cancel` is NOTIFYed inside the transaction (db.ts), so it
     * goes out if and only if the cancel commits; if it is lost anyway, the
     * stored stop reason reaches the worker with its next heartbeat answer.
     */
    async cancelTask(id: string, actor: string, now: number): Promise<CancelResult> {
      return db.write(async (tx) => {
        // A DAG step: its run's row is locked before the task (postgres/dag-runs.ts, lock order),
        // and its dependents are decided in this transaction.
        const head = (await tx.query<{ dag_run_id: string | null; dag_step: string | null }>('SELECT dag_run_id, dag_step FROM tasks WHERE id = $1', [id])).rows[0];
        const runId = head?.dag_run_id ?? null;
        if (runId !== null) await lockRun(tx, runId);
        const res = await cancelLocked(tx, id, actor, now);
        if (runId !== null) await progressDagRuns(tx, [{ runId, taskId: id, step: head!.dag_step!, state: 'cancelled' }], now);
        return res;
      });
    },

    /**
     * failed|cancelled → waiting with a fresh budget. An old attempt that
     * still runs is not ended: it keeps (or gets) its stop reason, and
     * claimNext skips the task until that attempt has ended.
     */
    async retryTask(id: string, actor: string, now: number): Promise<Task> {
      return db.write(async (tx) => {
        const { task, running } = await lockTask(tx, id);
        if (task.dag_run_id !== null) throw dagStepRetryConflict(task);
        const plan = planRetry(taskFromRow(task), running ? { id: running.id, stopReason: running.stop_reason } : null);
        const r = await persistPlan(
          tx,
          id,
          `state = '${plan.event.to}', retries_used = 0, lost_count = 0, result = NULL, run_after = NULL`,
          plan.event,
          plan.stop,
          actor,
          now,
        );
        tx.signal({ kind: 'wake' }, { kind: 'task', taskId: id });
        // A stop order the attempt did not have before (e.g. a failed task whose attempt still runs).
        if (plan.stop && running?.stop_reason === null) tx.signal({ kind: 'cancel', taskId: id, attemptId: plan.stop.attemptId });
        return taskFromRow(r.task);
      });
    },

    /**
     * Locks at most `limit` due tasks (skipping those another transaction
     * holds: another server is promoting or cancelling them) and moves them in
     * one statement; the events follow in due order.
     */
    /**
     * Locks at most `limit` due tasks (skipping those another transaction
     * holds: another server is promoting or cancelling them), retrying ones
     * (tasks_due) and scheduled ready ones (tasks_ready_due), and moves them in
     * one statement; the events follow in due order.
     */
    async promoteDue(now: number, limit: number): Promise<string[]> {
      checkLimit('limit', limit);
      return db.write(async (tx) => {
        assertTransition('retrying', 'waiting', 'backoff_elapsed');
        assertTransition('ready', 'waiting', 'released');
        const promoted = (
          await tx.query<{ id: string; run_after: number; from_state: 'retrying' | 'ready' }>(
            DUE_SQL.promote,
            [now, limit],
          )
        ).rows.sort((a, b) => a.run_after - b.run_after || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
        if (promoted.length === 0) return [];
        await tx.query(
          `INSERT INTO task_events (task_id, from_state, to_state, reason, actor, at, detail)
           SELECT u.id, u.f, 'waiting', CASE WHEN u.f = 'ready' THEN 'released' ELSE 'backoff_elapsed' END, $1, $2, u.detail
           FROM unnest($3::text[], $4::text[], $5::text[]) WITH ORDINALITY AS u(id, detail, f, n) ORDER BY u.n`,
          [
            SCHEDULER_ACTOR,
            now,
            promoted.map((p) => p.id),
            promoted.map((p) => JSON.stringify(p.from_state === 'ready' ? { scheduled: true, runAfter: p.run_after } : { runAfter: p.run_after })),
            promoted.map((p) => p.from_state),
          ],
        );
        for (const p of promoted) tx.signal({ kind: 'wake' }, { kind: 'task', taskId: p.id });
        return promoted.map((p) => p.id);
      });
    },

    async nextDueAt(): Promise<number | null> {
      return db.read(async (q) => (await q.query<{ t: number | null }>(DUE_SQL.next)).rows[0]!.t);
    },
  };
}

/**
 * Locks the task row and reads it with its current attempt if that is still
 * running. The attempt is read without a lock of its own: an attempt's state
 * changes only under its task's lock (endAttempt locks both), which we hold.
 */
/**
 * planCancel persisted on the task (locked here), inside the caller's
 * transaction; does not decide a DAG run's progress (the caller does).
 */
export async function cancelLocked(tx: Tx, id: string, actor: string, now: number): Promise<CancelResult> {
  const { task, running } = await lockTask(tx, id);
  const plan = planCancel(taskFromRow(task), running);
  const r = await persistPlan(tx, id, `state = '${plan.event.to}', run_after = NULL`, plan.event, plan.stop, actor, now);
  tx.signal({ kind: 'task', taskId: id });
  if (plan.stop) tx.signal({ kind: 'cancel', taskId: id, attemptId: plan.stop.attemptId });
  return { task: taskFromRow(r.task), runningAttempt: r.stopped ? attemptFromRow(r.stopped) : null };
}

async function lockTask(tx: Tx, id: string): Promise<{ task: TaskRow; running: AttemptRow | null }> {
  const row = (
    await tx.query<{ task: TaskRow; running: AttemptRow | null }>(
      `SELECT to_json(t) AS task, to_json(a) AS running
       FROM tasks t LEFT JOIN attempts a ON a.id = t.current_attempt_id AND a.state = 'running'
       WHERE t.id = $1 FOR NO KEY UPDATE OF t`,
      [id],
    )
  ).rows[0];
  if (!row) throw new NotFoundError('task', id);
  return row;
}

/**
 * One statement applies a cancel or retry plan: the task's new columns (`set`,
 * SQL built from the plan, never from input), the attempt's stop reason, and
 * the event.
 */
async function persistPlan(
  tx: Tx,
  taskId: string,
  set: string,
  event: PlannedEvent,
  stop: StopIntent | null,
  actor: string,
  now: number,
): Promise<{ task: TaskRow; stopped: AttemptRow | null }> {
  const r = await tx.query<{ task: TaskRow; stopped: AttemptRow | null }>(
    `WITH t AS (
       UPDATE tasks SET ${set}, updated_at = $2 WHERE id = $1 RETURNING *
     ), a AS (
       UPDATE attempts SET stop_reason = $4::text WHERE id = $3::bigint AND state = 'running' RETURNING *
     ), e AS (
       INSERT INTO task_events (task_id, from_state, to_state, reason, actor, at, detail)
       VALUES ($1, $5, $6, $7, $8, $2, $9)
     )
     SELECT to_json(t) AS task, (SELECT to_json(a) FROM a) AS stopped FROM t`,
    [taskId, now, stop?.attemptId ?? null, stop?.reason ?? null, event.from, event.to, event.reason, actor, event.detail === null ? null : JSON.stringify(event.detail)],
  );
  return r.rows[0]!;
}
