/**
 * `POST /v1/schedules/:name/run`: a run out of schedule. One task from the
 * template, owned by the schedule's owner, with schedule_id set and
 * scheduled_at NULL: it belongs to no slot, so the one-run-per-slot key
 * (tasks_schedule_slot; NULLs are distinct on both stores) never refuses it,
 * no slot is recorded in schedule_runs, and the firing loop's plan is
 * unchanged. Stored through createTasks (the same rows, events, feed and
 * counters as any submit); its `submitted` event says {schedule, manual: true}.
 * A schedule deleted meanwhile leaves this task with a dangling schedule_id,
 * as a delete leaves every earlier run.
 */
import { newTaskId } from '../core/ids.js';
import type { Task } from '../core/task.js';
import type { NewTask } from '../store/batch.js';
import type { ScheduleRecord } from '../store/schedules.js';
import type { Store } from '../store/store.js';

export async function runScheduleNow(store: Store, s: ScheduleRecord, actor: string, now: number): Promise<Task> {
  const task: NewTask = {
    id: newTaskId(now),
    spec: s.template,
    slot: { scheduleId: s.id, scheduledAt: null },
    detail: { schedule: s.name, manual: true },
  };
  const res = await store.createTasks(s.owner, [task], actor, now);
  return res.tasks[0]!;
}
