/**
 * TanStack Query keys. The live stream patches caches by these prefixes
 * (live/patch-caches.ts), so every query of a kind must start with its prefix.
 */
import type { ListTasksQuery } from './types';

export const qk = {
  me: ['me'] as const,
  taskLists: ['tasks', 'list'] as const,
  taskList: (f: ListTasksQuery) => ['tasks', 'list', f] as const,
  taskDetails: ['tasks', 'detail'] as const,
  taskDetail: (id: string) => ['tasks', 'detail', id] as const,
  counts: ['stats', 'counts'] as const,
  minutes: ['stats', 'minutes'] as const,
  workers: ['workers'] as const,
  schedules: ['schedules'] as const,
  scheduleList: ['schedules', 'list'] as const,
  /** With the id: a schedule removed and added again under its name is another schedule, with none of the old one's runs. */
  scheduleDetail: (owner: string, name: string, id: string) => ['schedules', 'detail', owner, name, id] as const,
  dags: ['dags'] as const,
  dagList: ['dags', 'list'] as const,
  /** One user's own DAGs (the Add schedule form's choices); not under 'list', which is everyone's for an admin. */
  ownDagList: (user: string) => ['dags', 'own', user] as const,
  dagDetail: (owner: string, name: string) => ['dags', 'detail', owner, name] as const,
  /** Runs change with their steps' tasks: the stream refetches these (live/dag-run-patcher.ts). */
  dagRuns: ['dag-runs'] as const,
  dagRunLists: ['dag-runs', 'list'] as const,
  dagRunList: (owner: string, dag: string) => ['dag-runs', 'list', owner, dag] as const,
  dagRunDetails: ['dag-runs', 'detail'] as const,
  dagRunDetail: (id: string) => ['dag-runs', 'detail', id] as const,
  /** Not under 'schedules': a change to a scheduled task (which refetches those) does not change an expression's times. */
  cronNext: (schedule: string, tz: string) => ['cron-next', schedule, tz] as const,
};
