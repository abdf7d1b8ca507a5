/**
 * A worker's exits and the refill of its slots as ONE autocommit statement
 * on PostgreSQL, for ends the store can plan without reading the rows first:
 * each request carries the task as its claim left it (EndRequest.claimed,
 * kept by the worker session), core/attempt-end.ts plans the end from that,
 * and the statement applies the plan only where the rows are still as the
 * claim left them. The others (and every request of a batch this path does
 * not take) go the locking way (attempts.ts endIn), so the outcome is always
 * the one the locking path would have reached.
 *
 * Guard and lock. `locked` takes the row locks of each attempt and its task
 * together, in attempt id order (as endIn's locking read does), and only
 * where: the attempt runs, is this worker's and has this fencing token (the
 * fence, core/fence.ts); the task runs, with this attempt as its current one,
 * and still has the retries and losses the plan was made from; and the task is
 * no DAG step (a step's end also progresses its run: endIn). A row another
 * transaction changed meanwhile is re-checked on its newest version once its
 * lock is granted (READ COMMITTED), so a cancel, a manual retry, a sweeper's
 * end or another server's end that got there first makes this request fall
 * through instead of overwriting. The writes then touch only locked rows.
 *
 * Taken only when every request of the batch qualifies and none requeues its
 * task (an end whose plan is `waiting`): the claim in the same statement reads
 * the queue as it was when the statement began, so it could not claim a task
 * the ends requeue, which endAndClaim promises.
 *
 * Measured (issue 9; 10,000 no-op tasks, one 10-slot noop agent, each
 * statement timed on its connection): the locking path's transaction for a
 * batch of 10 exits and their refill was BEGIN 0.46 ms, the locking read
 * 1.00, the ends 2.47, the claim 3.02, COMMIT 1.03, and 10.7 ms from the
 * session's call to its answer (about 2.7 ms of it in the server between the
 * round trips).
 */
import { planAttemptEnd, type AttemptEndPlan } from '../../core/attempt-end.js';
import { attemptStateOf } from '../../core/task.js';
import type { AttemptEndResult, Claim, EndRequest, RefillClaim } from '../attempts.js';
import { attemptFromRow, taskFromRow, type AttemptRow, type TaskRow } from '../rows.js';
import { CLAIM_CTES, claimFromJson, claimParams } from './claim-sql.js';
import type { Db } from './db.js';

interface Planned {
  request: EndRequest & { claimed: NonNullable<EndRequest['claimed']>; guard: { workerId: string } };
  plan: AttemptEndPlan & { event: NonNullable<AttemptEndPlan['event']> };
}

/**
 * The batch's plans, or null when this path does not take the batch: a
 * request without `claimed` or without a session's worker guard, a sweeper's
 * (leaseExpired) end, a DAG step, an id that is not a safe integer, one
 * attempt twice, or an end that requeues its task.
 */
export function planClaimedEnds(requests: EndRequest[], now: number): Planned[] | null {
  if (requests.length === 0) return null;
  const seen = new Set<number>();
  const out: Planned[] = [];
  for (const r of requests) {
    const c = r.claimed;
    const workerId = r.guard?.workerId;
    if (!c || workerId === undefined || r.guard?.leaseExpired || c.dagRunId !== null || !Number.isSafeInteger(r.attemptId) || seen.has(r.attemptId)) return null;
    seen.add(r.attemptId);
    const plan = planAttemptEnd({ state: 'running', retry: c.retry, retriesUsed: c.retriesUsed, lostCount: c.lostCount, result: null }, { ...r.end, attempt: c.attempt }, now);
    if (plan.state === 'waiting' || plan.event === null) return null;
    out.push({ request: { ...r, claimed: c, guard: { ...r.guard, workerId } }, plan: { ...plan, event: plan.event } });
  }
  return out;
}

/** Per request: its end, or undefined where the guard did not hold (the caller ends those the locking way). */
export interface ClaimedEndsResult {
  ended: Array<AttemptEndResult | undefined>;
  claims: Claim[];
}

