/** The /v1/schedules payloads (docs/api.md, "Schedules"); times are ISO 8601 strings. */
import type { SubmitTaskRequest, Task, TaskState } from './types.js';
import type { DagRun, DagRunState } from './dag-types.js';

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
  /** What each run creates: a submit body without runAt/delay. Exactly one of task and dag. */
  task?: Omit<SubmitTaskRequest, 'runAt' | 'delay'>;
  /** A DAG schedule: each run is a run of the caller's DAG of this name (newest version then), with these parameters. */
  dag?: ScheduleDag;
}

export interface ScheduleDag {
  name: string;
  params: Record<string, string>;
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
  /** Null for a DAG schedule. */
  task: TaskTemplate | null;
  /** Null for a task schedule. */
  dag: ScheduleDag | null;
}

export interface ScheduleRunInfo {
  slotAt: string;
  outcome: 'fired' | 'skipped';
  /** Why a slot was skipped (overlap_forbid, catchup_none, catchup_capped, ...). */
  reason: string | null;
  taskId: string | null;
  taskState: TaskState | null;
  /** A DAG schedule's fired run (taskId is then null), and its current state. */
  dagRunId: string | null;
  dagRunState: DagRunState | null;
  /** Task created minus slot; null when skipped. */
  latenessMs: number | null;
  /** On the first and last slot a catch-up skipped (reason catchup_*): how many it skipped in all (exact false: at least); else null. */
  catchup: { skipped: number; exact: boolean } | null;
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

/** POST /v1/schedules/:name/run: the task made, or for a DAG schedule the run started. */
export type ScheduleRunNow = { task: Task; run?: undefined } | { run: DagRun; task?: undefined };

/** GET /v1/cron/next: `schedule` and `tz` as in CreateScheduleRequest (a bad one is the same 400, naming the same field). */
export interface CronNextQuery {
  schedule: string;
  tz?: string;
  /** Times strictly after this ISO 8601 time with a zone (default: the server's now). */
  from?: string;
  /** 1..100, default 5. */
  count?: number;
}

export interface CronNext {
  /** The expression as it would be stored (trimmed, single spaces). */
  schedule: string;
  tz: string;
  /** Ascending ISO times; fewer than `count` only when the expression has no more times. */
  next: string[];
}
