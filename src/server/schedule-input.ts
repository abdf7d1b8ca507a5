/**
 * Turns a validated POST /v1/schedules body into a ScheduleSpec: the core's
 * parsers for the expression, zone and policies (core/cron), the task
 * submit rules for the template (task-input.ts). Throws InvalidInputError
 * naming the field; a template's field is named under `task.` (task.command).
 */
import { InvalidInputError } from '../core/errors.js';
import { parseOverlapPolicy } from '../core/cron/overlap.js';
import { checkParams } from '../core/dag/params.js';
import { DEFAULT_MAX_CATCHUP, parseCatchupPolicy, validateMaxCatchup } from '../core/cron/plan-due.js';
import { parseSchedule, type Schedule } from '../core/cron/schedule.js';
import type { ScheduleSpec } from '../store/schedules.js';
import type { ScheduleCreateBody } from './schedule-schemas.js';
import { toTaskSpec } from './task-input.js';

export const DEFAULT_OVERLAP = 'allow';
export const DEFAULT_CATCHUP = 'latest';

/**
 * The spec and its parsed schedule (for the first fire time). A template
 * without a name is named after the schedule. Exactly one of `task` and
 * `dag`; a DAG schedule's parameters are checked here for their shape (the
 * DAG's own declared parameters are checked by the route, which reads it).
 */
export function toScheduleSpec(body: ScheduleCreateBody): { spec: ScheduleSpec; schedule: Schedule } {
  if (body.task !== undefined && body.dag !== undefined) throw new InvalidInputError('dag', 'give either task (each run is a task) or dag (each run is a run of that DAG), not both');
  if (body.task === undefined && body.dag === undefined) throw new InvalidInputError('task', 'required: what each run does (task), or dag naming a DAG to run');
  const schedule = parseSchedule({ expr: body.schedule, tz: body.tz });
  const overlap = body.overlap === undefined ? DEFAULT_OVERLAP : parseOverlapPolicy(body.overlap);
  const catchup = body.catchup === undefined ? DEFAULT_CATCHUP : parseCatchupPolicy(body.catchup);
  const maxCatchup = body.maxCatchup === undefined ? DEFAULT_MAX_CATCHUP : validateMaxCatchup(body.maxCatchup);
  const base = { name: body.name, expr: schedule.expr, tz: schedule.tz, overlap, catchup, maxCatchup };
  if (body.dag !== undefined) {
    let params: Record<string, string>;
    try {
      params = checkParams('params', body.dag.params ?? {});
    } catch (e) {
      if (e instanceof InvalidInputError) throw new InvalidInputError(`dag.${e.field}`, e.reason);
      throw e;
    }
    return { spec: { ...base, template: null, dag: { name: body.dag.name, params } }, schedule };
  }
  let template;
  try {
    template = toTaskSpec({ ...body.task!, name: body.task!.name ?? body.name });
  } catch (e) {
    if (e instanceof InvalidInputError) throw new InvalidInputError(`task.${e.field}`, e.reason);
    throw e;
  }
  return { spec: { ...base, template, dag: null }, schedule };
}