const END_CTES = `r AS (
         SELECT * FROM unnest($9::bigint[], $10::text[], $11::text[], $12::text[], $13::int[], $14::int[],
                              $15::text[], $16::int[], $17::text[], $18::text[], $19::bigint[],
                              $20::text[], $21::int[], $22::int[], $23::bigint[], $24::text[], $25::text[],
                              $26::text[], $27::text[], $28::text[], $29::text[], $30::text[]) WITH ORDINALITY
           AS r(attempt_id, token, worker_id, task_id, retries_was, lost_was,
                a_state, exit_code, signal, error, duration_ms,
                t_state, retries_used, lost_count, run_after, result, outputs,
                ev_from, ev_to, ev_reason, ev_actor, ev_detail, n)
       ), locked AS (
         SELECT a.id AS attempt_id
         FROM r
         JOIN attempts a ON a.id = r.attempt_id
         JOIN tasks t ON t.id = a.task_id
         WHERE a.state = 'running' AND a.fencing_token = r.token AND a.worker_id = r.worker_id
           AND t.id = r.task_id AND t.state = 'running' AND t.current_attempt_id = a.id
           AND t.retries_used = r.retries_was AND t.lost_count = r.lost_was AND t.dag_run_id IS NULL
         ORDER BY a.id
         FOR NO KEY UPDATE OF t, a
       ), mine AS (
         SELECT r.* FROM r JOIN locked USING (attempt_id)
       ), ua AS (
         UPDATE attempts SET state = m.a_state, ended_at = $1::bigint, exit_code = m.exit_code, signal = m.signal, error = m.error, duration_ms = m.duration_ms
         FROM mine m
         WHERE attempts.id = m.attempt_id
         RETURNING attempts.*
       ), ut AS (
         UPDATE tasks SET state = m.t_state, retries_used = m.retries_used, lost_count = m.lost_count, run_after = m.run_after,
           result = coalesce(m.result, tasks.result), outputs = coalesce(m.outputs, tasks.outputs), updated_at = $1::bigint
         FROM mine m
         WHERE tasks.id = m.task_id
         RETURNING tasks.*
       ), ue AS (
         INSERT INTO task_events (task_id, from_state, to_state, reason, actor, at, detail)
         SELECT m.task_id, m.ev_from, m.ev_to, m.ev_reason, m.ev_actor, $1::bigint, m.ev_detail FROM mine m ORDER BY m.n
       )`;

/**
 * The planned ends and (with `claim`) the refill, in one statement (see the
 * top). A request whose guard did not hold changed nothing and comes back
 * undefined.
 */
export async function endClaimedAndClaim(db: Db, planned: Planned[], claim: RefillClaim | null, now: number): Promise<ClaimedEndsResult> {
  const col = <T>(f: (p: Planned) => T): T[] => planned.map(f);
  const params = [
    ...(claim ? claimParams(claim.worker, claim.max, now, claim.leaseMs) : claimParams({ id: '', labels: {} }, 0, now, 0)),
    col((p) => p.request.attemptId),
    col((p) => p.request.fencingToken),
    col((p) => p.request.guard.workerId),
    col((p) => p.request.claimed.id),
    col((p) => p.request.claimed.retriesUsed),
    col((p) => p.request.claimed.lostCount),
    col((p) => attemptStateOf(p.request.end.outcome)),
    col((p) => p.request.end.exitCode),
    col((p) => p.request.end.signal),
    col((p) => p.request.end.error),
    col((p) => p.request.end.durationMs),
    col((p) => p.plan.state),
    col((p) => p.plan.retriesUsed),
    col((p) => p.plan.lostCount),
    col((p) => p.plan.runAfter),
    col((p) => (p.plan.result === null ? null : JSON.stringify(p.plan.result))),
    col((p) => (p.plan.outputs === null ? null : JSON.stringify(p.plan.outputs))),
    col((p) => p.plan.event.from),
    col((p) => p.plan.event.to),
    col((p) => p.plan.event.reason),
    col((p) => p.request.actor),
    col((p) => JSON.stringify({ attemptId: p.request.attemptId, ...p.plan.event.detail })),
  ];
  return db.single(async (tx) => {
    const row = (
      await tx.query<{ tasks: TaskRow[] | null; attempts: AttemptRow[] | null; claims: Array<{ task: TaskRow; attempt: AttemptRow }> | null }>(
        `WITH ${CLAIM_CTES}, ${END_CTES}
         SELECT (SELECT json_agg(ut) FROM ut) AS tasks, (SELECT json_agg(ua) FROM ua) AS attempts,
                (SELECT json_agg(json_build_object('task', to_json(c), 'attempt', to_json(a)) ORDER BY c.n)
                 FROM claimed c JOIN attempt a ON a.id = c.current_attempt_id) AS claims`,
        params,
      )
    ).rows[0]!;
    const tasks = new Map((row.tasks ?? []).map((t) => [t.id, t]));
    const attempts = new Map((row.attempts ?? []).map((a) => [Number(a.id), a]));
    const ended = planned.map((p) => {
      const a = attempts.get(p.request.attemptId);
      const t = tasks.get(p.request.claimed.id);
      if (!a || !t) return undefined;
      tx.signal({ kind: 'task', taskId: t.id });
      return { task: taskFromRow(t), attempt: attemptFromRow(a) };
    });
    const claims = (row.claims ?? []).map(claimFromJson);
    for (const c of claims) tx.signal({ kind: 'task', taskId: c.task.id });
    return { ended, claims };
  });
}
