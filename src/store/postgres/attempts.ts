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
import type { StopOrder } from '../../core/protocol.js';
import { attemptStateOf, type Attempt } from '../../core/task.js';
import { assertTransition, isTerminal } from '../../core/task-state.js';
import type { DagChange } from '../dags.js';
import type { RunHead } from '../dag-progress.js';
import { CLAIM_CTES, claimFromJson, claimParams } from './claim-sql.js';
import { LOCK_RUNS_CTE, progressDagRuns, runIds } from './dag-runs.js';
import { endClaimedAndClaim, endClaimedIn, planClaimedEnds } from './end-claimed.js';
import type { AttemptEndResult, AttemptStore, Claim, ClaimingWorker, EndAndClaimResult, EndGuard, EndRequest, RefillClaim, RenewResult, ReportCheck } from '../attempts.js';
import { attemptFromRow, taskFromRow, type AttemptRow, type TaskRow } from '../rows.js';
import type { Db, Tx } from './db.js';
import { fence, readFenced, type FencedRows } from './fence.js';
import { checkLimit, DB_NOW_MS } from './sql.js';

/**
 * One statement picks up to `max` tasks, marks them running, creates their
 * attempts and writes their events (data-modifying CTEs; the attempt id is drawn from its
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
async function claimMany(db: Db, worker: ClaimingWorker, max: number, now: number, leaseMs: number): Promise<Claim[]> {
  return db.single((tx) => claimIn(tx, worker, max, now, leaseMs));
}

/** The claim statement (see claimMany above), on `tx`: autocommit (Db.single) or inside a transaction (endAndClaim). */
async function claimIn(tx: Tx, worker: ClaimingWorker, max: number, now: number, leaseMs: number): Promise<Claim[]> {
  assertTransition('waiting', 'running', 'claimed');
  const r = await tx.query<{ task: TaskRow; attempt: AttemptRow }>(
    `WITH ${CLAIM_CTES}
     SELECT to_json(c) AS task, to_json(a) AS attempt FROM claimed c JOIN attempt a ON a.id = c.current_attempt_id ORDER BY c.n`,
    claimParams(worker, max, now, leaseMs),
  );
  for (const row of r.rows) tx.signal({ kind: 'task', taskId: row.task.id });
  return r.rows.map(claimFromJson);
}

/** The rows endAttempts locks and reads, one per attempt. */
type LockedEnd = FencedRows & { id: number };

/**
 * Fenced and guarded ends, any number in ONE transaction of four round trips
 * (BEGIN, the locking read, one writing statement, COMMIT), so a burst of
 * exits from a worker costs one commit (one WAL flush), not one each:
 *   1. the task rows and attempt rows of every request are locked together,
 *      in attempt id order (concurrent batches lock in the same order), and
 *      read: a locked row comes back in its newest committed version, so two
 *      servers ending one attempt queue here and the second finds it ended; a
 *      heartbeat that renewed the lease before the lock was granted is seen.
 *      The lease is compared with the database's clock in the same statement
 *      (read no later than the lock is granted, so an error can only make the
 *      sweeper wait one more sweep);
 *   2. each request is fenced (core/fence.ts) and, for the sweeper, checked
 *      for `leaseExpired`; while we hold the locks no renewal can change them
 *      (renewLeases' UPDATE waits, then finds the attempt ended). Planned
 *      (core/attempt-end.ts) before any write, so a refused end changes nothing;
 *   3. one statement applies every accepted end and its plan (unnest arrays).
 */
async function endAttempts(db: Db, requests: EndRequest[], now: number): Promise<Array<AttemptEndResult | null>> {
  if (!requests.some((r) => Number.isSafeInteger(r.attemptId))) return requests.map(() => null);
  return db.write(async (tx) => (await endIn(tx, requests, now)).ended);
}

/**
 * The ends (see endAttempts above) inside the transaction `tx`, then their
 * runs' progress. `at`: when that progress was dated (dag-runs.ts
 * progressDagRuns; `now` if none), so a claim in the same transaction is not
 * dated before it.
 */
