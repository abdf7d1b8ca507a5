/**
 * Cron schedules (issue 11): their rows, the due queries the firing loop's
 * timer reads, and `fireSchedules`, the one transaction that turns the
 * decisions of the pure core (core/cron/plan-due.ts planDue, overlap.ts
 * decideOverlap) for a batch of due schedules into tasks (`fireSchedule` is
 * its one-schedule case).
 *
 * One run per slot. A slot is a (schedule, scheduled time) pair; its task
 * carries both (tasks.schedule_id, tasks.scheduled_at) under a UNIQUE key,
 * written in the same transaction that advances the schedule's last slot and
 * next fire time. However often a firing is retried, by however many servers,
 * a slot gets at most one task: the key refuses the second, silently.
 *
 * Two guards come before it, both checked inside that transaction:
 *   - leadership, once per batch: the caller still holds the lease it fires
 *     under, with the epoch it was given (leadership.ts
 *     acquireLeadershipEpoch), unexpired. A former leader that was paused
 *     past its lease cannot fire even once after another server took over
 *     (PostgreSQL: the lease row is locked FOR SHARE, so a takeover waits
 *     for this transaction, or this transaction sees the takeover). Refused,
 *     the whole batch changes nothing;
 *   - optimistic, per schedule: its last slot is still the one the caller
 *     planned from and it is not paused; else another firer (or a pause, an
 *     edit, a delete) moved it, that schedule's part changes nothing, and
 *     the caller re-reads it and plans again. The other schedules of the
 *     batch are fired all the same.
 *
 * Why a batch. 10,000 schedules due at the same second (every `0 * * * *`
 * one at :00) must all fire within the 1 s the issue promises. One
 * transaction per schedule cost a savepoint and five statements each on
 * SQLite (group commit already shared the fsync) and a transaction of its
 * own each on PostgreSQL. One transaction per batch, with set-based
 * statements inside (one insert of all the batch's tasks and one of their
 * events, one of its run records, one update of its schedules), measured
 * with test/server/measure-cron-pass.ts (one pass over 10,000 due `* * * *
 * *` schedules, on the shared 2-core machine with a load average of 5-13
 * from other work):
 *   one per schedule   the pass outlived the 5 s lease and was fenced after
 *                      1,400-7,900 schedules (SQLite) and 390-1,230
 *                      (PostgreSQL); the rest waited for later passes;
 *   batched            all 10,000 in 1.05-2.7 s on SQLite and 3.9-6 s on
 *                      PostgreSQL, where the database's CPU is the bound
 *                      (the task insert with its 13 indexes, feed trigger
 *                      and foreign keys is two thirds of it).
 * (Planning is not in these figures' difference: next-fire.ts keeps its
 * answers, which took the planning of 10,000 schedules from 2.5 s to
 * milliseconds.)
 *
 * States of a schedule row: active (next_fire_at set) or paused / exhausted
 * (next_fire_at NULL: paused always stores NULL, so the due index holds only
 * schedules that can fire).
 */
import type { CatchupPolicy } from '../core/cron/plan-due.js';
import type { OverlapPolicy } from '../core/cron/overlap.js';
import type { Task, TaskSpec } from '../core/task.js';
import type { TaskState } from '../core/task-state.js';
import type { RunState } from '../core/dag/release.js';
import { InvalidInputError } from '../core/errors.js';
import { MAX_BATCH, type NewTask } from './batch.js';

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
  /**
   * What each run creates: one task with this spec (its name included), or,
   * with `dag` set instead (then null), one run of that DAG. Exactly one of
   * the two is set.
   */
  template: TaskSpec | null;
  /** A DAG schedule (`drover cron add --dag NAME`): each run is a run of this DAG; null or absent for a task schedule. */
  dag?: ScheduleDag | null;
}

/**
 * A DAG schedule's target: the owner's DAG of this name, its NEWEST version
 * at each firing (a re-applied DAG is picked up by the next run), started
 * with these parameters (resolved against that version's declared ones when
 * it fires; core/dag/params.ts resolveParams).
 */
export interface ScheduleDag {
  name: string;
  params: Record<string, string>;
}

