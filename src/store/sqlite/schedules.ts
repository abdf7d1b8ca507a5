/**
 * Cron schedules on SQLite (store/schedules.ts is the contract). Every write
 * is one IMMEDIATE transaction (db.ts), so fireSchedule's guards (the lease,
 * the expected last slot, the slots already taken) are read and acted on
 * with the write lock held: nothing can change between the check and the
 * write. The unique index tasks_schedule_slot backs the slot check up.
 * The lease is checked against the caller's `now`, as acquireLeadership sets it.
 */
import { ConflictError } from '../../core/errors.js';
import { batchRowsJson } from '../batch.js';
import { scheduleFromRow, scheduleRunFromRow, scheduleSpecParams, type ScheduleRow, type ScheduleRunRow } from '../rows.js';
import { CRON_ACTOR, slotTasks, type FireRequest, type FireResult, type ScheduleFilter, type SchedulePage, type ScheduleRecord, type ScheduleRun, type ScheduleSpec, type ScheduleStore } from '../schedules.js';
import { pageOf } from '../task-list.js';
import { insertNewTasks } from './create-tasks.js';
import type { SqliteDb } from './db.js';
import { checkLimit } from './records.js';
import { isUniqueViolation } from './sqlite-errors.js';

/** The due queries; test/store/query-plans.test.ts checks that they read schedules_due. */
export const SCHEDULE_DUE_SQL = {
  /** ?1 now, ?2 limit. */
  due: 'SELECT * FROM schedules WHERE next_fire_at IS NOT NULL AND next_fire_at <= ? AND paused = 0 ORDER BY next_fire_at, id LIMIT ?',
  /** The head of schedules_due (ORDER BY ... LIMIT 1 rather than min(): an index read that stops at the first row). */
  next: 'SELECT next_fire_at AS t FROM schedules WHERE next_fire_at IS NOT NULL AND paused = 0 ORDER BY next_fire_at LIMIT 1',
} as const;

/** The lease still held: this holder, this epoch, not expired at `now` (leadership.ts). */
const LEADS_SQL = 'SELECT 1 AS ok FROM leaders WHERE name = ? AND holder = ? AND epoch = ? AND expires_at >= ?';

export function sqliteSchedules(d: SqliteDb): ScheduleStore {
  const byId = (id: string) => d.q('SELECT * FROM schedules WHERE id = ?').get(id) as ScheduleRow | undefined;
  return {
    async createSchedule(id: string, owner: string, spec: ScheduleSpec, now: number, nextFireAt: number | null): Promise<ScheduleRecord> {
      return d.write(() => {
        try {
          const row = d
            .q(
              `INSERT INTO schedules (id, owner, name, expr, tz, overlap, catchup, max_catchup, template, paused, next_fire_at, last_slot_at, version, created_at, updated_at)
               VALUES (@id, @owner, @name, @expr, @tz, @overlap, @catchup, @max_catchup, @template, 0, @next, NULL, 1, @now, @now)
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
      const sql = `SELECT * FROM schedules${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY id LIMIT ?`;
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

    async fireSchedule(req: FireRequest): Promise<FireResult> {
      return d.write((): FireResult => {
        if (d.q(LEADS_SQL).get(req.leader.name, req.leader.holder, req.leader.epoch, req.now) === undefined) return { ok: false, reason: 'not_leader' };
        const row = byId(req.scheduleId);
        if (!row || row.paused !== 0 || row.last_slot_at !== req.expectedLastSlotAt) return { ok: false, reason: 'stale' };
        const s = scheduleFromRow(row);
        const { tasks: wanted, repeated } = slotTasks(s, req.fire);
        // The slots already taken (the write lock is held: none can be taken before the insert).
        const taken = new Set(
          (
            d
              .q('SELECT scheduled_at FROM tasks WHERE schedule_id = ? AND scheduled_at IN (SELECT value FROM json_each(?))')
              .all(s.id, JSON.stringify(wanted.map((t) => t.slot.scheduledAt))) as Array<{ scheduled_at: number }>
          ).map((r) => r.scheduled_at),
        );
        const fresh = wanted.filter((t) => !taken.has(t.slot.scheduledAt));
        const created = fresh.length === 0 ? [] : insertNewTasks(d, s.owner, fresh, batchRowsJson(fresh), CRON_ACTOR, req.now, null);
        const run = d.q('INSERT INTO schedule_runs (schedule_id, slot_at, outcome, reason, task_id, at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING');
        for (const t of created) run.run(s.id, t.scheduledAt, 'fired', null, t.id, req.now);
        for (const k of req.skipped) run.run(s.id, k.slot, 'skipped', k.reason, null, req.now);
        d.q('UPDATE schedules SET last_slot_at = ?, next_fire_at = ?, version = version + 1, updated_at = ? WHERE id = ?').run(req.lastSlotAt, req.nextFireAt, req.now, s.id);
        return { ok: true, created, alreadyFired: [...wanted.filter((t) => taken.has(t.slot.scheduledAt)).map((t) => t.slot.scheduledAt), ...repeated] };
      });
    },

    async scheduleRuns(scheduleId: string, limit: number): Promise<ScheduleRun[]> {
      checkLimit(limit);
      return d.read(() =>
        (
          d
            .q(
              `SELECT r.schedule_id, r.slot_at, r.outcome, r.reason, r.task_id, t.state AS task_state, r.at
               FROM schedule_runs r LEFT JOIN tasks t ON t.id = r.task_id
               WHERE r.schedule_id = ? ORDER BY r.slot_at DESC LIMIT ?`,
            )
            .all(scheduleId, limit) as ScheduleRunRow[]
        ).map(scheduleRunFromRow),
      );
    },
  };
}
