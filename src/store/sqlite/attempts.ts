/**
 * Attempts on SQLite (store/attempts.ts): claims, fenced reports, ends and
 * leases. Leases use the caller's clock (`now`; capabilities.leaseClock
 * 'caller'): one server per file, so one clock. Every write below is one
 * IMMEDIATE transaction (db.ts): a guard read at its start still holds when
 * it writes, which is what makes the claim, the fenced end and the
 * expiry-guarded end race-free.
 */
import { planAttemptEnd, type AttemptEndInput } from '../../core/attempt-end.js';
import { checkFence, type FenceReason } from '../../core/fence.js';
import { FENCING_TOKEN_PATTERN, newFencingToken } from '../../core/ids.js';
import type { StopOrder } from '../../core/protocol.js';
import { attemptStateOf, type Attempt } from '../../core/task.js';
import { assertTransition, isTerminal, type TaskState } from '../../core/task-state.js';
import type { DagChange } from '../dags.js';
import { progressDagRuns } from './dag-runs.js';
import type { AttemptEndResult, AttemptStore, Claim, ClaimingWorker, EndAndClaimResult, EndGuard, EndRequest, RefillClaim, RenewResult, ReportCheck } from '../attempts.js';
import { attemptFromRow, taskFromRow, type AttemptRow, type TaskRow } from '../rows.js';
import type { SqliteDb } from './db.js';
import { attemptRow, checkLimit, insertEvent, SCHEDULER_ACTOR, taskRow } from './records.js';

const TOKEN_RE = new RegExp(FENCING_TOKEN_PATTERN);
/** Never equal to a stored token ('' for pre-v3 attempts, else 32 hex): what a malformed presented token is compared as. */
const NEVER_A_TOKEN = '-';

/**
 * The claim's choice: the first waiting task in the queue index (tasks_queue:
 * priority DESC, id, over waiting tasks only since schema 13; named with
 * INDEXED BY because without statistics SQLite's planner prefers
 * tasks_state_id and a sort, and `state = 'waiting'` stays a literal so that
 * the partial index applies) that the worker's labels satisfy
 * (core/placement.ts: every K=V of `requires` is among the labels with the
 * same value; '{}' short-cuts the check). (A task retried while its old
 * attempt still runs is `ready`, not waiting, until that attempt ends:
 * core/cancel-plan.ts.) json_each compares keys and values as data, so no
 * character in them is special. claimNext runs it, inserts the attempt and
 * updates the task once (one change in the feed, one counter move), all in
 * one IMMEDIATE transaction: it holds SQLite's one write lock from the first
 * statement, so two callers (in this process or another) never claim the same
 * task; the second simply gets the next one.
 */
export const CLAIM_SQL = `SELECT t.* FROM tasks t INDEXED BY tasks_queue
WHERE t.state = 'waiting'
  AND (t.requires = '{}' OR NOT EXISTS (
    SELECT 1 FROM json_each(t.requires) r
    WHERE NOT EXISTS (SELECT 1 FROM json_each(@labels) l WHERE l.key = r.key AND l.value = r.value)))
ORDER BY t.priority DESC, t.id ASC
LIMIT +@max`;

type Fenced = { ok: true; attempt: AttemptRow; task: TaskRow } | { ok: false; reason: FenceReason };

/**
 * core/fence.ts applied to the stored rows. `workerId` undefined: the
 * server's own end (lease sweeper, a session closed before assign), which
 * presents the attempt's own token and speaks for its worker. A worker's
 * token must look like one (32 hex), so the '' of attempts from before
 * schema v3 can never be matched by a report.
 */
export function fence(d: SqliteDb, attemptId: number, token: string, workerId: string | undefined): Fenced {
  const a = attemptRow(d, attemptId);
  const t = a ? taskRow(d, a.task_id) : undefined;
  const byWorker = workerId !== undefined;
  const presented = { fencingToken: byWorker && !TOKEN_RE.test(token) ? NEVER_A_TOKEN : token, workerId: workerId ?? a?.worker_id ?? '' };
  const c = checkFence(a && { id: a.id, workerId: a.worker_id, fencingToken: a.fencing_token, state: a.state as Attempt['state'] }, t?.current_attempt_id, presented);
  return c.ok ? { ok: true, attempt: a!, task: t! } : c;
}

