/**
 * Patches one cached page of GET /v1/tasks with summaries from the stream.
 *
 * - A row already on the page is replaced by its newer summary (compared by
 *   updatedAt, so a stale stream batch never overwrites a fresher refetch).
 *   It stays where it is even when its new state no longer matches the
 *   filter: rows do not jump out from under the pointer; `stale` marks them.
 * - On a first page (no cursor), a task that is not on it but matches the
 *   filter and sorts inside the page (ids are newest first; a task id is a
 *   ULID of its creation time) is merged in by id. The page then keeps its
 *   length: the rows pushed off the end are dropped and `nextCursor` becomes
 *   the last kept id, the server's keyset cursor ("ids below this one"), so
 *   the next page starts exactly after what is shown.
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
    const added = [...byId.values()].filter(
      (t) => !present.has(t.id) && matchesFilter(t, filter) && (page.nextCursor === null || (last !== undefined && t.id > last.id)),
    );
    if (added.length > 0) {
      changed = true;
      for (const t of added) fresh.add(t.id);
      rows.push(...added);
      rows.sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
      if (rows.length > limit) {
        rows.length = limit;
        nextCursor = rows[rows.length - 1]!.id;
      }
    }
  }
  if (!changed) return null;
  const shown = new Set(rows.map((r) => r.id));
  return { tasks: rows, nextCursor, stale: [...stale].filter((id) => shown.has(id)), fresh: [...fresh].filter((id) => shown.has(id)) };
}
