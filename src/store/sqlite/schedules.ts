/**
 * Cron schedules on SQLite (store/schedules.ts is the contract). Every write
 * is one IMMEDIATE transaction (db.ts), so fireSchedules' guards (the lease,
 * the expected last slots, the slots already taken) are read and acted on
 * with the write lock held: nothing can change between the check and the
 * write. The unique index tasks_schedule_slot backs the slot check up.
 * The lease is checked against the caller's `now`, as acquireLeadership sets it.
 */
import { ConflictError } from '../../core/errors.js';
import type { TaskState } from '../../core/task-state.js';
import { scheduleFromRow, scheduleRunFromRow, scheduleSpecParams, type ScheduleRow, type ScheduleRunRow } from '../rows.js';
import {
  ACTIVE_RUN_STATES_SQL,
  RUNS_OVER_SQL,
  SCHEDULE_RUNS_KEPT,
  checkActiveQuery,
  checkFireBatch,
  firesAsRead,
  CRON_ACTOR,
  fireSingle,
  notLeader,
  slotTasks,
  type ActiveRun,
  type FireBatch,
  type FireRequest,
  type FireResult,
  type ScheduleFilter,
  type SchedulePage,
  type ScheduleRecord,
  type ScheduleRun,
  type ScheduleSpec,
  type ScheduleStore,
  type SlotTask,
} from '../schedules.js';
import { pageOf } from '../task-list.js';
import { planDagFirings } from '../schedule-dag-runs.js';
import { insertSlotTasks } from './create-tasks.js';
import { latestDagIn, startRunIn } from './dags.js';
import type { SqliteDb } from './db.js';
import { checkLimit } from './records.js';
import { isUniqueViolation } from './sqlite-errors.js';

/** The due queries; test/store/query-plans.test.ts checks that they read schedules_due. */
export const SCHEDULE_DUE_SQL = {
  /** ?1 now, ?2 limit. */
  due: 'SELECT * FROM schedules WHERE next_fire_at IS NOT NULL AND next_fire_at <= ? AND paused = 0 ORDER BY next_fire_at, id LIMIT +?',
  /** The head of schedules_due (ORDER BY ... LIMIT 1 rather than min(): an index read that stops at the first row). */
  next: 'SELECT next_fire_at AS t FROM schedules WHERE next_fire_at IS NOT NULL AND paused = 0 ORDER BY next_fire_at LIMIT 1',
} as const;

/** The lease still held: this holder, this epoch, not expired at `now` (leadership.ts). */
const LEADS_SQL = 'SELECT 1 AS ok FROM leaders WHERE name = ? AND holder = ? AND epoch = ? AND expires_at >= ?';

/**
 * fireSchedules' statements, each one per batch whatever its size (the
 * tasks go in through create-tasks.ts insertSlotTasks, also one statement
 * for the rows and one for the events). JSON arrays in, as createTasks does.
 */
export const FIRE_SQL = {
  /** ?1 JSON array of schedule ids: a primary-key lookup each. */
  schedules: 'SELECT * FROM schedules WHERE id IN (SELECT value FROM json_each(?))',
  /** The same, only what the guard compares: when every request carries its schedule (ScheduleFiring.schedule). */
  guards: 'SELECT id, paused, last_slot_at FROM schedules WHERE id IN (SELECT value FROM json_each(?))',
  /** ?1 JSON array of [schedule id, slot]: the pairs that already have a task (tasks_schedule_slot). */
  taken: `SELECT t.schedule_id || ' ' || t.scheduled_at AS k
    FROM json_each(?) AS j JOIN tasks AS t ON t.schedule_id = j.value ->> 0 AND t.scheduled_at = j.value ->> 1`,
  /**
   * @rows: JSON array of [schedule id, slot, outcome, reason, task id, catch-up count, catch-up exact (0/1), DAG run id].
   * (`WHERE true`: SQLite's parser needs it before ON CONFLICT.)
   */
  runs: `INSERT INTO schedule_runs (schedule_id, slot_at, outcome, reason, task_id, at, catchup_count, catchup_exact, dag_run_id)
    SELECT j.value ->> 0, j.value ->> 1, j.value ->> 2, j.value ->> 3, j.value ->> 4, @now, j.value ->> 5, j.value ->> 6, j.value ->> 7 FROM json_each(@rows) AS j WHERE true
    ON CONFLICT DO NOTHING
    RETURNING schedule_id`,
  /** @rows: JSON array of [schedule id, last slot, next fire time, run records added]. */
  advance: `UPDATE schedules SET last_slot_at = j.value ->> 1, next_fire_at = j.value ->> 2, version = version + 1, updated_at = @now,
      run_count = run_count + (j.value ->> 3)
    FROM json_each(@rows) AS j WHERE schedules.id = j.value ->> 0`,
} as const;

