/**
 * The Tasks page's filter lives in the URL (?state=&name=&owner=&after=&before=&id=&order=&cursor=&limit=),
 * so a view can be shared and the back button steps through filter changes and pages.
 * Values are checked here; anything malformed is dropped rather than sent.
 */
import { useCallback, useMemo } from 'react';
import { useLocation, useNavigate, useSearchParams } from 'react-router';
import { ENDED_ORDER_STATES, TASK_STATES, type ListTasksQuery, type TaskState } from '../api/types';

export const PAGE_SIZES = [25, 50, 100, 200, 500] as const;
export const DEFAULT_PAGE_SIZE = 50;
const ID_PREFIX = /^[0-9A-HJKMNP-TV-Z]{1,26}$/;
/** A task id, or with order=ended "<updatedAt ms>.<task id>" (the server's cursors). */
const CURSOR = /^(?:\d{1,16}\.)?[0-9A-HJKMNP-TV-Z]{26}$/;

export function parseFilter(q: URLSearchParams): ListTasksQuery {
  const f: ListTasksQuery = {};
  const state = q.get('state');
  if (state && (TASK_STATES as readonly string[]).includes(state)) f.state = state as TaskState;
  const name = q.get('name');
  if (name) f.name = name.slice(0, 200);
  const owner = q.get('owner');
  if (owner) f.owner = owner.slice(0, 200);
  const after = q.get('after');
  if (after && !Number.isNaN(Date.parse(after))) f.createdAfter = new Date(after).toISOString();
  const before = q.get('before');
  if (before && !Number.isNaN(Date.parse(before))) f.createdBefore = new Date(before).toISOString();
  const id = q.get('id')?.trim().toUpperCase();
  if (id && ID_PREFIX.test(id)) f.id = id;
  if (q.get('order') === 'ended' && f.state && ENDED_ORDER_STATES.includes(f.state)) f.order = 'ended';
  const cursor = q.get('cursor');
  // A cursor belongs to its order: one of the other order would be refused by the server.
  if (cursor && CURSOR.test(cursor) && cursor.includes('.') === (f.order === 'ended')) f.cursor = cursor;
  const limit = Number(q.get('limit'));
  f.limit = (PAGE_SIZES as readonly number[]).includes(limit) ? limit : DEFAULT_PAGE_SIZE;
  return f;
}

export function filterToSearch(f: ListTasksQuery): string {
  const q = new URLSearchParams();
  if (f.state) q.set('state', f.state);
  if (f.name) q.set('name', f.name);
  if (f.owner) q.set('owner', f.owner);
  if (f.createdAfter) q.set('after', f.createdAfter);
  if (f.createdBefore) q.set('before', f.createdBefore);
  if (f.id) q.set('id', f.id);
  if (f.order === 'ended' && f.state && ENDED_ORDER_STATES.includes(f.state)) q.set('order', 'ended');
  if (f.cursor) q.set('cursor', f.cursor);
  if (f.limit && f.limit !== DEFAULT_PAGE_SIZE) q.set('limit', String(f.limit));
  const s = q.toString();
  return s ? `?${s}` : '';
}

interface PagerState {
  /** Cursors of the pages before this one ('' = the first page), so "Newer" steps back. */
  prev?: string[];
}

export function useTaskFilter() {
  const [params] = useSearchParams();
  const navigate = useNavigate();
  const location = useLocation();
  const filter = useMemo(() => parseFilter(params), [params]);
  const prev = ((location.state as PagerState | null)?.prev ?? []).filter((c) => c === '' || CURSOR.test(c));

  /** A new filter starts at the newest page. */
  const setFilter = useCallback(
    (f: ListTasksQuery) => navigate({ search: filterToSearch({ ...f, cursor: undefined }) }),
    [navigate],
  );
  const older = useCallback(
    (nextCursor: string) => navigate({ search: filterToSearch({ ...filter, cursor: nextCursor }) }, { state: { prev: [...prev, filter.cursor ?? ''] } satisfies PagerState }),
    [navigate, filter, prev],
  );
  const newer = useCallback(() => {
    const back = prev[prev.length - 1];
    navigate({ search: filterToSearch({ ...filter, cursor: back || undefined }) }, { state: { prev: prev.slice(0, -1) } satisfies PagerState });
  }, [navigate, filter, prev]);
  const newest = useCallback(() => navigate({ search: filterToSearch({ ...filter, cursor: undefined }) }), [navigate, filter]);
  return { filter, setFilter, older, newer, newest, pageNumber: prev.length + 1, hasNewer: filter.cursor !== undefined };
}
