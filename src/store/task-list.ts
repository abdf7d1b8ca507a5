/**
 * The task list's WHERE clause, shared by both stores (listTasks and
 * listTaskSummaries): every filter of store/tasks.ts TaskFilter becomes an
 * equality or a range on an indexed column, and the page is read newest first
 * (ORDER BY id DESC) with one row more than the limit to know whether another
 * page follows.
 *
 *   - id prefix, time range and keyset cursor are ONE id range: ids are ULIDs
 *     of their createdAt (core/ids.ts), so [createdAfter, createdBefore)
 *     is about [smallestTaskIdAt(a), smallestTaskIdAt(b)). An id's time is
 *     never earlier than its createdAt, so the lower bound is exact; it can be
 *     later (newTaskId keeps the previous time when the clock steps back), so
 *     the upper bound allows ID_CLOCK_STEP_MS more. The createdAt predicates
 *     stay, so the result is exact for any clock step up to that (a larger
 *     step can leave a task created just before `b` out of a range ending at b);
 *   - a name prefix is the range [prefix, prefixEnd(prefix)), which a b-tree on
 *     (name, id) (or (owner, name, id)) reads directly; names are compared
 *     byte-wise in both stores (SQLite BINARY, PostgreSQL COLLATE "C"), and
 *     code point order is UTF-8 byte order, so the range is exactly the prefix;
 *   - state and owner are equalities leading the (state, id), (owner, id) and
 *     (owner, state, id) indexes.
 *   - a schedule (its runs) is an equality leading the partial (schedule_id, id)
 *     index of migration 8.
 * `order: 'ended'` (ENDED_ORDER_STATES only) reads newest end first instead:
 * ORDER BY updated_at DESC, id DESC on the partial (state, updated_at, id) and
 * (owner, state, updated_at, id) indexes of failed and cancelled tasks
 * (migration 14). A task's updated_at is the time of its last transition, and
 * a failed or cancelled task changes only by leaving that state (a retry), so
 * for these states it is when the task ended. Its keyset cursor is
 * "<updatedAt>.<id>" (endedCursor); the other filters stay conditions.
 * The SQL is the same in both dialects; only the parameter placeholders differ,
 * which the caller's `param` supplies.
 */
import { InvalidInputError } from '../core/errors.js';
import { smallestTaskIdAt } from '../core/ids.js';
import { ENDED_ORDER_STATES } from '../core/task-state.js';
import type { TaskFilter } from './tasks.js';

const ID_PREFIX_RE = /^[0-9A-HJKMNP-TV-Z]{1,26}$/;
/**
 * How far an id's time may be ahead of its task's createdAt and the task still
 * be found by a createdBefore range (see the header): the upper id bound is
 * this much later, and the extra rows read are the tasks of that minute.
 */
export const ID_CLOCK_STEP_MS = 60_000;
const ASCII_RE = /^[\x20-\x7e]*$/;

/**
 * ENDED_ORDER_STATES (core/task-state.ts) are those of the partial end indexes
 * (migration 14, `WHERE (state = 'failed' OR state = 'cancelled') AND
 * updated_at >= 0`). Only these two are indexed by end: they are rare,
 * so the indexes cost the hot path (every task that succeeds) nothing.
 * SQLite uses a partial index only when terms of the query's WHERE imply the
 * index's, so the query names its state as a literal, one of these
 * (`state = 'failed'` implies a side of the OR), and ENDED_INDEX_MARK. The
 * mark (always true: times are epoch ms; `IS NOT NULL` would not do, SQLite
 * drops that term of a NOT NULL column from the query) keeps the id-ordered
 * lists off these indexes: SQLite otherwise chose tasks_owner_ended for `owner = ? AND
 * state = ?` bound to 'failed' and sorted its rows by id, where
 * tasks_owner_state_id reads them in order. With the index's `IN (...)`
 * copied into the query instead of the literal, SQLite read
 * (owner, state, updated_at, id) but sorted its rows. Both measured with
 * test/store/query-plans.test.ts.
 */
const ENDED_INDEX_MARK = 't.updated_at >= 0';
/** "<updatedAt ms>.<task id>": the last row of an `order: 'ended'` page. */
const ENDED_CURSOR_RE = /^(\d{1,16})\.([\x21-\x7e]{1,200})$/;

/** The keyset cursor of a row of an `order: 'ended'` page. */
export const endedCursor = (row: { id: string; updatedAt: number }): string => `${row.updatedAt}.${row.id}`;

