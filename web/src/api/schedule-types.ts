/**
 * The /v1/schedules shapes (docs/api.md, "Schedules"), shared with the CLI
 * (src/client/schedule-types.ts): a schedule runs a task or a DAG, so a DAG
 * schedule's `task` is null. The create body is narrowed here to exactly one
 * of `task` and `dag`, which the form builds.
 */
import type { CreateScheduleRequest as SharedCreateScheduleRequest } from '../../../src/client/schedule-types.js';

export type { Schedule, ScheduleDag, ScheduleDetail, SchedulePage, ScheduleRunInfo, ScheduleRunNow } from '../../../src/client/schedule-types.js';

/** POST /v1/schedules: exactly one of `task` (each run is a task) and `dag` (each run is a run of the caller's DAG of that name). */
export type CreateScheduleRequest = Omit<SharedCreateScheduleRequest, 'task' | 'dag'> &
  ({ task: NonNullable<SharedCreateScheduleRequest['task']>; dag?: never } | { dag: { name: string; params?: Record<string, string> }; task?: never });
