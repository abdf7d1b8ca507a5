/**
 * `POST /v1/schedules/:name/run`: a run out of schedule. One task from the
 * template, owned by the schedule's owner, with schedule_id set and
 * scheduled_at NULL: it belongs to no slot, so the one-run-per-slot key
 * (tasks_schedule_slot; NULLs are distinct on both stores) never refuses it,
 * no slot is recorded in schedule_runs, and the firing loop's plan is
 * unchanged; but until it ends it is one of the schedule's active runs
 * (store activeScheduleRuns), which the overlap policies see: forbid skips
 * slots while it runs, replace cancels it. Stored through createTasks (the same rows, events, feed and
 * counters as any submit); its `submitted` event says {schedule, manual: true}.
 * A schedule deleted meanwhile leaves this task with a dangling schedule_id,
 * as a delete leaves every earlier run. A DAG schedule's run now is a DAG
 * run instead (runDagScheduleNow), active for the overlap policies while it runs.
 */
import { newTaskId } from '../core/ids.js';
import type { Task } from '../core/task.js';
import type { NewTask } from '../store/batch.js';
import type { DagRunRecord } from '../store/dags.js';
import type { ScheduleDag, ScheduleRecord } from '../store/schedules.js';
import { ConflictError, InvalidInputError } from '../core/errors.js';
import { resolveParams } from '../core/dag/params.js';
import type { Store } from '../store/store.js';

export async function runScheduleNow(store: Store, s: ScheduleRecord, actor: string, now: number): Promise<{ task: Task } | { run: DagRunRecord }> {
  if (s.dag !== null) return { run: await runDagScheduleNow(store, s, s.dag, actor, now) };
  const task: NewTask = {
    id: newTaskId(now),
    spec: s.template!,
    slot: { scheduleId: s.id, scheduledAt: null },
    detail: { schedule: s.name, manual: true },
  };
  const res = await store.createTasks(s.owner, [task], actor, now);
  return { task: res.tasks[0]! };
}

/**
 * A DAG schedule's run now: a run of the DAG's newest version with the
 * schedule's parameters, schedule_id set and scheduled_at NULL (no slot, as
 * for a task). ConflictError when the DAG is gone or no longer takes the
 * parameters (the firing loop records such a slot as skipped instead).
 */
async function runDagScheduleNow(store: Store, s: ScheduleRecord, target: ScheduleDag, actor: string, now: number): Promise<DagRunRecord> {
  const dag = await store.getDag(s.owner, target.name);
  if (!dag) throw new ConflictError(`schedule "${s.name}" runs DAG "${target.name}", which ${s.owner} no longer has; apply it again (drover dag apply FILE) or remove the schedule`);
  let params: Record<string, string>;
  try {
    params = resolveParams(dag.definition.params, target.params);
  } catch (e) {
    if (e instanceof InvalidInputError) throw new ConflictError(`schedule "${s.name}": DAG "${dag.name}" version ${dag.version} does not take the schedule's parameters (${e.field}: ${e.reason})`);
    throw e;
  }
  return store.startDagRun({
    runId: newTaskId(now),
    dag,
    params,
    taskIds: dag.definition.steps.map(() => newTaskId(now)),
    actor,
    now,
    slot: { scheduleId: s.id, scheduledAt: null },
  });
}