/**
 * activeScheduleRuns, per schedule: ?1 schedule id, ?2 limit. A range of the
 * partial index tasks_schedule_active (test/store/query-plans.test.ts); one
 * statement per id inside one read, which on SQLite costs no round trip and
 * keeps the per-schedule limit an index stop.
 */
export const ACTIVE_RUNS_SQL = `SELECT schedule_id, id, state, scheduled_at FROM tasks
  WHERE schedule_id = ? AND state IN ${ACTIVE_RUN_STATES_SQL} ORDER BY id LIMIT +?`;
/** The same for a DAG schedule's running runs: ?1 schedule id, ?2 limit; a range of dag_runs_schedule_active. */
export const ACTIVE_DAG_RUNS_SQL = `SELECT schedule_id, id, scheduled_at FROM dag_runs
  WHERE schedule_id = ? AND state = 'running' ORDER BY id LIMIT +?`;
/** ?1 schedule id, ?2 slot: the slot's DAG run exists (dag_runs_schedule_slot). */
export const DAG_SLOT_TAKEN_SQL = 'SELECT 1 AS ok FROM dag_runs WHERE schedule_id = ? AND scheduled_at = ?';

/**
 * pruneScheduleRuns' statements. `over`: ?1 limit; the schedules over the
 * retention limit, from the partial index schedules_runs_over (its predicate
 * spelled as RUNS_OVER_SQL). `trim`: @id schedule, @n how many of its oldest
 * records go (a range of the primary key from its start).
 */
export const PRUNE_RUNS_SQL = {
  over: `SELECT id, run_count FROM schedules WHERE ${RUNS_OVER_SQL} ORDER BY id LIMIT +?`,
  trim: `DELETE FROM schedule_runs WHERE schedule_id = @id AND slot_at <= (
    SELECT slot_at FROM schedule_runs WHERE schedule_id = @id ORDER BY slot_at LIMIT 1 OFFSET @n - 1)`,
  /** @id: its run_count recounted. */
  recount: 'UPDATE schedules SET run_count = (SELECT count(*) FROM schedule_runs WHERE schedule_id = @id) WHERE id = @id',
} as const;

/** FIRE_SQL.taken's key of a slot. */
const slotKey = (scheduleId: string, slot: number) => `${scheduleId} ${slot}`;

