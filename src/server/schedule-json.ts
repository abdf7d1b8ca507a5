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
    task: templateJson(s.template, s.owner, viewer),
  };
}

/**
 * A run record. latenessMs is the task's creation minus its slot: a fired
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
    latenessMs: r.outcome === 'fired' ? r.at - r.slotAt : null,
  };
}
