/** Query definitions shared by pages (keys from query-keys.ts, fetchers from endpoints.ts). */
import { keepPreviousData, queryOptions } from '@tanstack/react-query';
import { api } from './endpoints';
import { qk } from './query-keys';
import type { ListTasksQuery } from './types';

export const taskListQuery = (f: ListTasksQuery) =>
  queryOptions({
    queryKey: qk.taskList(f),
    queryFn: ({ signal }) => api.listTasks(f, signal),
    placeholderData: keepPreviousData,
  });

export const taskDetailQuery = (id: string) =>
  queryOptions({
    queryKey: qk.taskDetail(id),
    queryFn: ({ signal }) => api.getTask(id, signal),
  });

export const countsQuery = () =>
  queryOptions({
    queryKey: qk.counts,
    queryFn: ({ signal }) => api.counts(signal),
  });

/** The last hour, per minute. The window moves on each refetch (every minute, and after changes). */
export const minutesQuery = () =>
  queryOptions({
    queryKey: qk.minutes,
    queryFn: ({ signal }) => {
      const until = Date.now();
      return api.minutes(new Date(until - 3600_000).toISOString(), new Date(until).toISOString(), signal).then((r) => ({ ...r, until }));
    },
    refetchInterval: 60_000,
  });

/**
 * Heartbeats are not in the stream (they would flood it): states come live, and
 * the list is refetched every `refreshMs` so "last heartbeat" ages stay true to
 * within about one heartbeat (5 s by default) where they are shown.
 */
export const workersQuery = (refreshMs = 15_000) =>
  queryOptions({
    queryKey: qk.workers,
    queryFn: ({ signal }) => api.workers(signal),
    refetchInterval: refreshMs,
  });
