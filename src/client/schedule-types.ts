/** The /v1/schedules payloads (docs/api.md, "Schedules"); times are ISO 8601 strings. */
import type { SubmitTaskRequest, Task, TaskState } from './types.js';

export type OverlapPolicy = 'allow' | 'forbid' | 'replace';
export type CatchupPolicy = 'none' | 'latest' | 'all';

export interface CreateScheduleRequest {
  /** 1..100 of A-Z a-z 0-9 . _ -, unique per owner. */
  name: string;
  /** Cron: 5 fields, or 6 with a leading seconds field; @hourly, @daily, @weekly, @monthly. */
  schedule: string;
  tz?: string;
  overlap?: OverlapPolicy;
  catchup?: CatchupPolicy;
  maxCatchup?: number;
  /** What each run creates: a submit body without runAt/delay. */
  task: Omit<SubmitTaskRequest, 'runAt' | 'delay'>;
}

/** What each run creates: a task's spec fields, as task JSON shows them (env values only for the owner). */
export type TaskTemplate = Pick<
  Task,
  'name' | 'kind' | 'command' | 'args' | 'script' | 'interpreter' | 'env' | 'envRedacted' | 'timeoutMs' | 'cwd' | 'retry' | 'priority' | 'labels' | 'requires'
>;

export interface Schedule {
  id: string;
  name: string;
  owner: string;
  schedule: string;
  tz: string;
  overlap: OverlapPolicy;
  catchup: CatchupPolicy;
  maxCatchup: number;
  paused: boolean;
  /** Null while paused, or when the expression has no more times. */
  nextFireAt: string | null;
  lastSlotAt: string | null;
  createdAt: string;
  updatedAt: string;
  task: TaskTemplate;
}

export interface ScheduleRunInfo {
  slotAt: string;
  outcome: 'fired' | 'skipped';
  /** Why a slot was skipped (overlap_forbid, catchup_none, catchup_capped, ...). */
  reason: string | null;
  taskId: string | null;
  taskState: TaskState | null;
  /** Task created minus slot; null when skipped. */
  latenessMs: number | null;
}

export interface ScheduleDetail {
  schedule: Schedule;
  /** The next fire times after now. */
  next: string[];
  /** Recent runs, newest slot first. */
  runs: ScheduleRunInfo[];
}

export interface SchedulePage {
  schedules: Schedule[];
  nextCursor: string | null;
}

export interface ListSchedulesQuery {
  /** Admins only. */
  owner?: string;
  limit?: number;
  cursor?: string;
}

export interface ScheduleRunNow {
  task: Task;
}
