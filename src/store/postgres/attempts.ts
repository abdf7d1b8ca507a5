/**
 * AttemptStore on PostgreSQL (store/attempts.ts is the contract): the claim,
 * fenced reports and ends, and leases.
 *
 * Leases run on the database's clock (sql.ts DB_NOW_MS): the claim's lease,
 * its renewals, the sweeper's expiry test and the guard of the sweeper's end
 * all read clock_timestamp() on the PostgreSQL server, and ignore the `now`
 * the calling server passes (which still dates events and other columns).
 * Servers whose clocks disagree therefore agree on every lease.
 */
import type { AttemptEndInput } from '../../core/attempt-end.js';
import { planAttemptEnd } from '../../core/attempt-end.js';
import { checkFence } from '../../core/fence.js';
import { newFencingToken } from '../../core/ids.js';
import type { StopOrder } from '../../core/protocol.js';
import type { Attempt } from '../../core/task.js';
import { assertTransition } from '../../core/task-state.js';
import type { AttemptEndResult, AttemptStore, Claim, ClaimingWorker, EndGuard, RenewResult, ReportCheck } from '../attempts.js';
import { attemptFromRow, taskFromRow, type AttemptRow, type TaskRow } from '../rows.js';
import type { Db } from './db.js';
import { fence, readFenced } from './fence.js';
import { checkLimit, DB_NOW_MS, SCHEDULER_ACTOR } from './sql.js';