/** Why an attempt listed in a heartbeat must stop, or null if it may run on (see RenewResult). */
function stopOrder(d: SqliteDb, workerId: string, id: number): StopOrder | null {
  const a = attemptRow(d, id);
  // The fence with the attempt's own token: which of unknown / not this worker's / ended / not current.
  const f = fence(d, id, a?.fencing_token ?? NEVER_A_TOKEN, workerId);
  if (!f.ok) return { attemptId: id, reason: f.reason, report: false };
  if (f.attempt.stop_reason !== null) return { attemptId: id, reason: f.attempt.stop_reason, report: true };
  return null;
}

/**
 * Claims up to `max` tasks for one worker, inside the caller's write: the
 * choice (CLAIM_SQL) reads them in queue order, then each gets its attempt,
 * its task update (once: one change in the feed, one counter move) and its
 * event. The IMMEDIATE transaction holds SQLite's one write lock from the
 * first statement, so no other claimer can take the same tasks.
 */
export function claimIn(d: SqliteDb, worker: ClaimingWorker, max: number, now: number, leaseMs: number): Claim[] {
  assertTransition('waiting', 'running', 'claimed');
  const picked = d.q(CLAIM_SQL).all({ labels: JSON.stringify(worker.labels), max }) as TaskRow[];
  const claims: Claim[] = [];
  for (const p of picked) {
    const number = p.attempts + 1;
    const fencingToken = newFencingToken();
    const leaseExpiresAt = now + leaseMs;
    const inserted = d
      .q(
        `INSERT INTO attempts (task_id, number, worker_id, fencing_token, state, started_at, lease_expires_at)
         VALUES (?, ?, ?, ?, 'running', ?, ?)`,
      )
      .run(p.id, number, worker.id, fencingToken, now, leaseExpiresAt);
    const attempt: AttemptRow = {
      id: Number(inserted.lastInsertRowid),
      task_id: p.id,
      number,
      worker_id: worker.id,
      fencing_token: fencingToken,
      stop_reason: null,
      state: 'running',
      started_at: now,
      ended_at: null,
      lease_expires_at: leaseExpiresAt,
      exit_code: null,
      signal: null,
      error: null,
      duration_ms: null,
    };
    const moved = d.q("UPDATE tasks SET state = 'running', attempts = ?, current_attempt_id = ?, updated_at = ? WHERE id = ? AND state = 'waiting'").run(number, attempt.id, now, p.id);
    assertOneRow(moved.changes, 'claim', p.id);
    const task: TaskRow = { ...p, state: 'running', attempts: number, current_attempt_id: attempt.id, updated_at: now };
    insertEvent(d, task.id, 'waiting', 'running', 'claimed', SCHEDULER_ACTOR, now, { attemptId: attempt.id, attempt: number, workerId: worker.id });
    d.signal({ kind: 'task', taskId: task.id });
    claims.push({ task: taskFromRow(task), attempt: attemptFromRow(attempt) });
  }
  return claims;
}

/**
 * The claim and the end write their rows with UPDATE and build the rows they
 * return from what they read and wrote, not with RETURNING *: measured (issue
 * 9; a 20,000-task tasks table with its indexes and triggers, 10 updates per
 * commit), RETURNING * on a task's UPDATE cost 13-20 µs of its 38-42 µs, as
 * much as reading the row again. A store-level drain of 20,000 tasks (claim,
 * then end and refill in batches of 10, as a 10-slot worker; five runs
 * alternating the builds) took 277-313 µs per task with this against 314-354
 * µs with RETURNING * (medians 287 and 328). The write lock is held from the
 * transaction's first statement, so the rows read at its start are the rows
 * updated; a guard that matches no row is a bug, and throws (rolling the
 * write back) rather than returning a row that was not written.
 */
function assertOneRow(changes: number, what: string, id: string | number): void {
  if (changes !== 1) throw new Error(`sqlite ${what}: the guarded update of ${id} changed ${changes} rows, not 1`);
}

