/**
 * The fence every report from a worker passes (log, exit, started, hello
 * running/killed), as one pure decision both stores apply inside the
 * transaction that acts on the report.
 *
 * A report is accepted only when all of these hold:
 *   - the attempt exists;
 *   - it was assigned to the worker that sends the report (a worker session
 *     speaks only for its own attempts);
 *   - the presented fencing token is the attempt's (random, per attempt, so it
 *     cannot be guessed from the attempt id);
 *   - the attempt is still running;
 *   - it is its task's current attempt.
 * The order of the checks fixes which reason a rejection names; a wrong
 * worker is named before a wrong token so a probe learns nothing of tokens.
 */
import { timingSafeEqual } from 'node:crypto';
import type { AttemptState } from './task.js';

export type FenceReason = 'unknown_attempt' | 'wrong_worker' | 'stale_token' | 'attempt_ended' | 'not_current';

export interface FencedAttempt {
  id: number;
  workerId: string;
  fencingToken: string;
  state: AttemptState;
}

export interface Presented {
  fencingToken: string;
  /** The worker whose session carries the report. */
  workerId: string;
}

export type FenceCheck = { ok: true } | { ok: false; reason: FenceReason };

export function checkFence(attempt: FencedAttempt | null | undefined, currentAttemptId: number | null | undefined, presented: Presented): FenceCheck {
  if (!attempt) return { ok: false, reason: 'unknown_attempt' };
  if (attempt.workerId !== presented.workerId) return { ok: false, reason: 'wrong_worker' };
  if (!tokensEqual(attempt.fencingToken, presented.fencingToken)) return { ok: false, reason: 'stale_token' };
  if (attempt.state !== 'running') return { ok: false, reason: 'attempt_ended' };
  if (currentAttemptId !== attempt.id) return { ok: false, reason: 'not_current' };
  return { ok: true };
}

/** Constant-time comparison of two fencing tokens (any strings). */
export function tokensEqual(a: string, b: string): boolean {
  if (typeof a !== 'string' || typeof b !== 'string') return false;
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
}