async function endIn(tx: Tx, requests: EndRequest[], now: number): Promise<{ ended: Array<AttemptEndResult | null>; at: number }> {
  const ids = [...new Set(requests.map((r) => r.attemptId).filter((id) => Number.isSafeInteger(id)))].sort((a, b) => a - b);
  if (ids.length === 0) return { ended: requests.map(() => null), at: now };
  {
    const locked = await tx.query<LockedEnd>(
      `SELECT a.id, to_json(a) AS attempt, to_json(t) AS task, a.lease_expires_at < ${DB_NOW_MS} AS lease_expired
       FROM attempts a JOIN tasks t ON t.id = a.task_id
       WHERE a.id = ANY($1::bigint[])
       ORDER BY a.id
       FOR NO KEY UPDATE OF t, a`,
      [ids],
    );
    const byId = new Map(locked.rows.map((r) => [r.id, r]));
    const a = { id: [] as number[], state: [] as string[], exitCode: [] as Array<number | null>, signal: [] as Array<string | null>, error: [] as Array<string | null>, durationMs: [] as Array<number | null> };
    const t = {
      id: [] as string[],
      state: [] as string[],
      retriesUsed: [] as number[],
      lostCount: [] as number[],
      runAfter: [] as Array<number | null>,
      result: [] as Array<string | null>,
      outputs: [] as Array<string | null>,
    };
    const e = { taskId: [] as string[], from: [] as string[], to: [] as string[], reason: [] as string[], actor: [] as string[], detail: [] as string[] };
    const accepted: Array<{ row: LockedEnd; waiting: boolean } | null> = [];
    const planned = new Set<string>();
    const dag: DagChange[] = [];
    for (const r of requests) {
      const row = byId.get(r.attemptId);
      // An attempt an earlier request of this batch ended (or its task changed) is refused like any late report.
      if (!row || planned.has(row.task.id) || !fence(row, r.fencingToken, r.guard?.workerId).ok || (r.guard?.leaseExpired && row.lease_expired !== true)) {
        accepted.push(null);
        continue;
      }
      planned.add(row.task.id);
      const plan = planAttemptEnd(taskFromRow(row.task), { ...r.end, attempt: row.attempt.number }, now);
      a.id.push(r.attemptId);
      a.state.push(attemptStateOf(r.end.outcome));
      a.exitCode.push(r.end.exitCode);
      a.signal.push(r.end.signal);
      a.error.push(r.end.error);
      a.durationMs.push(r.end.durationMs);
      // The task row is written only when the plan changes it: a task a retry
      // moved on (plan state waiting, no event) keeps its row as it is.
      if (plan.event !== null || plan.result !== null) {
        t.id.push(row.task.id);
        t.state.push(plan.state);
        t.retriesUsed.push(plan.retriesUsed);
        t.lostCount.push(plan.lostCount);
        t.runAfter.push(plan.runAfter);
        t.result.push(plan.result === null ? null : JSON.stringify(plan.result));
        t.outputs.push(plan.outputs === null ? null : JSON.stringify(plan.outputs));
      }
      if (plan.event) {
        e.taskId.push(row.task.id);
        e.from.push(plan.event.from);
        e.to.push(plan.event.to);
        e.reason.push(plan.event.reason);
        e.actor.push(r.actor);
        e.detail.push(JSON.stringify({ attemptId: r.attemptId, ...plan.event.detail }));
      }
      accepted.push({ row, waiting: plan.state === 'waiting' });
      // A DAG step that ended: its run's progress is decided below, in this transaction.
      // Its outputs as the write below leaves them (coalesce with the stored ones), so the release need not read them back.
      if (row.task.dag_run_id !== null && plan.event !== null && isTerminal(plan.state)) {
        const outputs = plan.outputs !== null ? JSON.stringify(plan.outputs) : row.task.outputs;
        dag.push({ runId: row.task.dag_run_id, taskId: row.task.id, step: row.task.dag_step!, state: plan.state, outputs });
      }
    }
    if (a.id.length === 0) return { ended: accepted.map(() => null), at: now };
    // coalesce: a null result keeps the stored one, so a result is recorded exactly once; the same
    // for outputs, which a plan carries only when the task becomes succeeded.
    const w = (
      await tx.query<{ tasks: TaskRow[] | null; attempts: AttemptRow[]; runs: RunHead[] | null }>(
        `WITH ua AS (
           UPDATE attempts SET state = u.state, ended_at = $1, exit_code = u.exit_code, signal = u.signal, error = u.error, duration_ms = u.duration_ms
           FROM unnest($2::bigint[], $3::text[], $4::int[], $5::text[], $6::text[], $7::bigint[]) AS u(id, state, exit_code, signal, error, duration_ms)
           WHERE attempts.id = u.id AND attempts.state = 'running'
           RETURNING attempts.*
         ), ut AS (
           UPDATE tasks SET state = v.state, retries_used = v.retries_used, lost_count = v.lost_count, run_after = v.run_after,
             result = coalesce(v.result, tasks.result), outputs = coalesce(v.outputs, tasks.outputs), updated_at = $1
           FROM unnest($8::text[], $9::text[], $10::int[], $11::int[], $12::bigint[], $13::text[], $20::text[])
             AS v(id, state, retries_used, lost_count, run_after, result, outputs)
           WHERE tasks.id = v.id
           RETURNING tasks.*
         ), ue AS (
           INSERT INTO task_events (task_id, from_state, to_state, reason, actor, at, detail)
           SELECT x.task_id, x.from_state, x.to_state, x.reason, x.actor, $1, x.detail
           FROM unnest($14::text[], $15::text[], $16::text[], $17::text[], $18::text[], $19::text[]) WITH ORDINALITY AS x(task_id, from_state, to_state, reason, actor, detail, n)
           ORDER BY x.n
         ), lr AS (
           ${LOCK_RUNS_CTE}
         )
         SELECT (SELECT json_agg(ut) FROM ut) AS tasks, (SELECT json_agg(ua) FROM ua) AS attempts, (SELECT json_agg(lr) FROM lr) AS runs`,
        [now, a.id, a.state, a.exitCode, a.signal, a.error, a.durationMs, t.id, t.state, t.retriesUsed, t.lostCount, t.runAfter, t.result, e.taskId, e.from, e.to, e.reason, e.actor, e.detail, t.outputs, runIds(dag)],
      )
    ).rows[0]!;
    // Releasing a step's dependents is written with the step's end, never afterwards (store/dags.ts).
    const at = dag.length > 0 ? await progressDagRuns(tx, dag, now, new Map((w.runs ?? []).map((r) => [r.id, r]))) : now;
    const tasks = new Map((w.tasks ?? []).map((row) => [row.id, row]));
    const attempts = new Map(w.attempts.map((row) => [row.id, row]));
    const ended = accepted.map((x) => {
      if (!x) return null;
      tx.signal({ kind: 'task', taskId: x.row.task.id });
      if (x.waiting) tx.signal({ kind: 'wake' });
      return { task: taskFromRow(tasks.get(x.row.task.id) ?? x.row.task), attempt: attemptFromRow(attempts.get(x.row.id)!) };
    });
    return { ended, at };
  }
}

