/**
 * Turns a validated POST /v1/schedules body into a ScheduleSpec: the core's
 * parsers for the expression, zone and policies (core/cron), the task
 * submit rules for the template (task-input.ts). Throws InvalidInputError
 * naming the field; a template's field is named under `task.` (task.command).
 */
import { InvalidInputError } from '../core/errors.js';
import { parseOverlapPolicy } from '../core/cron/overlap.js';
import { DEFAULT_MAX_CATCHUP, parseCatchupPolicy, validateMaxCatchup } from '../core/cron/plan-due.js';
import { parseSchedule, type Schedule } from '../core/cron/schedule.js';
import type { ScheduleSpec } from '../store/schedules.js';
import type { ScheduleCreateBody } from './schedule-schemas.js';
import { toTaskSpec } from './task-input.js';

export const DEFAULT_OVERLAP = 'allow';
export const DEFAULT_CATCHUP = 'latest';

/** The spec and its parsed schedule (for the first fire time). A template without a name is named after the schedule. */
export function toScheduleSpec(body: ScheduleCreateBody): { spec: ScheduleSpec; schedule: Schedule } {
  const schedule = parseSchedule({ expr: body.schedule, tz: body.tz });
  const overlap = body.overlap === undefined ? DEFAULT_OVERLAP : parseOverlapPolicy(body.overlap);
  const catchup = body.catchup === undefined ? DEFAULT_CATCHUP : parseCatchupPolicy(body.catchup);
  const maxCatchup = body.maxCatchup === undefined ? DEFAULT_MAX_CATCHUP : validateMaxCatchup(body.maxCatchup);
  let template;
  try {
    template = toTaskSpec({ ...body.task, name: body.task.name ?? body.name });
  } catch (e) {
    if (e instanceof InvalidInputError) throw new InvalidInputError(`task.${e.field}`, e.reason);
    throw e;
  }
  return { spec: { name: body.name, expr: schedule.expr, tz: schedule.tz, overlap, catchup, maxCatchup, template }, schedule };
}