/**
 * One fenced end inside the caller's write: fenced, then planned
 * (core/attempt-end.ts) before any write, so a rejected end changes nothing.
 * With guard.leaseExpired the expiry is tested here, inside the transaction:
 * a heartbeat that renewed the lease after the sweeper read it wins, and the
 * end is refused.
 */
function endIn(d: SqliteDb, r: EndRequest, now: number, dag: DagChange[]): AttemptEndResult | null {
  const { attemptId, end, guard = {} } = r;
  const f = fence(d, attemptId, r.fencingToken, guard.workerId);
  if (!f.ok) return null;
  if (guard.leaseExpired && !(f.attempt.lease_expires_at < now)) return null;
  const plan = planAttemptEnd(taskFromRow(f.task), { ...end, attempt: f.attempt.number }, now);
  const state = attemptStateOf(end.outcome);
  const attemptEnd = d
    .q(
      `UPDATE attempts SET state = @state, ended_at = @now, exit_code = @exitCode, signal = @signal, error = @error, duration_ms = @durationMs
       WHERE id = @id AND state = 'running'`,
    )
    .run({ id: attemptId, state, now, exitCode: end.exitCode, signal: end.signal, error: end.error, durationMs: end.durationMs });
  assertOneRow(attemptEnd.changes, 'end', attemptId);
  const attempt: AttemptRow = { ...f.attempt, state, ended_at: now, exit_code: end.exitCode, signal: end.signal, error: end.error, duration_ms: end.durationMs };
  let task = f.task;
  // A plan with no event and no result (the task was retried while this attempt ran) leaves the task as it is.
  if (plan.event !== null || plan.result !== null) {
    // coalesce: a null plan.result keeps the stored one, so a result is recorded exactly once;
    // the same for outputs, which a plan carries only when the task becomes succeeded.
    const result = plan.result === null ? null : JSON.stringify(plan.result);
    const outputs = plan.outputs === null ? null : JSON.stringify(plan.outputs);
    const moved = d
      .q(
        `UPDATE tasks SET state = @state, retries_used = @retriesUsed, lost_count = @lostCount, run_after = @runAfter,
           result = coalesce(@result, result), outputs = coalesce(@outputs, outputs), updated_at = @now
         WHERE id = @id`,
      )
      .run({ id: f.task.id, state: plan.state, retriesUsed: plan.retriesUsed, lostCount: plan.lostCount, runAfter: plan.runAfter, result, outputs, now });
    assertOneRow(moved.changes, 'end', f.task.id);
    task = {
      ...f.task,
      state: plan.state,
      retries_used: plan.retriesUsed,
      lost_count: plan.lostCount,
      run_after: plan.runAfter,
      result: result ?? f.task.result,
      outputs: outputs ?? f.task.outputs,
      updated_at: now,
    };
  }
  if (plan.event) insertEvent(d, f.task.id, plan.event.from, plan.event.to, plan.event.reason, r.actor, now, { attemptId, ...plan.event.detail });
  // A DAG step that ended: the caller decides its run's progress before committing (endsIn).
  if (f.task.dag_run_id !== null && plan.event !== null && isTerminal(plan.state)) dag.push({ runId: f.task.dag_run_id, taskId: f.task.id, step: f.task.dag_step!, state: plan.state });
  d.signal({ kind: 'task', taskId: f.task.id });
  if (plan.state === 'waiting') d.signal({ kind: 'wake' });
  return { task: taskFromRow(task), attempt: attemptFromRow(attempt) };
}

/**
 * endIn for each request, in order (a later request sees what an earlier one
 * ended), then the progress of every DAG run one of them ended a step of, in
 * the same write: releasing a step's dependents is never left for later.
 * `at`: when that progress was dated (dag-runs.ts progressDagRuns; `now` if none).
 */
function endsIn(d: SqliteDb, requests: EndRequest[], now: number): { ended: Array<AttemptEndResult | null>; at: number } {
  const dag: DagChange[] = [];
  const ended = requests.map((r) => endIn(d, r, now, dag));
  return { ended, at: dag.length > 0 ? progressDagRuns(d, dag, now) : now };
}

