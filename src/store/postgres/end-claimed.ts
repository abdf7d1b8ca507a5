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
 * and still has the retries and losses the plan was made from. A row another
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
 * DAG steps. A step's end also progresses its run (dag-runs.ts), planned from
 * the run's row read under its lock, so a batch with a step runs
 * endClaimedIn inside attempts.ts's transaction: the same guarded ends, with
 * the step rows' runs locked in that statement after the steps (the lock
 * order task, then run, of dag-runs.ts), then the progress, then the claim:
 * one round trip fewer than the locking read followed by the ends.
 *
 * Measured (issue 9; 10,000 no-op tasks, one 10-slot noop agent, each
 * statement timed on its connection): the locking path's transaction for a
 * batch of 10 exits and their refill was BEGIN 0.46 ms, the locking read
 * 1.00, the ends 2.47, the claim 3.02, COMMIT 1.03, and 10.7 ms from the
 * session's call to its answer (about 2.7 ms of it in the server between the
 * round trips); this statement takes 6.4 ms. The bench's 20,000-task drain
 * went from 1,094-1,138/s to 1,739-1,881/s, and the 100-step DAG chain's
 * overhead per step from 7.5-8.4 ms to 6.2-7.0 ms (README, Performance).
 * Tried and dropped (2026-12-05): the ends and the refill as two autocommit
 * statements sent at once on two connections, so that the database could
 * work on both cores (the claim is disjoint from the ended rows). A 20,000
 * no-op drain without a prefetch, three pairs alternating with this one
 * statement: 1,207, 1,506 and 1,447/s against 1,275, 1,392 and 1,934/s; no
 * gain, and a second commit per round.
 */
import { planAttemptEnd, type AttemptEndPlan } from '../../core/attempt-end.js';
import { attemptStateOf } from '../../core/task.js';
import type { AttemptEndResult, Claim, EndRequest, RefillClaim } from '../attempts.js';
import type { DagChange } from '../dags.js';
import type { RunHead } from '../dag-progress.js';
import { isTerminal, TERMINAL_STATES } from '../../core/task-state.js';
import { attemptFromRow, taskFromRow, type AttemptRow, type TaskRow } from '../rows.js';
import { CLAIM_CTES, claimFromJson, claimParams } from './claim-sql.js';
import type { Db, Tx } from './db.js';
import { lockRunsWhere } from './dag-runs.js';

/** The terminal states as an SQL list: only a step that ends now progresses its run (endIn's runIds). */
const TERMINAL_SQL = `(${[...TERMINAL_STATES].map((st) => `'${st}'`).join(', ')})`;

interface Planned {
  request: EndRequest & { claimed: NonNullable<EndRequest['claimed']>; guard: { workerId: string } };
  plan: AttemptEndPlan & { event: NonNullable<AttemptEndPlan['event']> };
}

/**
 * The batch's plans, or null when this path does not take the batch: a
 * request without `claimed` or without a session's worker guard, a sweeper's
 * (leaseExpired) end, an id that is not a safe integer, one attempt twice, or
 * an end that requeues its task.
 */
