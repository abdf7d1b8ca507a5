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
 * (live/cache-patcher.ts). A DAG schedule's runs follow by the interval only:
 * their steps' tasks carry the run's id, not the schedule's.
 */
export const SCHEDULES_REFRESH_MS = 2_000;

export const schedulesQuery = (refreshMs = SCHEDULES_REFRESH_MS) =>
  queryOptions({
    queryKey: qk.scheduleList,
    queryFn: ({ signal }) => api.schedules(signal),
    refetchInterval: refreshMs,
  });

/**
 * The next fire times of an unsaved expression (the Add schedule form). Refetched
 * when the first listed time has passed, so the list never shows times gone by;
 * a 400 (bad expression or zone) is an answer, not retried.
 */
export const cronNextQuery = (schedule: string, tz: string) =>
  queryOptions({
    queryKey: qk.cronNext(schedule, tz),
    queryFn: ({ signal }) => api.cronNext({ schedule, tz }, signal),
    staleTime: 0,
    refetchInterval: (q) => {
      const first = q.state.data?.next[0];
      return first === undefined ? false : Math.min(60_000, Math.max(1000, Date.parse(first) - Date.now() + 100));
    },
  });

export const scheduleDetailQuery = (owner: string, name: string, id: string, refreshMs = SCHEDULES_REFRESH_MS) =>
  queryOptions({
    queryKey: qk.scheduleDetail(owner, name, id),
    queryFn: ({ signal }) => api.schedule(owner, name, signal),
    refetchInterval: refreshMs,
  });

/**
 * DAG definitions are not in the stream (only tasks are): the list is
 * refetched every `refreshMs` and on focus; a definition is immutable per
 * version, and a new version shows on the next refetch.
 */
export const DAGS_REFRESH_MS = 15_000;

export const dagListQuery = (refreshMs = DAGS_REFRESH_MS) =>
  queryOptions({
    queryKey: qk.dagList,
    queryFn: ({ signal }) => api.dags({}, signal),
    refetchInterval: refreshMs,
  });

/** The DAGs `user` owns: what a schedule of theirs may run (POST /v1/schedules takes only the caller's own DAG). */
export const ownDagListQuery = (user: string, refreshMs = DAGS_REFRESH_MS) =>
  queryOptions({
    queryKey: qk.ownDagList(user),
    queryFn: ({ signal }) => api.dags({ owner: user }, signal),
    refetchInterval: refreshMs,
  });

export const dagDetailQuery = (owner: string, name: string, refreshMs = DAGS_REFRESH_MS) =>
  queryOptions({
    queryKey: qk.dagDetail(owner, name),
    queryFn: ({ signal }) => api.dag(owner, name, signal),
    refetchInterval: refreshMs,
  });

/**
 * A DAG's runs and one run's detail follow their steps' tasks on the stream
 * (live/dag-run-patcher.ts: a step's state at once, then a debounced
 * refetch). The slow interval is the fallback for anything the stream does
 * not carry, and for a stream that is reconnecting.
 */
export const DAG_RUN_FALLBACK_MS = 10_000;

export const dagRunListQuery = (owner: string, dag: string) =>
  queryOptions({
    queryKey: qk.dagRunList(owner, dag),
    queryFn: ({ signal }) => api.dagRuns(owner, dag, signal),
    refetchInterval: DAG_RUN_FALLBACK_MS,
  });

export const dagRunDetailQuery = (id: string) =>
  queryOptions({
    queryKey: qk.dagRunDetail(id),
    queryFn: ({ signal }) => api.dagRun(id, signal),
    // An ended run changes only when retried (which this tab does, or the stream reports).
    refetchInterval: (q) => (q.state.data?.run.state === 'running' ? DAG_RUN_FALLBACK_MS : 60_000),
  });
