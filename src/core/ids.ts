/**
 * Task ids are ULIDs: 26 Crockford base32 characters, lexicographically sortable
 * by creation time, which is what keyset pagination (newest first) relies on.
 * Monotonic within a process so two tasks created in one millisecond still sort.
 */
import { randomBytes } from 'node:crypto';
import { monotonicFactory } from 'ulid';

const next = monotonicFactory();

export function newTaskId(now: number): string {
  return next(now);
}

export const TASK_ID_PATTERN = '^[0-9A-HJKMNP-TV-Z]{26}$';
const TASK_ID_RE = new RegExp(TASK_ID_PATTERN);

export function isTaskId(s: string): boolean {
  return TASK_ID_RE.test(s);
}

/**
 * A fencing token: 128 random bits, hex. Made once per attempt by the store
 * that creates the attempt and sent only to the worker it is assigned to, so
 * no other party (another worker, a user reading the API) can forge a report.
 */
export function newFencingToken(): string {
  return randomBytes(16).toString('hex');
}

export const FENCING_TOKEN_PATTERN = '^[0-9a-f]{32}$';