export function sqliteAttempts(d: SqliteDb): AttemptStore {
  return {
    async claimNext(worker: ClaimingWorker, now: number, leaseMs: number): Promise<Claim | null> {
      return (await d.write(() => claimIn(d, worker, 1, now, leaseMs)))[0] ?? null;
    },

    async claimMany(worker: ClaimingWorker, max: number, now: number, leaseMs: number): Promise<Claim[]> {
      checkLimit(max, 'max');
      return d.write(() => claimIn(d, worker, max, now, leaseMs));
    },

    async checkReport(attemptId: number, fencingToken: string, workerId: string): Promise<ReportCheck> {
      return d.read(() => {
        const f = fence(d, attemptId, fencingToken, workerId);
        return f.ok ? { ok: true, attempt: attemptFromRow(f.attempt), task: taskFromRow(f.task) } : f;
      });
    },

    async endAttempt(
      attemptId: number,
      fencingToken: string,
      end: Omit<AttemptEndInput, 'attempt'>,
      actor: string,
      now: number,
      guard: EndGuard = {},
    ): Promise<AttemptEndResult | null> {
      return d.write(() => endsIn(d, [{ attemptId, fencingToken, end, actor, guard }], now).ended[0]!);
    },

    /** endIn for each, then claimIn for the worker, in one write: the freed slots are refilled by the same commit. */
    async endAndClaim(requests: EndRequest[], claim: RefillClaim | null, now: number): Promise<EndAndClaimResult> {
      if (claim) checkLimit(claim.max, 'max');
      return d.write(() => {
        // The claim sees the steps the ends released, and is dated no earlier than their release.
        const { ended, at } = endsIn(d, requests, now);
        return { ended, claims: claim ? claimIn(d, claim.worker, claim.max, at, claim.leaseMs) : [] };
      });
    },

    /** In order, in one write: a later request sees what an earlier one ended. One that throws undoes the whole batch. */
    async endAttempts(requests: EndRequest[], now: number): Promise<Array<AttemptEndResult | null>> {
      if (requests.length === 0) return [];
      return d.write(() => endsIn(d, requests, now).ended);
    },

    /**
     * An event (from = to = the task's state) that says a report was refused.
     * An attempt id that never existed has no task to record it on: nothing is written.
     */
    async recordFencedReport(attemptId: number, kind: string, actor: string, now: number): Promise<void> {
      await d.write(() => {
        const row = d.q('SELECT t.id, t.state FROM attempts a JOIN tasks t ON t.id = a.task_id WHERE a.id = ?').get(attemptId) as
          | { id: string; state: TaskState }
          | undefined;
        if (!row) return;
        insertEvent(d, row.id, row.state, row.state, 'fenced_report', actor, now, { attemptId, kind });
      });
    },

    /**
     * One UPDATE renews the worker's running attempts among the ids (a
     * cancelled one too: it keeps its lease until it reports); the stop
     * orders are read in the same transaction, each listed id once.
     */
    async renewLeases(workerId: string, attemptIds: number[], now: number, leaseMs: number): Promise<RenewResult> {
      if (attemptIds.length === 0) return { renewed: [], stop: [] };
      const ids = [...new Set(attemptIds)];
      return d.write(() => {
        const extended = new Set(
          (
            d
            .q(
              `UPDATE attempts SET lease_expires_at = ?
               WHERE worker_id = ? AND state = 'running' AND id IN (SELECT value FROM json_each(?))
               RETURNING id`,
            )
              .all(now + leaseMs, workerId, JSON.stringify(ids)) as Array<{ id: number }>
          ).map((r) => r.id),
        );
        const renewed = ids.filter((id) => extended.has(id));
        const stop = ids.map((id) => stopOrder(d, workerId, id)).filter((s): s is StopOrder => s !== null);
        return { renewed, stop };
      });
    },

    async expiredAttempts(now: number, limit: number): Promise<Attempt[]> {
      checkLimit(limit);
      return d.read(() =>
        (d.q("SELECT * FROM attempts WHERE state = 'running' AND lease_expires_at < ? ORDER BY lease_expires_at, id LIMIT +?").all(now, limit) as AttemptRow[]).map(
          attemptFromRow,
        ),
      );
    },
  };
}