export interface ScheduleRecord extends ScheduleSpec {
  dag: ScheduleDag | null;
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

/** One schedule's part of a firing (FireBatch.requests). */
export interface ScheduleFiring {
  scheduleId: string;
  /** What the caller planned from: the schedule's last_slot_at as it read it (null: never fired). */
  expectedLastSlotAt: number | null;
  /**
   * One run per item, for that slot: a task with this id (core/ids.ts
   * newTaskId), or for a DAG schedule a DAG run with this id (its steps'
   * task ids are made by the store).
   */
  fire: ReadonlyArray<{ slot: number; taskId: string }>;
  /**
   * Slots decided not to run, recorded as skipped runs. A catch-up's record
   * (cron-burst.ts: its first and last skipped slot) carries how many slots
   * that catch-up skipped in all, `exact` false when that is a lower bound.
   */
  skipped: ReadonlyArray<{ slot: number; reason: SkipReason; catchup?: CatchupCount | null }>;
  /** Stored as the schedule's last_slot_at and next_fire_at. */
  lastSlotAt: number | null;
  nextFireAt: number | null;
  /**
   * The schedule as the caller read it (dueSchedules), optional. What a
   * firing takes from it (owner, name, template, DAG) never changes once the
   * schedule exists: no call edits a schedule, a new definition is a new
   * schedule with a new id. When every request of a batch carries its
   * schedule, the store's guard reads only the rows' paused flag and last
   * slot, and the runs are made from these records: the guard is the same,
   * the definition is not read and parsed a second time. Measured with
   * test/server/measure-cron-pass.ts (10,000 schedules due at once, six
   * passes alternating with the build before, 2026-12-03 ~12:55 UTC): the
   * guard's read 89-102 ms → 28-34 ms a pass on SQLite, the pass 1,190-1,451
   * ms → 936-1,148 ms (medians 1,250 and 1,070); on PostgreSQL (five each)
   * 2,052-2,576 ms → 1,885-2,882 ms (medians 2,488 and 2,266).
   */
  schedule?: ScheduleRecord;
}

/** Most schedules one fireSchedules call takes. */
export const MAX_FIRE_SCHEDULES = 1000;
/** Most tasks one fireSchedules call creates (the `fire` items of all its requests): createTasks' limit. */
export const MAX_FIRE_TASKS = MAX_BATCH;

/**
 * Firings of several schedules, in one transaction under one lease check.
 * 1..MAX_FIRE_SCHEDULES requests, each schedule at most once, with at most
 * MAX_FIRE_TASKS `fire` items in all; anything else throws InvalidInputError
 * naming `requests` and changes nothing.
 */
export interface FireBatch {
  leader: FireLeader;
  /** The tasks' created_at, the events' and run records' time; on SQLite also the clock the lease is checked against. */
  now: number;
  requests: readonly ScheduleFiring[];
}

/** One schedule's firing on its own (fireSchedule): a batch of one. */
export interface FireRequest extends ScheduleFiring {
  leader: FireLeader;
  now: number;
}

export type FireResult =
  | {
      ok: true;
      /** The tasks this call inserted, in `fire` order (a task schedule's). */
      created: Task[];
      /** The DAG runs this call started, in `fire` order (a DAG schedule's): their ids. */
      dagRuns: string[];
      /** A DAG schedule's slots that started no run (recorded as skipped runs with `reason`), with what was wrong. */
      unstarted: Array<{ slot: number; reason: string; detail: string }>;
      /** Slots of `fire` whose task already existed (the unique key refused a second): nothing was inserted for them. */
      alreadyFired: number[];
    }
  /**
   * Nothing was changed. not_leader: the lease is another holder's, has another epoch, or expired.
   * stale: the schedule's last slot is not the expected one, it is paused, or it no longer exists.
   */
  | { ok: false; reason: 'not_leader' | 'stale' };

/** How many slots one catch-up skipped (core/cron/plan-due.ts SkippedSlots). */
export interface CatchupCount {
  count: number;
  /** False when counting stopped (plan-due.ts SKIP_COUNT_LIMIT): `count` is then a lower bound. */
  exact: boolean;
}

export interface ScheduleRun {
  scheduleId: string;
  slotAt: number;
  outcome: 'fired' | 'skipped';
  reason: string | null;
  /** The run's task (fired), null for a skipped slot. The id remains if task retention removed the task. */
  taskId: string | null;
  /** The task's current state; null when skipped or the task no longer exists. */
  taskState: TaskState | null;
  /** A DAG schedule's fired run: the DAG run's id (taskId is then null). */
  dagRunId: string | null;
  /** That run's current state; null when not a DAG run or the run no longer exists. */
  dagRunState: RunState | null;
  /** When the decision was stored. */
  at: number;
  /** On a catch-up's first and last skipped slot (reason catchup_*): how many it skipped in all; else null. */
  catchup: CatchupCount | null;
}

/**
 * A schedule's run that has not ended: a slot's or a run-now one (scheduledAt
 * null); a task (taskId), or for a DAG schedule a running DAG run (dagRunId).
 */
export type ActiveRun =
  | { scheduleId: string; taskId: string; dagRunId?: undefined; state: TaskState; scheduledAt: number | null }
  | { scheduleId: string; dagRunId: string; taskId?: undefined; state: 'running'; scheduledAt: number | null };

/**
 * The task states a run is active in (not terminal). The partial index
 * tasks_schedule_active (migration 9, both stores) holds exactly the rows of
 * a schedule in these states, with the same IN list in its predicate, so
 * activeScheduleRuns reads only what it returns.
 */
export const ACTIVE_RUN_STATES = ['ready', 'waiting', 'running', 'retrying'] as const satisfies readonly TaskState[];
/** ACTIVE_RUN_STATES as the SQL IN list both the index predicate and the query spell the same way. */
export const ACTIVE_RUN_STATES_SQL = `('ready', 'waiting', 'running', 'retrying')`;

/**
 * Retention of run records: the newest SCHEDULE_RUNS_KEPT of each schedule
 * are kept. pruneScheduleRuns trims a schedule once it holds more than
 * SCHEDULE_RUNS_KEPT + SCHEDULE_RUNS_SLACK, back to SCHEDULE_RUNS_KEPT, so a
 * `* * * * *` schedule is trimmed once every 100 minutes (100 rows), not
 * once a minute (1 row). Their sum is in migration 9's partial index
 * schedules_runs_over and in the query that reads it: changing either
 * constant needs a migration.
 */
export const SCHEDULE_RUNS_KEPT = 1000;
export const SCHEDULE_RUNS_SLACK = 100;
/** SCHEDULE_RUNS_KEPT + SCHEDULE_RUNS_SLACK as the index predicate spells it. */
export const RUNS_OVER_SQL = 'run_count > 1100';

/** Most schedule ids one activeScheduleRuns call takes (a due batch). */
export const MAX_ACTIVE_QUERY_SCHEDULES = MAX_FIRE_SCHEDULES;

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
  /**
   * One transaction for the whole batch (see the header and FireBatch): one
   * FireResult per request, in request order. Not the leader: every result is
   * `not_leader` and nothing changed. Otherwise each request is applied or
   * refused (`stale`) on its own, exactly as fireSchedule would, so a
   * batch's outcome equals firing its requests one after the other.
   * Signals `wake` (once) when it created a task.
   */
  fireSchedules(batch: FireBatch): Promise<FireResult[]>;
  /** fireSchedules with one request. */
  fireSchedule(req: FireRequest): Promise<FireResult>;
  /** The schedule's run records, newest slot first, at most `limit`. */
  scheduleRuns(scheduleId: string, limit: number): Promise<ScheduleRun[]>;
  /**
   * The active (non-terminal) runs of each of these schedules: every task
   * with the schedule's id, a slot's run or one started by "run now", oldest
   * first (by task id) per schedule, at most `perSchedule` each; ordered by
   * schedule id, then task id; and every running DAG run of a DAG schedule
   * the same way (after its tasks, of which a DAG schedule has none). For
   * the overlap policies, which must see every active run. One read over the
   * partial indexes tasks_schedule_active and dag_runs_schedule_active.
   * 0..MAX_ACTIVE_QUERY_SCHEDULES ids (more: InvalidInputError naming
   * `scheduleIds`); unknown ids have no runs.
   */
  activeScheduleRuns(scheduleIds: readonly string[], perSchedule: number): Promise<ActiveRun[]>;
  /**
   * Retention (see SCHEDULE_RUNS_KEPT): for at most `maxSchedules` schedules
   * holding more than SCHEDULE_RUNS_KEPT + SCHEDULE_RUNS_SLACK run records,
   * deletes their oldest records (by slot) down to SCHEDULE_RUNS_KEPT, at most
   * `maxPerSchedule` each, in one transaction. A schedule the cap leaves over
   * the limit is trimmed further by the next calls; one it leaves between
   * SCHEDULE_RUNS_KEPT and the limit, the next time it goes over. Returns how
   * many schedules it trimmed and how many records it deleted; 0 schedules:
   * none is over the limit.
   */
  pruneScheduleRuns(maxSchedules: number, maxPerSchedule: number): Promise<{ schedules: number; deleted: number }>;
}

