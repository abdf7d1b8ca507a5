/** Row reads and writes that several concern files share (inside their read or write). */
import { InvalidInputError } from '../../core/errors.js';
import type { TaskState, TransitionReason } from '../../core/task-state.js';
import type { AttemptRow, TaskRow } from '../rows.js';
import type { SqliteDb } from './db.js';

/** Actor of the transitions the scheduler makes on its own (claim, backoff). */
export const SCHEDULER_ACTOR = 'scheduler';

export function taskRow(d: SqliteDb, id: string): TaskRow | undefined {
  return d.q('SELECT * FROM tasks WHERE id = ?').get(id) as TaskRow | undefined;
}

export function attemptRow(d: SqliteDb, id: number): AttemptRow | undefined {
  return d.q('SELECT * FROM attempts WHERE id = ?').get(id) as AttemptRow | undefined;
}

/** The task's current attempt if it is still running (what a cancel or retry must stop). */
export function runningAttemptOf(d: SqliteDb, task: TaskRow): AttemptRow | undefined {
  if (task.current_attempt_id === null) return undefined;
  return d.q("SELECT * FROM attempts WHERE id = ? AND state = 'running'").get(task.current_attempt_id) as AttemptRow | undefined;
}

/** One event row per stored transition (or refused report). */
export function insertEvent(
  d: SqliteDb,
  taskId: string,
  from: TaskState | null,
  to: TaskState,
  reason: TransitionReason | 'fenced_report',
  actor: string,
  at: number,
  detail: Record<string, unknown> | null,
): void {
  d.q('INSERT INTO task_events (task_id, from_state, to_state, reason, actor, at, detail) VALUES (?, ?, ?, ?, ?, ?, ?)').run(
    taskId,
    from,
    to,
    reason,
    actor,
    at,
    detail === null ? null : JSON.stringify(detail),
  );
}

/**
 * A LIMIT's placeholder in this store's SQL: `LIMIT +?`, never `LIMIT ?`.
 * SQLite (3.53, as better-sqlite3 12 bundles it) takes a LIMIT that is a bare
 * bound parameter as a constant when it plans a statement, and then plans the
 * statement again each time that parameter is bound; better-sqlite3 binds on
 * every call, so each run of a `LIMIT ?` statement paid for a fresh compile.
 * The unary plus makes the limit an expression (the same value, checked the
 * same way) that SQLite leaves to run time: the statement is planned once.
 * Measured (better-sqlite3 `.all()` in a loop, 5,000 calls, an empty queue):
 * the claim's choice of tasks (`SELECT t.* ... LIMIT`) 31-43 µs a call with
 * `LIMIT ?` or `LIMIT (?)`, 3.4-4.4 µs with `LIMIT +?` or a literal; with one
 * column selected 14 µs against 3.7 µs. test/store/sqlite-limit.test.ts keeps
 * bare LIMIT parameters out of this store.
 */
export function sqliteLimit(placeholder: string): string {
  return `+${placeholder}`;
}

/** Batch sizes (LIMIT) are positive integers; anything else is the caller's bug, named. */
export function checkLimit(limit: number, field = 'limit'): void {
  if (!Number.isInteger(limit) || limit < 1) throw new InvalidInputError(field, `must be an integer >= 1, got ${limit}`);
}
