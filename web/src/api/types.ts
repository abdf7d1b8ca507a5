/**
 * The JSON shapes the dashboard reads from the Drover API (docs/api.md). The
 * API's wire types are declared once, in src/client/types.ts (the typed REST
 * client the CLI uses), and re-exported here; only what exists for the
 * dashboard alone is declared in this file: the task-state list and terminal
 * set (values, for menus and checks) and the session shapes (/v1/me,
 * /v1/session), which only a browser uses; the schedule shapes come from
 * ./schedule-types.ts, which widens the client's for DAG schedules. The
 * imports are type-only, so nothing from src/ is bundled.
 */
import type { Role, TaskState } from '../../../src/client/types.js';
export type { CatchupPolicy, CronNext, CronNextQuery, OverlapPolicy } from '../../../src/client/schedule-types.js';
export type { CreateScheduleRequest, Schedule, ScheduleDag, ScheduleDetail, ScheduleRunInfo, ScheduleRunNow, SchedulePage } from './schedule-types';

export type {
  Dag,
  DagPage,
  DagRun,
  DagRunDetail,
  DagRunListItem,
  DagRunPage,
  DagRunState,
  DagRunStep,
  DagStep,
  DagSummary,
  SkipReason,
  StepCondition,
} from '../../../src/client/dag-types.js';

export type {
  Attempt,
  AttemptState,
  CountsAnswer,
  ListTasksQuery,
  LogChunk,
  LogChunkPage,
  LogChunksQuery,
  MinuteStat,
  RetryPolicy,
  RunningAttemptRef,
  StateCounts,
  SubmitTaskRequest,
  Task,
  TaskDetail,
  TaskEvent,
  TaskPage,
  TaskResult,
  TaskState,
  TaskSummary,
  WorkerInfo,
  WorkerState,
} from '../../../src/client/types.js';

export const TASK_STATES = ['ready', 'waiting', 'running', 'retrying', 'succeeded', 'failed', 'cancelled', 'skipped'] as const satisfies readonly TaskState[];
/** Fails to compile when TASK_STATES misses a TaskState. */
type Assert<T extends true> = T;
export type _EveryTaskStateListed = Assert<[Exclude<TaskState, (typeof TASK_STATES)[number]>] extends [never] ? true : false>;
/** The states the server lists newest end first (order=ended; src/core/task-state.ts ENDED_ORDER_STATES): the rest have only the default order. */
export const ENDED_ORDER_STATES: readonly TaskState[] = ['failed', 'cancelled'];

export const TERMINAL_STATES: ReadonlySet<TaskState> = new Set<TaskState>(['succeeded', 'failed', 'cancelled', 'skipped']);

/** A person's role: a worker token can neither sign in nor call /v1/me (src/server/routes/session.ts). */
export type PersonRole = Exclude<Role, 'worker'>;

/** GET /v1/me. */
export interface Me {
  user: string;
  role: PersonRole;
  via: 'cookie' | 'bearer';
  expiresAt: string | null;
}

/** POST /v1/session. */
export interface SessionInfo {
  user: string;
  role: PersonRole;
  expiresAt: string;
}
