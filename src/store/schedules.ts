/**
 * Cron schedules (issue 11): their rows, the due queries the firing loop's
 * timer reads, and `fireSchedule`, the one transaction that turns a decision
 * of the pure core (core/cron/plan-due.ts planDue, overlap.ts decideOverlap)
 * into tasks.
 *
 * One run per slot. A slot is a (schedule, scheduled time) pair; its task
 * carries both (tasks.schedule_id, tasks.scheduled_at) under a UNIQUE key,
 * written in the same transaction that advances the schedule's last slot and
 * next fire time. However often a firing is retried, by however many servers,
 * a slot gets at most one task: the key refuses the second, silently.
 *
 * Two guards come before it, both checked inside that transaction:
 *   - leadership: the caller still holds the lease it fires under, with the
 *     epoch it was given (leadership.ts acquireLeadershipEpoch), unexpired.
 *     A former leader that was paused past its lease cannot fire even once
 *     after another server took over (PostgreSQL: the lease row is locked
 *     FOR SHARE, so a takeover waits for this transaction, or this
 *     transaction sees the takeover);
 *   - optimistic: the schedule's last slot is still the one the caller
 *     planned from and it is not paused; else another firer (or a pause, an
 *     edit, a delete) moved it, and the caller re-reads and plans again.
 *
 * States of a schedule row: active (next_fire_at set) or paused / exhausted
 * (next_fire_at NULL: paused always stores NULL, so the due index holds only
 * schedules that can fire).
 */
import type { CatchupPolicy } from '../core/cron/plan-due.js';
import type { OverlapPolicy } from '../core/cron/overlap.js';
import type { Task, TaskSpec } from '../core/task.js';
import type { TaskState } from '../core/task-state.js';
import type { NewTask } from './batch.js';

export interface ScheduleSpec {
  /** Unique per owner. */
  name: string;
  /** As core/cron/schedule.ts parseSchedule normalized it. */
  expr: string;
  /** IANA zone. */
  tz: string;
  overlap: OverlapPolicy;
  catchup: CatchupPolicy;
  maxCatchup: number;
  /** What each run creates: one task with this spec (its name included). */
  template: TaskSpec;
}

export interface ScheduleRecord extends ScheduleSpec {
  /** ULID of its creation time. */
  id: string;
  owner: string;
  paused: boolean;
  createdAt: number;
  updatedAt: number;
  /** The next slot that may fire (epoch ms); null when paused or when the expression has no more times. */
  nextFireAt: number | null;
  /** The newest slot fired or skipped; null when none ever was. */
  lastSlotAt: number | null;
  /** Starts at 1, +1 on every change of the row (pause, resume, firing). */
  version: number;
}

export interface ScheduleFilter {
  owner?: string;
  /** Keyset: schedules with id > cursor (oldest first, ids are ULIDs). */
  cursor?: string;
  limit: number;
}

export interface SchedulePage {
  schedules: ScheduleRecord[];
  nextCursor: string | null;
}

/** Why a slot was not fired (schedule_runs.reason). */
export type SkipReason = 'overlap_forbid' | 'catchup_none' | 'catchup_capped' | 'catchup_latest' | (string & {});

/** The lease a firing is made under (leadership.ts acquireLeadershipEpoch returned `epoch`). */
export interface FireLeader {
  name: string;
  holder: string;
  epoch: number;
}

export interface FireRequest {
  scheduleId: string;
  leader: FireLeader;
  /** What the caller planned from: the schedule's last_slot_at as it read it (null: never fired). */
  expectedLastSlotAt: number | null;
  /** One task per item, for that slot, with this id (core/ids.ts newTaskId). */
  fire: ReadonlyArray<{ slot: number; taskId: string }>;
  /** Slots decided not to run, recorded as skipped runs. */
  skipped: ReadonlyArray<{ slot: number; reason: SkipReason }>;
  /** Stored as the schedule's last_slot_at and next_fire_at. */
  lastSlotAt: number | null;
  nextFireAt: number | null;
  /** The tasks' created_at and the events' time; on SQLite also the clock the lease is checked against. */
  now: number;
}