function parseEndedCursor(cursor: string): { at: number; id: string } {
  const m = ENDED_CURSOR_RE.exec(cursor);
  const at = m ? Number(m[1]) : NaN;
  if (!m || !Number.isSafeInteger(at)) {
    throw new InvalidInputError('cursor', 'is not a cursor of an order=ended list (pass the nextCursor of the page before, unchanged)');
  }
  return { at, id: m[2]! };
}

/** Checks `order` and what it needs; returns whether the list is by end. */
function endedOrder(filter: TaskFilter): boolean {
  if (filter.order === undefined || filter.order === 'created') return false;
  if (filter.order !== 'ended') throw new InvalidInputError('order', 'must be "created" or "ended"');
  if (filter.state === undefined || !ENDED_ORDER_STATES.includes(filter.state)) {
    throw new InvalidInputError('order', `"ended" lists tasks by when they ended and needs state ${ENDED_ORDER_STATES.join(' or ')}`);
  }
  return true;
}

/**
 * The smallest string greater than every string that starts with `p`, in code
 * point order; null if there is none (every code point of `p` is U+10FFFF).
 * Surrogate code points are skipped (they cannot be stored as text).
 */
export function prefixEnd(p: string): string | null {
  const cps = [...p].map((c) => c.codePointAt(0)!);
  while (cps.length > 0) {
    const last = cps.pop()!;
    if (last < 0x10ffff) {
      const next = last + 1 === 0xd800 ? 0xe000 : last + 1;
      return String.fromCodePoint(...cps, next);
    }
  }
  return null;
}

/**
 * A time bound as the stored column compares it: created_at values are whole
 * ms, so `>= x` and `< x` mean the same with x rounded up; clamped to the safe
 * integers (every BIGINT time is within them).
 */
function timeBound(field: string, v: number): number {
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new InvalidInputError(field, 'must be a time (epoch milliseconds)');
  return Math.min(Math.max(Math.ceil(v), Number.MIN_SAFE_INTEGER), Number.MAX_SAFE_INTEGER);
}

/** The larger / smaller of two ASCII strings (ids and ULID bounds; JS order is byte order for ASCII). */
const maxOf = (a: string | undefined, b: string) => (a === undefined || b > a ? b : a);
const minOf = (a: string | undefined, b: string) => (a === undefined || b < a ? b : a);

/**
 * The WHERE conditions (joined with AND by the caller; empty: no filter) for
 * `filter` on the tasks table aliased `t`. `param` registers a value and
 * returns its placeholder.
 */
export function taskListConditions(filter: TaskFilter, param: (value: unknown) => string): string[] {
  const where: string[] = [];
  const ended = endedOrder(filter);
  // Ended: a literal of ENDED_ORDER_STATES (endedOrder checked it), for the partial index (see there).
  if (ended) where.push(`t.state = '${filter.state}'`, ENDED_INDEX_MARK);
  else if (filter.state !== undefined) where.push(`t.state = ${param(filter.state)}`);
  if (filter.owner !== undefined) where.push(`t.owner = ${param(filter.owner)}`);
  if (filter.scheduleId !== undefined) where.push(`t.schedule_id = ${param(filter.scheduleId)}`);
  if (filter.namePrefix !== undefined && filter.namePrefix !== '') {
    where.push(`t.name >= ${param(filter.namePrefix)}`);
    const end = prefixEnd(filter.namePrefix);
    if (end !== null) where.push(`t.name < ${param(end)}`);
  }
  // One id range from the prefix, the time range and the cursor.
  let from: string | undefined;
  let to: string | undefined;
  if (filter.idPrefix !== undefined) {
    if (typeof filter.idPrefix !== 'string' || !ID_PREFIX_RE.test(filter.idPrefix)) {
      throw new InvalidInputError('id', 'must be 1 to 26 characters of a task id (Crockford base32, upper case)');
    }
    from = filter.idPrefix;
    to = prefixEnd(filter.idPrefix)!;
  }
  if (filter.createdAfter !== undefined) {
    const a = timeBound('createdAfter', filter.createdAfter);
    from = maxOf(from, smallestTaskIdAt(a));
    where.push(`t.created_at >= ${param(a)}`);
  }
  if (filter.createdBefore !== undefined) {
    const b = timeBound('createdBefore', filter.createdBefore);
    to = minOf(to, smallestTaskIdAt(Math.min(b + ID_CLOCK_STEP_MS, Number.MAX_SAFE_INTEGER)));
    where.push(`t.created_at < ${param(b)}`);
  }
  if (filter.cursor !== undefined && ended) {
    const c = parseEndedCursor(filter.cursor);
    where.push(`(t.updated_at, t.id) < (${param(c.at)}, ${param(c.id)})`);
  } else if (filter.cursor !== undefined) {
    // A task id never holds a dot: this is an order=ended page's cursor, which means nothing in id order.
    if (ENDED_CURSOR_RE.test(filter.cursor)) throw new InvalidInputError('cursor', 'is the cursor of an order=ended list: pass order=ended with it');
    // A cursor is a task id; anything else (not ASCII) is compared on its own, still correctly.
    if (ASCII_RE.test(filter.cursor)) to = minOf(to, filter.cursor);
    else where.push(`t.id < ${param(filter.cursor)}`);
  }
  if (from !== undefined) where.push(`t.id >= ${param(from)}`);
  if (to !== undefined) where.push(`t.id < ${param(to)}`);
  return where;
}