/** Actor of the events of tasks a schedule created. */
export const CRON_ACTOR = 'cron';

/** The `submitted` event's detail of a schedule's run. */
export function scheduledDetail(scheduleName: string, slot: number): Record<string, unknown> {
  return { schedule: scheduleName, scheduledAt: new Date(slot).toISOString() };
}

/**
 * A fired task: it always has its slot (only a run-now task has none), and
 * its owner is its schedule's (one insert holds the runs of several owners).
 */
export type SlotTask = NewTask & { slot: { scheduleId: string; scheduledAt: number }; owner: string };

/**
 * The tasks a firing inserts (both stores): one per distinct slot of `fire`,
 * from the schedule's template, carrying the slot and the submitted event's
 * detail. A slot given twice is inserted once; the repeat is reported with
 * the ones the unique key refused.
 */
export function slotTasks(s: Pick<ScheduleRecord, 'id' | 'name' | 'template' | 'owner'>, fire: ScheduleFiring['fire']): { tasks: SlotTask[]; repeated: number[] } {
  const { items, repeated } = distinctSlots(fire);
  const template = s.template;
  if (template === null) return { tasks: [], repeated };
  const tasks = items.map(({ slot, taskId }) => ({ id: taskId, spec: template, slot: { scheduleId: s.id, scheduledAt: slot }, detail: scheduledDetail(s.name, slot), owner: s.owner }));
  return { tasks, repeated };
}

