/**
 * Patches one cached page of GET /v1/tasks with summaries from the stream.
 *
 * - A row already on the page is replaced by its newer summary (compared by
 *   updatedAt, so a stale stream batch never overwrites a fresher refetch).
 *   It stays where it is even when its new state no longer matches the
 *   filter: rows do not jump out from under the pointer; `stale` marks them.
 * - On a first page (no cursor), a task that is not on it but matches the
 *   filter and sorts inside the page is merged in, in the list's order: by id
 *   (newest created first; a task id is a ULID of its creation time), or with
 *   `order: 'ended'` by updatedAt then id (newest end first: a failed or
 *   cancelled task's updatedAt is when it ended). The page then keeps its
 *   length: the rows pushed off the end are dropped and `nextCursor` becomes
 *   the server's keyset cursor of the last kept row (its id, or
 *   "<updatedAt ms>.<id>"), so the next page starts exactly after what is
 *   shown.
 * Returns null when nothing changed (the cache is left alone).
 */
import type { ListTasksQuery, TaskPage, TaskSummary } from '../api/types';
import { matchesFilter } from './filter-match';

export interface LivePage extends TaskPage {
  /** Ids of rows that no longer match the page's filter since a live change. */
  stale?: string[];
  /** Ids of rows the stream merged in (shown highlighted for a moment). */
  fresh?: string[];
}

/** Negative when `a` comes before `b` in the list's order (newest first either way). */
function listOrder(order: ListTasksQuery['order']): (a: TaskSummary, b: TaskSummary) => number {
  const byId = (a: TaskSummary, b: TaskSummary) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);
  if (order !== 'ended') return byId;
  return (a, b) => {
    const ta = Date.parse(a.updatedAt);
    const tb = Date.parse(b.updatedAt);
    return ta !== tb ? tb - ta : byId(a, b);
  };
}

/** The server's keyset cursor of a row (store/task-list.ts). */
function cursorOf(row: TaskSummary, order: ListTasksQuery['order']): string {
  return order === 'ended' ? `${Date.parse(row.updatedAt)}.${row.id}` : row.id;
}

export function patchTaskPage(page: LivePage, filter: ListTasksQuery, byId: ReadonlyMap<string, TaskSummary>, limit: number): LivePage | null {
  let changed = false;
  const stale = new Set(page.stale ?? []);
  const rows = page.tasks.map((row) => {
    const next = byId.get(row.id);
    if (!next || next.updatedAt < row.updatedAt || next === row) return row;
    changed = true;
    if (matchesFilter(next, filter)) stale.delete(row.id);
    else stale.add(row.id);
    return next;
  });
  let nextCursor = page.nextCursor;
  const fresh = new Set(page.fresh ?? []);
  if (filter.cursor === undefined) {
    const present = new Set(rows.map((r) => r.id));
    const last = rows[rows.length - 1];
    const cmp = listOrder(filter.order);
    const added = [...byId.values()].filter(
      (t) => !present.has(t.id) && matchesFilter(t, filter) && (page.nextCursor === null || (last !== undefined && cmp(t, last) < 0)),
    );
    if (added.length > 0) {
      changed = true;
      for (const t of added) fresh.add(t.id);
      rows.push(...added);
      rows.sort(cmp);
      if (rows.length > limit) {
        rows.length = limit;
        nextCursor = cursorOf(rows[rows.length - 1]!, filter.order);
      }
    }
  }
  if (!changed) return null;
  const shown = new Set(rows.map((r) => r.id));
  return { tasks: rows, nextCursor, stale: [...stale].filter((id) => shown.has(id)), fresh: [...fresh].filter((id) => shown.has(id)) };
}
