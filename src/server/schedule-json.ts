/** Schedule records (epoch ms) → API JSON (ISO times), per docs/api.md "Schedules". */
import type { TaskSpec } from '../core/task.js';
import type { ScheduleRecord, ScheduleRun } from '../store/schedules.js';
import { isoTime } from './iso-time.js';
import { specJson } from './serialize.js';

const iso = (t: number | null): string | null => (t === null ? null : isoTime(t));

/** The template as `viewer` may see it: env values only for the schedule's owner (as for a task). */
export function templateJson(t: TaskSpec, owner: string, viewer: string) {
  return specJson(t, viewer !== owner);
}

/** A DAG schedule's parameter values go only to its owner (as a DAG run's and a template's env values); others get the keys with "" values. */
export function scheduleJson(s: ScheduleRecord, viewer: string) {
  return {
    id: s.id,
    name: s.name,
    owner: s.owner,
    schedule: s.expr,
    tz: s.tz,
    overlap: s.overlap,
    catchup: s.catchup,
    maxCatchup: s.maxCatchup,
    paused: s.paused,
    nextFireAt: iso(s.nextFireAt),
    lastSlotAt: iso(s.lastSlotAt),
    createdAt: isoTime(s.createdAt),
    updatedAt: isoTime(s.updatedAt),
    task: s.template === null ? null : templateJson(s.template, s.owner, viewer),
    dag: s.dag === null ? null : { name: s.dag.name, params: viewer === s.owner ? s.dag.params : Object.fromEntries(Object.keys(s.dag.params).map((k) => [k, ''])) },
  };
}

/**
 * A run record. `catchup` is on a catch-up's first and last skipped slot:
 * how many slots that catch-up skipped in all (`exact` false: at least that
 * many). latenessMs is the task's (or DAG run's) creation minus its slot: a fired
 * run's task is created in the transaction that stores the record, with the
 * record's time (store/schedules.ts FireRequest.now), so it is `at - slotAt`.
 */
export function scheduleRunJson(r: ScheduleRun) {
  return {
    slotAt: isoTime(r.slotAt),
    outcome: r.outcome,
    reason: r.reason,
    taskId: r.taskId,
    taskState: r.taskState,
    dagRunId: r.dagRunId,
    dagRunState: r.dagRunState,
    latenessMs: r.outcome === 'fired' ? r.at - r.slotAt : null,
    catchup: r.catchup === null ? null : { skipped: r.catchup.count, exact: r.catchup.exact },
  };
}