/** The list's ORDER BY (without the keywords): newest created first, or newest end first (`order: 'ended'`). */
export function taskListOrder(filter: TaskFilter): string {
  return filter.order === 'ended' ? 't.updated_at DESC, t.id DESC' : 't.id DESC';
}

/**
 * `SELECT <columns> FROM <from> [WHERE ...] ORDER BY <taskListOrder> LIMIT <limit + 1>`;
 * `limitOf` writes the LIMIT's placeholder (SQLite: sqliteLimit, sqlite/records.ts).
 */
export function taskListSql(filter: TaskFilter, columns: string, from: string, param: (value: unknown) => string, limitOf: (placeholder: string) => string = (p) => p): string {
  const where = taskListConditions(filter, param);
  return `SELECT ${columns} FROM ${from}${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY ${taskListOrder(filter)} LIMIT ${limitOf(param(filter.limit + 1))}`;
}

/** A task page and its keyset cursor (by the list's order) from `limit + 1` rows. */
export function taskPageOf<T extends { id: string; updatedAt: number }>(rows: T[], filter: TaskFilter): { items: T[]; nextCursor: string | null } {
  const items = rows.slice(0, filter.limit);
  const last = items[items.length - 1];
  if (rows.length <= filter.limit || !last) return { items, nextCursor: null };
  return { items, nextCursor: filter.order === 'ended' ? endedCursor(last) : last.id };
}

/** The page and its keyset cursor from `limit + 1` rows. */
export function pageOf<T extends { id: string }>(rows: T[], limit: number): { items: T[]; nextCursor: string | null } {
  const items = rows.slice(0, limit);
  return { items, nextCursor: rows.length > limit ? items[items.length - 1]!.id : null };
}

/**
 * What a summary row reads: named task columns (never the script, env or args)
 * and the current attempt's, joined by primary key. `error` is the final
 * result's error for a terminal task (its result is final), else the current
 * attempt's; `resultError` is the dialect's JSON extraction of result.error.
 * `outcome` likewise: the result's outcome (`resultOutcome`, its extraction;
 * the stores pass it, a caller that does not need it may leave NULL) for a
 * terminal task, else the current attempt's state once it has ended.
 */
export function summaryColumns(resultError: string, resultOutcome = 'NULL'): string {
  return `t.id, t.owner, t.name, t.kind, t.state, t.priority, t.attempts, t.retries_used, t.run_after, t.created_at, t.updated_at,
  t.schedule_id, t.scheduled_at, t.dag_run_id, t.dag_step, t.skip_reason,
  a.worker_id, a.started_at, a.ended_at, a.duration_ms, a.exit_code, a.signal,
  CASE WHEN t.result IS NOT NULL AND t.state IN ('succeeded', 'failed', 'cancelled') THEN ${resultError} ELSE a.error END AS error,
  CASE WHEN t.result IS NOT NULL AND t.state IN ('succeeded', 'failed', 'cancelled') THEN ${resultOutcome}
       WHEN a.state <> 'running' THEN a.state END AS outcome`;
}

export const SUMMARY_FROM = 'tasks t LEFT JOIN attempts a ON a.id = t.current_attempt_id';

/** getTaskSummaries takes at most this many ids. */
export const MAX_SUMMARY_IDS = 1000;

export function checkSummaryIds(ids: readonly string[]): void {
  if (!Array.isArray(ids) || ids.length > MAX_SUMMARY_IDS) throw new InvalidInputError('ids', `must be an array of at most ${MAX_SUMMARY_IDS} task ids`);
}
