/**
 * Task ids are ULIDs: 26 Crockford base32 characters, lexicographically sortable
 * by creation time, which is what keyset pagination (newest first) relies on.
 * Monotonic within a process so two tasks created in one millisecond still sort.
 */
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