export type FireResult =
  | {
      ok: true;
      /** The tasks this call inserted, in `fire` order. */
      created: Task[];
      /** Slots of `fire` whose task already existed (the unique key refused a second): nothing was inserted for them. */
      alreadyFired: number[];
    }
  /**
   * Nothing was changed. not_leader: the lease is another holder's, has another epoch, or expired.
   * stale: the schedule's last slot is not the expected one, it is paused, or it no longer exists.
   */
  | { ok: false; reason: 'not_leader' | 'stale' };

export interface ScheduleRun {
  scheduleId: string;
  slotAt: number;
  outcome: 'fired' | 'skipped';
  reason: string | null;
  /** The run's task (fired), null for a skipped slot. The id remains if task retention removed the task. */
  taskId: string | null;
  /** The task's current state; null when skipped or the task no longer exists. */
  taskState: TaskState | null;
  /** When the decision was stored. */
  at: number;
}

export interface ScheduleStore {
  /**
   * Stores a new active (or, with nextFireAt null, exhausted) schedule. A
   * schedule of the same owner with the same name throws ConflictError naming it.
   */
  createSchedule(id: string, owner: string, spec: ScheduleSpec, now: number, nextFireAt: number | null): Promise<ScheduleRecord>;
  getSchedule(id: string): Promise<ScheduleRecord | null>;
  getScheduleByName(owner: string, name: string): Promise<ScheduleRecord | null>;
  /** Oldest first, keyset by id; with `owner`, an index range of (owner, id). */
  listSchedules(filter: ScheduleFilter): Promise<SchedulePage>;
  /**
   * Pauses (next_fire_at becomes NULL whatever `nextFireAt` says) or resumes
   * (next_fire_at = nextFireAt, computed by the caller from now, so missed
   * slots are left to the catch-up policy). Null when there is no such schedule.
   */
  setPaused(id: string, paused: boolean, now: number, nextFireAt: number | null): Promise<ScheduleRecord | null>;
  /**
   * Deletes the schedule and its run records; false when there was none. Its
   * tasks stay, and keep their schedule_id (a dangling id: the history of what
   * made them survives, and a delete costs no write per past run). Schedule
   * ids are never reused, so a dangling id never names another schedule.
   */
  deleteSchedule(id: string): Promise<boolean>;
  /** Unpaused schedules with next_fire_at <= now, earliest first (then id), at most `limit`: one index range. */
  dueSchedules(now: number, limit: number): Promise<ScheduleRecord[]>;
  /** The earliest next_fire_at of an unpaused schedule (the firing loop's timer), null when none. */
  nextScheduleDueAt(): Promise<number | null>;
  /** One transaction; see the header and FireRequest. Signals `wake` when it created a task. */
  fireSchedule(req: FireRequest): Promise<FireResult>;
  /** The schedule's run records, newest slot first, at most `limit`. */
  scheduleRuns(scheduleId: string, limit: number): Promise<ScheduleRun[]>;
}

/** Actor of the events of tasks a schedule created. */
export const CRON_ACTOR = 'cron';

/** The `submitted` event's detail of a schedule's run. */
export function scheduledDetail(scheduleName: string, slot: number): Record<string, unknown> {
  return { schedule: scheduleName, scheduledAt: new Date(slot).toISOString() };
}

/**
 * The tasks a firing inserts (both stores): one per distinct slot of `fire`,
 * from the schedule's template, carrying the slot and the submitted event's
 * detail. A slot given twice is inserted once; the repeat is reported with
 * the ones the unique key refused.
 */
/** A fired task: it always has its slot (only a run-now task has none). */
export type SlotTask = NewTask & { slot: { scheduleId: string; scheduledAt: number } };

export function slotTasks(s: Pick<ScheduleRecord, 'id' | 'name' | 'template'>, fire: FireRequest['fire']): { tasks: SlotTask[]; repeated: number[] } {
  const seen = new Set<number>();
  const tasks: SlotTask[] = [];
  const repeated: number[] = [];
  for (const { slot, taskId } of fire) {
    if (seen.has(slot)) {
      repeated.push(slot);
      continue;
    }
    seen.add(slot);
    tasks.push({ id: taskId, spec: s.template, slot: { scheduleId: s.id, scheduledAt: slot }, detail: scheduledDetail(s.name, slot) });
  }
  return { tasks, repeated };
}
