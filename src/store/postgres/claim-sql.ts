/**
 * The claim as SQL text (attempts.ts claimMany states its contract): shared by
 * the claim statement and by the one-statement end and refill (end-claimed.ts).
 */
import { newFencingToken } from '../../core/ids.js';
import type { Claim, ClaimingWorker } from '../attempts.js';
import { attemptFromRow, taskFromRow, type AttemptRow, type TaskRow } from '../rows.js';
import { DB_NOW_MS, SCHEDULER_ACTOR } from './sql.js';

/**
 * The claim's CTEs (attempts.ts claimMany): `claimed` (the task rows, with `n`,
 * the claim order) and `attempt` (their new attempts), with the claim's
 * parameters at $1..$8 (CLAIM_PARAMS). Shared by the claim statement and by
 * the one-statement end and refill (end-claimed.ts).
 */
export const CLAIM_CTES = `free AS (
         SELECT id, priority FROM tasks
         WHERE state = 'waiting' AND requires = '{}'
         ORDER BY priority DESC, id ASC
         LIMIT $8
         FOR NO KEY UPDATE SKIP LOCKED
       ), placed AS (
         SELECT id, priority FROM tasks
         WHERE $7::boolean AND state = 'waiting' AND requires <> '{}' AND requires::jsonb <@ $5::jsonb
         ORDER BY priority DESC, id ASC
         LIMIT $8
         FOR NO KEY UPDATE SKIP LOCKED
       ), next AS (
         SELECT id, row_number() OVER (ORDER BY priority DESC, id ASC) AS n FROM (
           SELECT * FROM free UNION ALL SELECT * FROM placed
         ) c
         ORDER BY priority DESC, id ASC
         LIMIT $8
       ), claimed AS (
         UPDATE tasks t
         SET state = 'running', attempts = t.attempts + 1, current_attempt_id = nextval('attempts_id_seq'), updated_at = $1::bigint
         FROM next
         WHERE t.id = next.id AND t.state = 'waiting'
         RETURNING t.*, next.n
       ), attempt AS (
         INSERT INTO attempts (id, task_id, number, worker_id, fencing_token, state, started_at, lease_expires_at)
         SELECT current_attempt_id, id, attempts, $2::text, ($6::text[])[n], 'running', $1::bigint, ${DB_NOW_MS} + $3::bigint FROM claimed
         RETURNING *
       ), event AS (
         INSERT INTO task_events (task_id, from_state, to_state, reason, actor, at, detail)
         SELECT id, 'waiting', 'running', 'claimed', $4::text, $1::bigint,
                json_build_object('attemptId', current_attempt_id, 'attempt', attempts, 'workerId', $2::text)::text
         FROM claimed ORDER BY n
       )`;

/** CLAIM_CTES' parameters, $1..$8; `max` 0 claims nothing. One fresh random fencing token per claimable attempt, drawn here (node:crypto). */
export function claimParams(worker: ClaimingWorker, max: number, now: number, leaseMs: number): unknown[] {
  const tokens = Array.from({ length: max }, newFencingToken);
  return [now, worker.id, leaseMs, SCHEDULER_ACTOR, JSON.stringify(worker.labels), tokens, Object.keys(worker.labels).length > 0, max];
}

/** A claimed row as CLAIM_CTES return it (`to_json` of `claimed` and of `attempt`) as a Claim. */
export function claimFromJson(row: { task: TaskRow; attempt: AttemptRow }): Claim {
  const { n: _n, ...task } = row.task as TaskRow & { n: number };
  return { task: taskFromRow(task), attempt: attemptFromRow(row.attempt) };
}
