/**
 * A DAG schedule's part of a firing (both stores, inside fireSchedules'
 * transaction): which of its slots start a run of the DAG and which are
 * recorded as skipped because the run cannot start. One run per slot is the
 * unique key dag_runs_schedule_slot (schedule_id, scheduled_at), as
 * tasks_schedule_slot is for a task schedule's tasks; a slot whose run exists
 * is reported as already fired, never started twice.
 *
 * The DAG is the owner's DAG of the schedule's name at its newest version
 * when the slot fires, so `drover dag apply` of a new version changes the
 * next run, not a running one. Its parameters are resolved against that
 * version's declared ones; a version that no longer accepts them, or a DAG
 * that no longer exists, makes the slot a skipped run with the reason
 * (DAG_SKIP_REASONS) instead of failing the whole batch.
 */
import { InvalidInputError } from '../core/errors.js';
import { resolveParams } from '../core/dag/params.js';
import { newTaskId } from '../core/ids.js';
import type { DagRecord, StartDagRun } from './dags.js';
import { CRON_ACTOR, distinctSlots, type ScheduleFiring, type ScheduleRecord } from './schedules.js';

/** Why a DAG schedule's slot started no run (schedule_runs.reason). */
export const DAG_SKIP_REASONS = {
  /** The schedule's DAG does not exist (for its owner). */
  missing: 'dag_missing',
  /** The DAG's newest version does not take the schedule's parameters. */
  params: 'dag_params_invalid',
} as const;

export interface DagFiringPlan {
  starts: StartDagRun[];
  skipped: Array<{ slot: number; reason: string; detail: string }>;
  /** Slots whose run already exists (or that were given twice). */
  alreadyFired: number[];
}

/**
 * The runs to start for a DAG schedule's `fire` items. `taken(slot)` says
 * whether the slot's run exists (read with the write lock held / the
 * schedule's row locked); `dag` is the newest version, or null.
 */
export function planDagFirings(s: ScheduleRecord, fire: ScheduleFiring['fire'], taken: (slot: number) => boolean, dag: DagRecord | null, now: number): DagFiringPlan {
  const { items, repeated } = distinctSlots(fire);
  const out: DagFiringPlan = { starts: [], skipped: [], alreadyFired: [...repeated] };
  const target = s.dag;
  if (target === null) throw new InvalidInputError('scheduleId', `schedule ${s.id} is not a DAG schedule`);
  let params: Record<string, string> | null = null;
  let problem: { reason: string; detail: string } | null = null;
  if (dag === null) problem = { reason: DAG_SKIP_REASONS.missing, detail: `no DAG named "${target.name}" for ${s.owner}` };
  else {
    try {
      params = resolveParams(dag.definition.params, target.params);
    } catch (e) {
      if (!(e instanceof InvalidInputError)) throw e;
      problem = { reason: DAG_SKIP_REASONS.params, detail: `${e.field}: ${e.reason}` };
    }
  }
  for (const { slot, taskId } of items) {
    if (taken(slot)) out.alreadyFired.push(slot);
    else if (problem !== null || dag === null || params === null) out.skipped.push({ slot, ...(problem ?? { reason: DAG_SKIP_REASONS.missing, detail: '' }) });
    else {
      out.starts.push({
        runId: taskId,
        dag,
        params,
        taskIds: dag.definition.steps.map(() => newTaskId(now)),
        actor: CRON_ACTOR,
        now,
        slot: { scheduleId: s.id, scheduledAt: slot },
      });
    }
  }
  return out;
}