export function postgresAttempts(db: Db): AttemptStore {
  return {
    /**
     * One statement picks the task, marks it running, creates the attempt and
     * writes the event (data-modifying CTEs; the attempt id is drawn from its
     * sequence up front so the task row is updated only once). It runs in
     * autocommit (Db.single): two round trips fewer than BEGIN/COMMIT, and a
     * claim whose result was lost with its connection leaves an attempt no
     * worker has, which its lease ends as lost.
     *
     * Race-free across any number of servers: `next` takes the row lock of the
     * task it picks (FOR NO KEY UPDATE) and holds it until COMMIT. A concurrent
     * claimer SKIPs rows locked by another claimer instead of waiting; if it
     * reaches a row that another claimer has already committed, PostgreSQL
     * re-evaluates `state = 'waiting'` on the newest version of the row once
     * the lock is granted (READ COMMITTED re-check), finds it running and moves
     * on to the next row. So a task goes from waiting to running in exactly one
     * transaction.
     *
     * The queue is read in index order and the first row taken, no sort:
     *   - `free`: tasks that run anywhere, the head of tasks_queue_free;
     *   - `placed` (only for a worker with labels): the first task whose
     *     `requires` ⊆ the worker's labels (core/placement.ts, as jsonb
     *     containment), read from tasks_queue_placed, which holds only tasks
     *     with requirements;
     *   the better of the two (priority, then age) is claimed; the other
     *   candidate's row lock ends with the statement. The containment test
     *   is a filter the planner cannot estimate before ANALYZE, so `placed`
     *   may sort the waiting tasks that have requirements: its cost grows
     *   with those, never with the whole queue.
     *   A task retried while its old attempt still runs is `ready`, not
     *   waiting, until that attempt ends (core/cancel-plan.ts).
     */
    async claimNext(worker: ClaimingWorker, now: number, leaseMs: number): Promise<Claim | null> {
      assertTransition('waiting', 'running', 'claimed');
      return db.single(async (tx) => {
        const r = await tx.query<{ task: TaskRow; attempt: AttemptRow }>(
          `WITH free AS (
             SELECT id, priority FROM tasks
             WHERE state = 'waiting' AND requires = '{}'
             ORDER BY priority DESC, id ASC
             LIMIT 1
             FOR NO KEY UPDATE SKIP LOCKED
           ), placed AS (
             SELECT id, priority FROM tasks
             WHERE $7::boolean AND state = 'waiting' AND requires <> '{}' AND requires::jsonb <@ $5::jsonb
             ORDER BY priority DESC, id ASC
             LIMIT 1
             FOR NO KEY UPDATE SKIP LOCKED
           ), next AS (
             SELECT id FROM (SELECT * FROM free UNION ALL SELECT * FROM placed) c
             ORDER BY priority DESC, id ASC
             LIMIT 1
           ), claimed AS (
             UPDATE tasks t
             SET state = 'running', attempts = t.attempts + 1, current_attempt_id = nextval('attempts_id_seq'), updated_at = $1::bigint
             FROM next
             WHERE t.id = next.id AND t.state = 'waiting'
             RETURNING t.*
           ), attempt AS (
             INSERT INTO attempts (id, task_id, number, worker_id, fencing_token, state, started_at, lease_expires_at)
             SELECT current_attempt_id, id, attempts, $2::text, $6::text, 'running', $1::bigint, ${DB_NOW_MS} + $3::bigint FROM claimed
             RETURNING *
           ), event AS (
             INSERT INTO task_events (task_id, from_state, to_state, reason, actor, at, detail)
             SELECT id, 'waiting', 'running', 'claimed', $4::text, $1::bigint,
                    json_build_object('attemptId', current_attempt_id, 'attempt', attempts, 'workerId', $2::text)::text
             FROM claimed
           )
           SELECT to_json(c) AS task, to_json(a) AS attempt FROM claimed c JOIN attempt a ON a.id = c.current_attempt_id`,
          [now, worker.id, leaseMs, SCHEDULER_ACTOR, JSON.stringify(worker.labels), newFencingToken(), Object.keys(worker.labels).length > 0],
        );
        const row = r.rows[0];
        if (!row) return null;
        tx.signal({ kind: 'task', taskId: row.task.id });
        return { task: taskFromRow(row.task), attempt: attemptFromRow(row.attempt) };
      });
    },

    async checkReport(attemptId: number, fencingToken: string, workerId: string): Promise<ReportCheck> {
      return db.read(async (q) => {
        const rows = await readFenced(q, attemptId);
        const c = fence(rows, fencingToken, workerId);
        return c.ok ? { ok: true, attempt: attemptFromRow(rows!.attempt), task: taskFromRow(rows!.task) } : c;
      });
    },

    /**
     * Fenced and guarded in one transaction:
     *   1. the task row and the attempt row are locked together and read: a
     *      locked row comes back in its newest committed version, so two
     *      servers ending one attempt queue here and the second finds it
     *      ended; a heartbeat that renewed the lease before the lock was
     *      granted is seen. The lease is compared with the database's clock in
     *      the same statement (that reading is taken no later than the lock is
     *      granted, so an error can only make the sweeper wait one more sweep);
     *   2. the fence (core/fence.ts) and, for the sweeper, `leaseExpired` are
     *      checked: while we hold the attempt's lock no renewal can change it
     *      (renewLeases' UPDATE waits for it, then finds the attempt ended);
     *   3. one statement applies the attempt's end and planAttemptEnd's plan.
     */
    async endAttempt(
      attemptId: number,
      fencingToken: string,
      end: Omit<AttemptEndInput, 'attempt'>,
      actor: string,
      now: number,
      guard: EndGuard = {},
    ): Promise<AttemptEndResult | null> {
      if (!Number.isSafeInteger(attemptId)) return null;
      return db.write(async (tx) => {
        const cur = await readFenced(tx, attemptId, { lock: 'both', leaseExpired: guard.leaseExpired === true });
        if (!fence(cur, fencingToken, guard.workerId).ok) return null;
        if (guard.leaseExpired && cur!.lease_expired !== true) return null;
        const { task: taskRow, attempt: attemptRow } = cur!;
        // Planned before any write: if the rules reject the end, nothing has changed.
        const plan = planAttemptEnd(taskFromRow(taskRow), { ...end, attempt: attemptRow.number }, now);
        const detail = plan.event ? JSON.stringify({ attemptId, ...plan.event.detail }) : null;
        // The task row is written only when the plan changes it: a task a retry
        // moved on (plan state waiting, no event) keeps its row as it is.
        const touchTask = plan.event !== null || plan.result !== null;
        // coalesce: a null plan.result keeps the stored one, so a result is recorded exactly once.
        const r = (
          await tx.query<{ task: TaskRow | null; attempt: AttemptRow }>(
            `WITH a AS (
               UPDATE attempts SET state = $2, ended_at = $3, exit_code = $4, signal = $5, error = $6, duration_ms = $7
               WHERE id = $1 AND state = 'running' RETURNING *
             ), t AS (
               UPDATE tasks SET state = $9, retries_used = $10, lost_count = $11, run_after = $12, result = coalesce($13, result), updated_at = $3
               WHERE id = $8 AND $18::boolean RETURNING *
             ), e AS (
               INSERT INTO task_events (task_id, from_state, to_state, reason, actor, at, detail)
               SELECT $8, $14::text, $9, $15::text, $16::text, $3, $17::text WHERE $15::text IS NOT NULL
             )
             SELECT (SELECT to_json(t) FROM t) AS task, to_json(a) AS attempt FROM a`,
            [
              attemptId,
              end.outcome,
              now,
              end.exitCode,
              end.signal,
              end.error,
              end.durationMs,
              taskRow.id,
              plan.state,
              plan.retriesUsed,
              plan.lostCount,
              plan.runAfter,
              plan.result === null ? null : JSON.stringify(plan.result),
              plan.event?.from ?? null,
              plan.event?.reason ?? null,
              actor,
              detail,
              touchTask,
            ],
          )
        ).rows[0]!;
        tx.signal({ kind: 'task', taskId: taskRow.id });
        if (plan.state === 'waiting') tx.signal({ kind: 'wake' });
        return { task: taskFromRow(r.task ?? taskRow), attempt: attemptFromRow(r.attempt) };
      });
    },

    /**
     * An event (from = to = the task's state) that says a report was refused.
     * An attempt id that never existed has no task to record it on: nothing is written.
     */
    async recordFencedReport(attemptId: number, kind: string, actor: string, now: number): Promise<void> {
      if (!Number.isSafeInteger(attemptId)) return;
      await db.write(async (tx) => {
        await tx.query(
          `INSERT INTO task_events (task_id, from_state, to_state, reason, actor, at, detail)
           SELECT t.id, t.state, t.state, 'fenced_report', $2, $3, $4 FROM attempts a JOIN tasks t ON t.id = a.task_id WHERE a.id = $1`,
          [attemptId, actor, now, JSON.stringify({ attemptId, kind })],
        );
      });
    },

    /**
     * One statement renews and reads what the stop list needs. The UPDATE
     * locks each attempt it renews; one being ended concurrently (endAttempt
     * holds its lock) is waited for, then re-checked on its newest version,
     * found ended and not renewed: a heartbeat racing the sweeper either
     * renews first (the sweeper's guard then sees the new lease and ends
     * nothing) or finds the attempt ended and renews nothing.
     *
     * The rows of the listed attempts come from the statement's snapshot, and
     * the RETURNING of the renewal from the newest version; so a listed
     * attempt the snapshot saw as this worker's, running and current that was
     * not renewed has ended meanwhile (stop, report false), and a stop reason
     * set by a cancel that committed just before the renewal is seen.
     */
    async renewLeases(workerId: string, attemptIds: number[], _now: number, leaseMs: number): Promise<RenewResult> {
      const stop: StopOrder[] = [];
      const ids: number[] = [];
      for (const id of new Set(attemptIds)) {
        if (Number.isSafeInteger(id)) ids.push(id);
        else stop.push({ attemptId: id, reason: 'unknown_attempt', report: false });
      }
      // Sorted: concurrent renewals lock rows in the same order.
      ids.sort((a, b) => a - b);
      if (ids.length === 0) return { renewed: [], stop };
      const rows = await db.write(
        async (tx) =>
          (
            await tx.query<{ id: number; attempt: AttemptRow | null; current_attempt_id: number | null; renewed: boolean; stop_reason: string | null }>(
              `WITH renewed AS (
                 UPDATE attempts SET lease_expires_at = ${DB_NOW_MS} + $3::bigint
                 WHERE id IN (SELECT id FROM attempts WHERE worker_id = $1 AND state = 'running' AND id = ANY($2::bigint[]) ORDER BY id FOR NO KEY UPDATE)
                   AND worker_id = $1 AND state = 'running'
                 RETURNING id, stop_reason
               )
               SELECT u.id, to_json(a) AS attempt, t.current_attempt_id, r.id IS NOT NULL AS renewed, r.stop_reason
               FROM unnest($2::bigint[]) AS u(id)
               LEFT JOIN attempts a ON a.id = u.id
               LEFT JOIN tasks t ON t.id = a.task_id
               LEFT JOIN renewed r ON r.id = u.id
               ORDER BY u.id`,
              [workerId, ids, leaseMs],
            )
          ).rows,
      );
      const renewed: number[] = [];
      for (const row of rows) {
        if (row.renewed) renewed.push(row.id);
        // The fence without the token (a heartbeat carries none): whose attempt, running, current.
        const attempt = row.attempt ? attemptFromRow(row.attempt) : null;
        const c = checkFence(attempt, row.current_attempt_id, { fencingToken: attempt?.fencingToken ?? '', workerId });
        if (!c.ok) stop.push({ attemptId: row.id, reason: c.reason, report: false });
        else if (!row.renewed) stop.push({ attemptId: row.id, reason: 'attempt_ended', report: false });
        else if (row.stop_reason !== null) stop.push({ attemptId: row.id, reason: row.stop_reason, report: true });
      }
      return { renewed, stop };
    },

    /**
     * Oldest lease first, at most `limit`. The bound is the database's clock,
     * read once (DB_NOW_MS is an InitPlan), so the attempts_running_lease
     * index range-scans it. Each is then ended with guard leaseExpired, which
     * checks again under the row lock.
     */
    async expiredAttempts(_now: number, limit: number): Promise<Attempt[]> {
      checkLimit('limit', limit);
      return db.read(async (q) =>
        (
          await q.query<AttemptRow>(`SELECT * FROM attempts WHERE state = 'running' AND lease_expires_at < ${DB_NOW_MS} ORDER BY lease_expires_at, id LIMIT $1`, [
            limit,
          ])
        ).rows.map(attemptFromRow),
      );
    },
  };
}
