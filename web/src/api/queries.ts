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

/**
 * Schedules are not in the stream: the list and each shown schedule's detail
 * (next times, recent runs) are refetched every `refreshMs`, and at once
 * (debounced) when the stream reports a change to a task a schedule made
 * (live/cache-patcher.ts).
 */
export const SCHEDULES_REFRESH_MS = 2_000;

export const schedulesQuery = (refreshMs = SCHEDULES_REFRESH_MS) =>
  queryOptions({
    queryKey: qk.scheduleList,
    queryFn: ({ signal }) => api.schedules(signal),
    refetchInterval: refreshMs,
  });

export const scheduleDetailQuery = (owner: string, name: string, refreshMs = SCHEDULES_REFRESH_MS) =>
  queryOptions({
    queryKey: qk.scheduleDetail(owner, name),
    queryFn: ({ signal }) => api.schedule(owner, name, signal),
    refetchInterval: refreshMs,
  });