export function sqliteSchedules(d: SqliteDb): ScheduleStore {
  const byId = (id: string) => d.q('SELECT * FROM schedules WHERE id = ?').get(id) as ScheduleRow | undefined;
  const store: ScheduleStore = {
    async createSchedule(id: string, owner: string, spec: ScheduleSpec, now: number, nextFireAt: number | null): Promise<ScheduleRecord> {
      return d.write(() => {
        try {
          const row = d
            .q(
              `INSERT INTO schedules (id, owner, name, expr, tz, overlap, catchup, max_catchup, template, dag_name, dag_params, paused, next_fire_at, last_slot_at, version, created_at, updated_at)
               VALUES (@id, @owner, @name, @expr, @tz, @overlap, @catchup, @max_catchup, @template, @dag_name, @dag_params, 0, @next, NULL, 1, @now, @now)
               RETURNING *`,
            )
            .get({ id, owner, now, next: nextFireAt, ...scheduleSpecParams(spec) }) as ScheduleRow;
          return scheduleFromRow(row);
        } catch (e) {
          if (isUniqueViolation(e)) {
            const taken = d.q('SELECT id FROM schedules WHERE owner = ? AND name = ?').get(owner, spec.name) as { id: string } | undefined;
            if (taken) throw new ConflictError(`schedule "${spec.name}" already exists for ${owner} (schedule ${taken.id}); choose another name or remove it first`);
            throw new ConflictError(`schedule ${id} already exists`);
          }
          throw e;
        }
      });
    },

    async getSchedule(id: string): Promise<ScheduleRecord | null> {
      return d.read(() => {
        const row = byId(id);
        return row ? scheduleFromRow(row) : null;
      });
    },

    async getScheduleByName(owner: string, name: string): Promise<ScheduleRecord | null> {
      return d.read(() => {
        const row = d.q('SELECT * FROM schedules WHERE owner = ? AND name = ?').get(owner, name) as ScheduleRow | undefined;
        return row ? scheduleFromRow(row) : null;
      });
    },

    /** Keyset by id over the primary key, or over schedules_owner_id for one owner; one row more than asked tells a next page. */
    async listSchedules(filter: ScheduleFilter): Promise<SchedulePage> {
      checkLimit(filter.limit);
      const where: string[] = [];
      const params: unknown[] = [];
      if (filter.owner !== undefined) {
        where.push('owner = ?');
        params.push(filter.owner);
      }
      if (filter.cursor !== undefined) {
        where.push('id > ?');
        params.push(filter.cursor);
      }
      const sql = `SELECT * FROM schedules${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY id LIMIT +?`;
      return d.read(() => {
        const { items, nextCursor } = pageOf(d.q(sql).all(...params, filter.limit + 1) as ScheduleRow[], filter.limit);
        return { schedules: items.map(scheduleFromRow), nextCursor };
      });
    },

    async setPaused(id: string, paused: boolean, now: number, nextFireAt: number | null): Promise<ScheduleRecord | null> {
      return d.write(() => {
        const row = d
          .q('UPDATE schedules SET paused = ?, next_fire_at = ?, version = version + 1, updated_at = ? WHERE id = ? RETURNING *')
          .get(paused ? 1 : 0, paused ? null : nextFireAt, now, id) as ScheduleRow | undefined;
        return row ? scheduleFromRow(row) : null;
      });
    },

    async deleteSchedule(id: string): Promise<boolean> {
      return d.write(() => {
        d.q('DELETE FROM schedule_runs WHERE schedule_id = ?').run(id);
        return d.q('DELETE FROM schedules WHERE id = ?').run(id).changes > 0;
      });
    },

    async dueSchedules(now: number, limit: number): Promise<ScheduleRecord[]> {
      checkLimit(limit);
      return d.read(() => (d.q(SCHEDULE_DUE_SQL.due).all(now, limit) as ScheduleRow[]).map(scheduleFromRow));
    },

    async nextScheduleDueAt(): Promise<number | null> {
      return d.read(() => (d.q(SCHEDULE_DUE_SQL.next).get() as { t: number } | undefined)?.t ?? null);
    },

    async fireSchedules(batch: FireBatch): Promise<FireResult[]> {
      checkFireBatch(batch);
      const { leader, now, requests } = batch;
      const ids = JSON.stringify(requests.map((r) => r.scheduleId));
      return d.write((): FireResult[] => {
        if (d.q(LEADS_SQL).get(leader.name, leader.holder, leader.epoch, now) === undefined) return notLeader(batch);
        const rows = new Map((d.q(firesAsRead(requests) ? FIRE_SQL.guards : FIRE_SQL.schedules).all(ids) as ScheduleRow[]).map((r) => [r.id, r]));
        // Per request: its schedule, unless stale; the tasks it wants (a slot given twice counts once).
        const live = requests.map((req) => {
          const row = rows.get(req.scheduleId);
          if (!row || row.paused !== 0 || row.last_slot_at !== req.expectedLastSlotAt) return null;
          const s = req.schedule ?? scheduleFromRow(row);
          // A DAG schedule's runs (schedule-dag-runs.ts): each started here, with the write lock held.
          const dag = s.dag === null ? null : planDagFirings(s, req.fire, (slot) => d.q(DAG_SLOT_TAKEN_SQL).get(s.id, slot) !== undefined, latestDagIn(d, s.owner, s.dag.name), now);
          return { req, dag, ...slotTasks(s, req.fire) };
        });
        const wanted = live.flatMap((l) => l?.tasks ?? []);
        // The slots already taken (the write lock is held: none can be taken before the insert).
        const taken = new Set(
          wanted.length === 0
            ? []
            : (d.q(FIRE_SQL.taken).all(JSON.stringify(wanted.map((t) => [t.slot.scheduleId, t.slot.scheduledAt]))) as Array<{ k: string }>).map((r) => r.k),
        );
        const isTaken = (t: SlotTask) => taken.has(slotKey(t.slot.scheduleId, t.slot.scheduledAt));
        const created = insertSlotTasks(d, wanted.filter((t) => !isTaken(t)), CRON_ACTOR, now);
        const byId = new Map(created.map((t) => [t.id, t]));
        const runs: unknown[] = [];
        const advances: Array<[string, number | null, number | null, number]> = [];
        const results = live.map((l): FireResult => {
          if (l === null) return { ok: false, reason: 'stale' };
          const mine = l.tasks.filter((t) => byId.has(t.id)).map((t) => byId.get(t.id)!);
          for (const t of mine) runs.push([l.req.scheduleId, t.scheduledAt, 'fired', null, t.id]);
          for (const k of l.req.skipped) runs.push([l.req.scheduleId, k.slot, 'skipped', k.reason, null, k.catchup?.count ?? null, k.catchup ? (k.catchup.exact ? 1 : 0) : null]);
          advances.push([l.req.scheduleId, l.req.lastSlotAt, l.req.nextFireAt, 0]);
          if (l.dag !== null) {
            for (const start of l.dag.starts) {
              startRunIn(d, start);
              runs.push([l.req.scheduleId, start.slot!.scheduledAt, 'fired', null, null, null, null, start.runId]);
            }
            for (const k of l.dag.skipped) runs.push([l.req.scheduleId, k.slot, 'skipped', k.reason, null, null, null]);
            return { ok: true, created: [], dagRuns: l.dag.starts.map((x) => x.runId), unstarted: l.dag.skipped, alreadyFired: l.dag.alreadyFired };
          }
          return { ok: true, created: mine, dagRuns: [], unstarted: [], alreadyFired: [...l.tasks.filter(isTaken).map((t) => t.slot.scheduledAt), ...l.repeated] };
        });
        if (runs.length > 0) {
          // Records actually added (a slot recorded before is not): each schedule's run_count grows by its own.
          const added = new Map<string, number>();
          for (const r of d.q(FIRE_SQL.runs).all({ rows: JSON.stringify(runs), now }) as Array<{ schedule_id: string }>) added.set(r.schedule_id, (added.get(r.schedule_id) ?? 0) + 1);
          for (const a of advances) a[3] = added.get(a[0]) ?? 0;
        }
        if (advances.length > 0) d.q(FIRE_SQL.advance).run({ rows: JSON.stringify(advances), now });
        return results;
      });
    },

    async fireSchedule(req: FireRequest): Promise<FireResult> {
      return fireSingle(store, req);
    },

    async activeScheduleRuns(scheduleIds: readonly string[], perSchedule: number): Promise<ActiveRun[]> {
      checkActiveQuery(scheduleIds);
      checkLimit(perSchedule, 'perSchedule');
      const ids = [...new Set(scheduleIds)].sort();
      return d.read(() =>
        ids.flatMap((id): ActiveRun[] => [
          ...(d.q(ACTIVE_RUNS_SQL).all(id, perSchedule) as Array<{ schedule_id: string; id: string; state: TaskState; scheduled_at: number | null }>).map((r) => ({
            scheduleId: r.schedule_id,
            taskId: r.id,
            state: r.state,
            scheduledAt: r.scheduled_at,
          })),
          ...(d.q(ACTIVE_DAG_RUNS_SQL).all(id, perSchedule) as Array<{ schedule_id: string; id: string; scheduled_at: number | null }>).map((r) => ({
            scheduleId: r.schedule_id,
            dagRunId: r.id,
            state: 'running' as const,
            scheduledAt: r.scheduled_at,
          })),
        ]),
      );
    },

    async pruneScheduleRuns(maxSchedules: number, maxPerSchedule: number): Promise<{ schedules: number; deleted: number }> {
      checkLimit(maxSchedules, 'maxSchedules');
      checkLimit(maxPerSchedule, 'maxPerSchedule');
      return d.write(() => {
        const over = d.q(PRUNE_RUNS_SQL.over).all(maxSchedules) as Array<{ id: string; run_count: number }>;
        let deleted = 0;
        for (const s of over) {
          const n = d.q(PRUNE_RUNS_SQL.trim).run({ id: s.id, n: Math.min(s.run_count - SCHEDULE_RUNS_KEPT, maxPerSchedule) }).changes;
          // Recounted rather than decremented (about 1,000 index entries): a count that was off heals here.
          d.q(PRUNE_RUNS_SQL.recount).run({ id: s.id });
          deleted += n;
        }
        return { schedules: over.length, deleted };
      });
    },

    async scheduleRuns(scheduleId: string, limit: number): Promise<ScheduleRun[]> {
      checkLimit(limit);
      return d.read(() =>
        (
          d
            .q(
              `SELECT r.schedule_id, r.slot_at, r.outcome, r.reason, r.task_id, t.state AS task_state, r.dag_run_id, dr.state AS dag_run_state,
                      r.at, r.catchup_count, r.catchup_exact
               FROM schedule_runs r LEFT JOIN tasks t ON t.id = r.task_id LEFT JOIN dag_runs dr ON dr.id = r.dag_run_id
               WHERE r.schedule_id = ? ORDER BY r.slot_at DESC LIMIT +?`,
            )
            .all(scheduleId, limit) as ScheduleRunRow[]
        ).map(scheduleRunFromRow),
      );
    },
  };
  return store;
}