export function planClaimedEnds(requests: EndRequest[], now: number): Planned[] | null {
  if (requests.length === 0) return null;
  const seen = new Set<number>();
  const out: Planned[] = [];
  for (const r of requests) {
    const c = r.claimed;
    const workerId = r.guard?.workerId;
    if (!c || workerId === undefined || r.guard?.leaseExpired || !Number.isSafeInteger(r.attemptId) || seen.has(r.attemptId)) return null;
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

/**
 * The ends' CTEs: `r` (the requests, with their plans), `locked`, `mine` (the
 * requests whose rows were locked), `ua`, `ut` (the attempts and tasks as
 * written) and `ue`. `now`: the parameter of the end's time; the 22 columns of
 * endParams at $first.. (so the claim's parameters can come first).
 */
function endCtes(now: string, first: number): string {
  const p = (k: number) => `$${first + k}`;
  return `r AS (
         SELECT * FROM unnest(${p(0)}::bigint[], ${p(1)}::text[], ${p(2)}::text[], ${p(3)}::text[], ${p(4)}::int[], ${p(5)}::int[],
                              ${p(6)}::text[], ${p(7)}::int[], ${p(8)}::text[], ${p(9)}::text[], ${p(10)}::bigint[],
                              ${p(11)}::text[], ${p(12)}::int[], ${p(13)}::int[], ${p(14)}::bigint[], ${p(15)}::text[], ${p(16)}::text[],
                              ${p(17)}::text[], ${p(18)}::text[], ${p(19)}::text[], ${p(20)}::text[], ${p(21)}::text[]) WITH ORDINALITY
           AS r(attempt_id, token, worker_id, task_id, retries_was, lost_was,
                a_state, exit_code, signal, error, duration_ms,
                t_state, retries_used, lost_count, run_after, result, outputs,
                ev_from, ev_to, ev_reason, ev_actor, ev_detail, n)
       ), locked AS (
         SELECT a.id AS attempt_id, t.dag_run_id
         FROM r
         JOIN attempts a ON a.id = r.attempt_id
         JOIN tasks t ON t.id = a.task_id
         WHERE a.state = 'running' AND a.fencing_token = r.token AND a.worker_id = r.worker_id
           AND t.id = r.task_id AND t.state = 'running' AND t.current_attempt_id = a.id
           AND t.retries_used = r.retries_was AND t.lost_count = r.lost_was
         ORDER BY a.id
         FOR NO KEY UPDATE OF t, a
       ), mine AS (
         SELECT r.* FROM r JOIN locked l USING (attempt_id)
       ), ua AS (
         UPDATE attempts SET state = m.a_state, ended_at = ${now}::bigint, exit_code = m.exit_code, signal = m.signal, error = m.error, duration_ms = m.duration_ms
         FROM mine m
         WHERE attempts.id = m.attempt_id
         RETURNING attempts.*
       ), ut AS (
         UPDATE tasks SET state = m.t_state, retries_used = m.retries_used, lost_count = m.lost_count, run_after = m.run_after,
           result = coalesce(m.result, tasks.result), outputs = coalesce(m.outputs, tasks.outputs), updated_at = ${now}::bigint
         FROM mine m
         WHERE tasks.id = m.task_id
         RETURNING tasks.*
       ), ue AS (
         INSERT INTO task_events (task_id, from_state, to_state, reason, actor, at, detail)
         SELECT m.task_id, m.ev_from, m.ev_to, m.ev_reason, m.ev_actor, ${now}::bigint, m.ev_detail FROM mine m ORDER BY m.n
       )`;
}

/** endCtes' 22 parameters, in order. */
function endParams(planned: Planned[]): unknown[][] {
  const col = <T>(f: (p: Planned) => T): T[] => planned.map(f);
  return [
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
}

/** Each request's end as written (undefined where its guard did not hold), with its task's signal queued on `tx`. */
function endedOf(tx: Tx, planned: Planned[], taskRows: TaskRow[] | null, attemptRows: AttemptRow[] | null): Array<AttemptEndResult | undefined> {
  const tasks = new Map((taskRows ?? []).map((t) => [t.id, t]));
  const attempts = new Map((attemptRows ?? []).map((a) => [Number(a.id), a]));
  return planned.map((p) => {
    const a = attempts.get(p.request.attemptId);
    const t = tasks.get(p.request.claimed.id);
    if (!a || !t) return undefined;
    tx.signal({ kind: 'task', taskId: t.id });
    return { task: taskFromRow(t), attempt: attemptFromRow(a) };
  });
}

/**
 * The planned ends and (with `claim`) the refill, in one statement (see the
 * top). A request whose guard did not hold changed nothing and comes back
 * undefined.
 */
export async function endClaimedAndClaim(db: Db, planned: Planned[], claim: RefillClaim | null, now: number): Promise<ClaimedEndsResult> {
  const params = [...(claim ? claimParams(claim.worker, claim.max, now, claim.leaseMs) : claimParams({ id: '', labels: {} }, 0, now, 0)), ...endParams(planned)];
  return db.single(async (tx) => {
    const row = (
      await tx.query<{ tasks: TaskRow[] | null; attempts: AttemptRow[] | null; claims: Array<{ task: TaskRow; attempt: AttemptRow }> | null }>(
        `WITH ${CLAIM_CTES}, ${endCtes('$1', 9)}
         SELECT (SELECT json_agg(ut) FROM ut) AS tasks, (SELECT json_agg(ua) FROM ua) AS attempts,
                (SELECT json_agg(json_build_object('task', to_json(c), 'attempt', to_json(a)) ORDER BY c.n)
                 FROM claimed c JOIN attempt a ON a.id = c.current_attempt_id) AS claims`,
        params,
      )
    ).rows[0]!;
    const ended = endedOf(tx, planned, row.tasks, row.attempts);
    const claims = (row.claims ?? []).map(claimFromJson);
    for (const c of claims) tx.signal({ kind: 'task', taskId: c.task.id });
    return { ended, claims };
  });
}

/**
 * The planned ends inside the caller's transaction `tx`, with the runs of the
 * DAG steps among them locked and read in the same statement (after the
 * steps: the lock order of dag-runs.ts). Returns each request's end
 * (undefined where its guard did not hold), the run changes for
 * progressDagRuns, and the locked runs.
 */
export async function endClaimedIn(tx: Tx, planned: Planned[], now: number): Promise<{ ended: Array<AttemptEndResult | undefined>; dag: DagChange[]; runs: Map<string, RunHead> }> {
  const row = (
    await tx.query<{ tasks: TaskRow[] | null; attempts: AttemptRow[] | null; runs: RunHead[] | null }>(
      `WITH ${endCtes('$1', 2)}, lr AS (
         ${lockRunsWhere(`id IN (SELECT l.dag_run_id FROM locked l JOIN r USING (attempt_id) WHERE l.dag_run_id IS NOT NULL AND r.t_state IN ${TERMINAL_SQL})`)}
       )
       SELECT (SELECT json_agg(ut) FROM ut) AS tasks, (SELECT json_agg(ua) FROM ua) AS attempts, (SELECT json_agg(lr) FROM lr) AS runs`,
      [now, ...endParams(planned)],
    )
  ).rows[0]!;
  const ended = endedOf(tx, planned, row.tasks, row.attempts);
  const dag: DagChange[] = [];
  for (const [i, e] of ended.entries()) {
    const p = planned[i]!;
    // As endIn: a step that ended now, with its outputs as the write left them.
    if (e && e.task.dagRunId !== null && isTerminal(p.plan.state)) {
      dag.push({ runId: e.task.dagRunId, taskId: e.task.id, step: e.task.dagStep!, state: p.plan.state, outputs: (row.tasks ?? []).find((t) => t.id === e.task.id)!.outputs });
    }
  }
  return { ended, dag, runs: new Map((row.runs ?? []).map((r) => [r.id, r])) };
}