export function postgresAttempts(db: Db): AttemptStore {
  return {
    async claimNext(worker: ClaimingWorker, now: number, leaseMs: number): Promise<Claim | null> {
      return (await claimMany(db, worker, 1, now, leaseMs))[0] ?? null;
    },

    async claimMany(worker: ClaimingWorker, max: number, now: number, leaseMs: number): Promise<Claim[]> {
      checkLimit('max', max);
      return claimMany(db, worker, max, now, leaseMs);
    },

    async checkReport(attemptId: number, fencingToken: string, workerId: string): Promise<ReportCheck> {
      return db.read(async (q) => {
        const rows = await readFenced(q, attemptId);
        const c = fence(rows, fencingToken, workerId);
        return c.ok ? { ok: true, attempt: attemptFromRow(rows!.attempt), task: taskFromRow(rows!.task) } : c;
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
      return (await endAttempts(db, [{ attemptId, fencingToken, end, actor, guard }], now))[0]!;
    },

    async endAttempts(requests: EndRequest[], now: number): Promise<Array<AttemptEndResult | null>> {
      return endAttempts(db, requests, now);
    },

    /**
     * A batch end-claimed.ts can take: its ends and the refill in one autocommit statement, then the
     * locking way for any request whose rows were no longer as its claim left them (no claim there: the
     * refill is done); with DAG steps among them, the same guarded ends in a transaction that then
     * progresses their runs and claims. Else endIn, then claimIn for the worker, in one transaction:
     * the freed slots are refilled by the same COMMIT.
     */
    async endAndClaim(requests: EndRequest[], claim: RefillClaim | null, now: number): Promise<EndAndClaimResult> {
      if (claim) checkLimit('max', claim.max);
      const planned = planClaimedEnds(requests, now);
      const merge = (first: Array<AttemptEndResult | undefined>, late: Array<AttemptEndResult | null>) => {
        let k = 0;
        return first.map((e) => (e === undefined ? (late[k++] ?? null) : e));
      };
      if (planned && planned.every((p) => p.request.claimed.dagRunId === null)) {
        const fast = await endClaimedAndClaim(db, planned, claim, now);
        const rest = requests.filter((_, i) => fast.ended[i] === undefined);
        return { ended: merge(fast.ended, rest.length > 0 ? await endAttempts(db, rest, now) : []), claims: fast.claims };
      }
      if (planned) {
        // DAG steps among them: the guarded ends (their runs locked with them), the runs' progress, the
        // rest the locking way, then the claim, which sees the steps released, in one transaction.
        return db.write(async (tx) => {
          const first = await endClaimedIn(tx, planned, now);
          let at = first.dag.length > 0 ? await progressDagRuns(tx, first.dag, now, first.runs) : now;
          const rest = requests.filter((_, i) => first.ended[i] === undefined);
          let late: Array<AttemptEndResult | null> = [];
          if (rest.length > 0) {
            const r = await endIn(tx, rest, now);
            late = r.ended;
            at = Math.max(at, r.at);
          }
          const claims = claim ? await claimIn(tx, claim.worker, claim.max, at, claim.leaseMs) : [];
          return { ended: merge(first.ended, late), claims };
        });
      }
      return db.write(async (tx) => {
        const { ended, at } = await endIn(tx, requests, now);
        // The claim sees the steps the ends released, and is dated no earlier than their release.
        const claims = claim ? await claimIn(tx, claim.worker, claim.max, at, claim.leaseMs) : [];
        return { ended, claims };
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
