/**
 * Every API call the dashboard makes, one function each. Shapes: ./types.ts.
 */
import { request } from './http';
import type {
  CountsAnswer,
  CreateScheduleRequest,
  Dag,
  DagPage,
  DagRun,
  DagRunDetail,
  DagRunPage,
  CronNext,
  CronNextQuery,
  ListTasksQuery,
  LogChunkPage,
  LogChunksQuery,
  Me,
  MinuteStat,
  ScheduleDetail,
  SchedulePage,
  Schedule,
  ScheduleRunNow,
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
  /** A task schedule's answer is the task it made; a DAG schedule's, the run it started (409 when its DAG is gone or refuses its parameters). */
  runSchedule: (owner: string, name: string) => request<ScheduleRunNow>('POST', `/v1/schedules/${enc(name)}/run`, { query: { owner } }),
  /** Creates one of the caller's own schedules; 409 when the caller already has one of that name. */
  createSchedule: (body: CreateScheduleRequest) => request<{ schedule: Schedule }>('POST', '/v1/schedules', { body }),
  deleteSchedule: (owner: string, name: string) => request<{ deleted: boolean; schedule: Schedule }>('DELETE', `/v1/schedules/${enc(name)}`, { query: { owner } }),
  /**
   * DAGs: the per-name routes take the owner like schedules (an admin may read
   * and run anyone's; a name is unique per owner); runs are by id.
   */
  /** Without `owner`, everyone's for an admin (a user always gets their own). */
  dags: (q: { owner?: string }, signal?: AbortSignal) => request<DagPage>('GET', '/v1/dags', { query: { ...q, limit: 500 }, signal }),
  dag: (owner: string, name: string, signal?: AbortSignal) => request<{ dag: Dag }>('GET', `/v1/dags/${enc(name)}`, { query: { owner }, signal }),
  /** Starts a run of the DAG's newest version; a bad parameter is a 400 naming `params.KEY`. */
  startDagRun: (owner: string, name: string, params: Record<string, string>) =>
    request<{ run: DagRun }>('POST', `/v1/dags/${enc(name)}/runs`, { query: { owner }, body: { params } }),
  dagRuns: (owner: string, dag: string, signal?: AbortSignal) =>
    request<DagRunPage>('GET', '/v1/dag-runs', { query: { dag, owner, limit: 100 }, signal }),
  dagRun: (id: string, signal?: AbortSignal) => request<DagRunDetail>('GET', `/v1/dag-runs/${enc(id)}`, { signal }),
  /** 409 once the run has ended. */
  cancelDagRun: (id: string) => request<{ run: DagRun }>('POST', `/v1/dag-runs/${enc(id)}/cancel`),
  /** 409 while it runs, when nothing failed, or while a cancelled step's attempt is still being stopped. */
  retryDagRun: (id: string) => request<{ run: DagRun }>('POST', `/v1/dag-runs/${enc(id)}/retry`),

  /** The next fire times of an unsaved expression (nothing is created); a bad schedule or tz is a 400 naming it. */
  cronNext: (q: CronNextQuery, signal?: AbortSignal) => request<CronNext>('GET', '/v1/cron/next', { query: { ...q }, signal }),
};
