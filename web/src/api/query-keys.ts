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
  scheduleDetail: (owner: string, name: string) => ['schedules', 'detail', owner, name] as const,
};
