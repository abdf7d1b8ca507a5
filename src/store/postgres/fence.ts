/**
 * Reading what core/fence.ts checks: the attempt and its task's current
 * attempt, optionally under row locks (see each caller for which rows and why).
 */
import { checkFence, type FenceCheck } from '../../core/fence.js';
import { attemptFromRow, type AttemptRow, type TaskRow } from '../rows.js';
import type { Queryable } from './db.js';
import { DB_NOW_MS } from './sql.js';

export interface FencedRows {
  attempt: AttemptRow;
  task: TaskRow;
  /** With `leaseExpired: true` only: the lease ended before the database's now. */
  lease_expired?: boolean;
}

export interface ReadFencedOptions {
  /** 'attempt' locks the attempt row (log appends), 'both' the task and the attempt (ends). */
  lock?: 'none' | 'attempt' | 'both';
  /** Also compare the lease with the database's clock (the sweeper's guard). */
  leaseExpired?: boolean;
}

/**
 * The attempt and its task in one statement. A locked row is returned in its
 * newest committed version (READ COMMITTED re-check after the lock wait).
 */
export async function readFenced(q: Queryable, attemptId: number, opts: ReadFencedOptions = {}): Promise<FencedRows | undefined> {
  if (!Number.isSafeInteger(attemptId)) return undefined;
  const locking = { none: '', attempt: ' FOR NO KEY UPDATE OF a', both: ' FOR NO KEY UPDATE OF t, a' }[opts.lock ?? 'none'];
  const expiry = opts.leaseExpired ? `, a.lease_expires_at < ${DB_NOW_MS} AS lease_expired` : '';
  const r = await q.query<FencedRows>(
    `SELECT to_json(a) AS attempt, to_json(t) AS task${expiry} FROM attempts a JOIN tasks t ON t.id = a.task_id WHERE a.id = $1${locking}`,
    [attemptId],
  );
  return r.rows[0];
}

/** core/fence.ts on the rows; `workerId` undefined (the server's own ends) skips the worker check only. */
export function fence(rows: FencedRows | undefined, fencingToken: string, workerId: string | undefined): FenceCheck {
  if (!rows) return { ok: false, reason: 'unknown_attempt' };
  const attempt = attemptFromRow(rows.attempt);
  return checkFence(attempt, rows.task.current_attempt_id, { fencingToken, workerId: workerId ?? attempt.workerId });
}