/** `fire` with each slot once, in order; the slots given again are `repeated`. */
export function distinctSlots(fire: ScheduleFiring['fire']): { items: Array<{ slot: number; taskId: string }>; repeated: number[] } {
  const seen = new Set<number>();
  const items: Array<{ slot: number; taskId: string }> = [];
  const repeated: number[] = [];
  for (const f of fire) {
    if (seen.has(f.slot)) repeated.push(f.slot);
    else {
      seen.add(f.slot);
      items.push(f);
    }
  }
  return { items, repeated };
}

/** Every request carries its schedule as read (ScheduleFiring.schedule): the store's guard may then read only paused and the last slot. */
export function firesAsRead(requests: readonly ScheduleFiring[]): boolean {
  return requests.every((r) => r.schedule !== undefined);
}

/**
 * The batch's shape (both stores, before their transaction): InvalidInputError
 * naming `requests` for an empty or oversized batch or a schedule given twice.
 */
export function checkFireBatch(batch: FireBatch): void {
  const { requests } = batch;
  if (!Array.isArray(requests) || requests.length < 1 || requests.length > MAX_FIRE_SCHEDULES) {
    throw new InvalidInputError('requests', `must hold 1..${MAX_FIRE_SCHEDULES} schedules (got ${Array.isArray(requests) ? requests.length : typeof requests})`);
  }
  const seen = new Set<string>();
  let tasks = 0;
  for (const r of requests) {
    if (seen.has(r.scheduleId)) throw new InvalidInputError('requests', `schedule ${r.scheduleId} is given twice; one batch fires a schedule at most once`);
    if (r.schedule !== undefined && r.schedule.id !== r.scheduleId) {
      throw new InvalidInputError('requests', `the request for schedule ${r.scheduleId} carries schedule ${r.schedule.id}; a request's schedule must be its own`);
    }
    seen.add(r.scheduleId);
    tasks += r.fire.length;
  }
  if (tasks > MAX_FIRE_TASKS) throw new InvalidInputError('requests', `would create ${tasks} tasks; one batch creates at most ${MAX_FIRE_TASKS}`);
}

/** A batch's outcome when the lease check failed: every request refused. */
export function notLeader(batch: FireBatch): FireResult[] {
  return batch.requests.map(() => ({ ok: false, reason: 'not_leader' }) as const);
}

/** fireSchedule as the one-request case of fireSchedules. */
export async function fireSingle(store: Pick<ScheduleStore, 'fireSchedules'>, req: FireRequest): Promise<FireResult> {
  const { leader, now, ...firing } = req;
  return (await store.fireSchedules({ leader, now, requests: [firing] }))[0]!;
}

/** activeScheduleRuns' id list (both stores): at most MAX_ACTIVE_QUERY_SCHEDULES, each a string. */
export function checkActiveQuery(scheduleIds: readonly string[]): void {
  if (!Array.isArray(scheduleIds) || scheduleIds.length > MAX_ACTIVE_QUERY_SCHEDULES || scheduleIds.some((id) => typeof id !== 'string')) {
    throw new InvalidInputError('scheduleIds', `must be a list of at most ${MAX_ACTIVE_QUERY_SCHEDULES} schedule ids`);
  }
}
