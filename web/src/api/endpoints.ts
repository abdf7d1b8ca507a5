/**
 * Every API call the dashboard makes, one function each. Shapes: ./types.ts.
 */
import { request } from './http';
import type {
  CountsAnswer,
  ListTasksQuery,
  LogChunkPage,
  LogChunksQuery,
  Me,
  MinuteStat,
  ScheduleDetail,
  SchedulePage,
  Schedule,
  SessionInfo,
  SubmitTaskRequest,
  Task,
  TaskDetail,
  TaskPage,
  WorkerInfo,
} from './types';

const enc = encodeURIComponent;

export const api = {
  me: (signal?: AbortSignal) => request<Me>('GET', '/v1/me', { signal }),
  signIn: (cred: { token: string } | { code: string }) => request<SessionInfo>('POST', '/v1/session', { body: cred }),
  signOut: () => request<void>('DELETE', '/v1/session'),

  listTasks: (f: ListTasksQuery, signal?: AbortSignal) => request<TaskPage>('GET', '/v1/tasks', { query: { ...f }, signal }),
  getTask: (id: string, signal?: AbortSignal) => request<TaskDetail>('GET', `/v1/tasks/${enc(id)}`, { signal }),
  cancelTask: (id: string) => request<{ task: Task }>('POST', `/v1/tasks/${enc(id)}/cancel`),
  retryTask: (id: string) => request<{ task: Task }>('POST', `/v1/tasks/${enc(id)}/retry`),
  submitTask: (body: SubmitTaskRequest, idempotencyKey: string) =>
    request<{ task: Task }>('POST', '/v1/tasks', { body, headers: { 'idempotency-key': idempotencyKey } }),

  /**
   * Log pages: neither `before` nor `after` gives the log's end; `before` pages
   * backwards; `after` with `wait` long-polls for what comes next.
   */
  logChunks: (id: string, q: Omit<LogChunksQuery, 'signal'>, signal?: AbortSignal) =>
    request<LogChunkPage>('GET', `/v1/tasks/${enc(id)}/log-chunks`, { query: q, signal }),

  counts: (signal?: AbortSignal) => request<CountsAnswer>('GET', '/v1/stats/counts', { signal }),
  minutes: (since: string, until: string, signal?: AbortSignal) =>
    request<{ minutes: MinuteStat[] }>('GET', '/v1/stats/minutes', { query: { since, until }, signal }),

  workers: (signal?: AbortSignal) => request<{ workers: WorkerInfo[] }>('GET', '/v1/workers', { signal }),
  drainWorker: (id: string) => request<{ workerId: string; draining: boolean }>('POST', `/v1/workers/${enc(id)}/drain`),

  /** Schedules: the per-name routes name the owner (an admin may act on anyone's; a name is unique per owner). */
  schedules: (signal?: AbortSignal) => request<SchedulePage>('GET', '/v1/schedules', { query: { limit: 500 }, signal }),
  schedule: (owner: string, name: string, signal?: AbortSignal) =>
    request<ScheduleDetail>('GET', `/v1/schedules/${enc(name)}`, { query: { owner }, signal }),
  pauseSchedule: (owner: string, name: string) => request<{ schedule: Schedule }>('POST', `/v1/schedules/${enc(name)}/pause`, { query: { owner } }),
  resumeSchedule: (owner: string, name: string) => request<{ schedule: Schedule }>('POST', `/v1/schedules/${enc(name)}/resume`, { query: { owner } }),
  runSchedule: (owner: string, name: string) => request<{ task: Task }>('POST', `/v1/schedules/${enc(name)}/run`, { query: { owner } }),
};
