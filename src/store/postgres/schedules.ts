/**
 * Cron schedules on PostgreSQL (store/schedules.ts is the contract).
 *
 * fireSchedule is one READ COMMITTED transaction that takes its locks in one
 * order, leaders row then schedule row, so two firers cannot deadlock:
 *   1. the lease row FOR SHARE, with holder, epoch and expiry (database
 *      clock, as acquireLeadership sets it) in the WHERE: a takeover's
 *      upsert waits for this transaction to end, so no firing commits after
 *      a takeover it could not see;
 *   2. the schedule row FOR NO KEY UPDATE with the expected last slot and
 *      `NOT paused` in the WHERE: a second firer with the same expectation
 *      waits here, and once the first commits, READ COMMITTED re-checks the
 *      WHERE on the new row version, which no longer matches (stale);
 *   3. the tasks through createTasks' statement (create-tasks.ts
 *      insertSlotTasks) with ON CONFLICT on tasks_schedule_slot DO NOTHING:
 *      even a firer that passed 2 with another expectation (or a second
 *      store racing on a fresh row) cannot make a second task for a slot;
 *   4. the run records ON CONFLICT DO NOTHING, and the schedule's advance.
 */
import { ConflictError } from '../../core/errors.js';
import { scheduleFromRow, scheduleRunFromRow, scheduleSpecParams, type ScheduleRow, type ScheduleRunRow } from '../rows.js';
import {
  CRON_ACTOR,
  slotTasks,
  type FireRequest,
  type FireResult,
  type ScheduleFilter,
  type SchedulePage,
  type ScheduleRecord,
  type ScheduleRun,
  type ScheduleSpec,
  type ScheduleStore,
} from '../schedules.js';
import { pageOf } from '../task-list.js';
import { insertSlotTasks } from './create-tasks.js';
import type { Db } from './db.js';
import { isUniqueViolation } from './pg-errors.js';
import { checkLimit, DB_NOW_MS } from './sql.js';

/** The due queries; test/store/query-plans.test.ts checks that they read schedules_due. */
export const SCHEDULE_DUE_SQL = {
  /** $1 now, $2 limit. */
  due: 'SELECT * FROM schedules WHERE next_fire_at IS NOT NULL AND next_fire_at <= $1 AND NOT paused ORDER BY next_fire_at, id LIMIT $2',
  /** The head of schedules_due. */
  next: 'SELECT next_fire_at AS t FROM schedules WHERE next_fire_at IS NOT NULL AND NOT paused ORDER BY next_fire_at LIMIT 1',
} as const;

/** $1 name, $2 holder, $3 epoch. See the header, step 1. */
const LEADS_SQL = `SELECT 1 AS ok FROM leaders WHERE name = $1 AND holder = $2 AND epoch = $3::bigint AND expires_at >= ${DB_NOW_MS} FOR SHARE`;
/** $1 id, $2 expected last slot (NULL: never fired). See the header, step 2. */
const LOCK_SCHEDULE_SQL = 'SELECT * FROM schedules WHERE id = $1 AND last_slot_at IS NOT DISTINCT FROM $2::bigint AND NOT paused FOR NO KEY UPDATE';
/** $1 schedule, $2 slots, $3 outcomes, $4 reasons, $5 task ids, $6 now. */
const INSERT_RUNS_SQL = `INSERT INTO schedule_runs (schedule_id, slot_at, outcome, reason, task_id, at)
  SELECT $1, u.slot_at, u.outcome, u.reason, u.task_id, $6::bigint
  FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[]) AS u(slot_at, outcome, reason, task_id)
  ON CONFLICT (schedule_id, slot_at) DO NOTHING`;

export function postgresSchedules(db: Db): ScheduleStore {
  const byName = async (owner: string, name: string): Promise<ScheduleRecord | null> =>
    db.read(async (q) => {
      const row = (await q.query<ScheduleRow>('SELECT * FROM schedules WHERE owner = $1 AND name = $2', [owner, name])).rows[0];
      return row ? scheduleFromRow(row) : null;
    });
  return {
    async createSchedule(id: string, owner: string, spec: ScheduleSpec, now: number, nextFireAt: number | null): Promise<ScheduleRecord> {
      const p = scheduleSpecParams(spec);
      try {
        const row = await db.single(async (q) => {
          const r = await q.query<ScheduleRow>(
            `INSERT INTO schedules (id, owner, name, expr, tz, overlap, catchup, max_catchup, template, paused, next_fire_at, last_slot_at, version, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, false, $10, NULL, 1, $11, $11)
             RETURNING *`,
            [id, owner, p.name, p.expr, p.tz, p.overlap, p.catchup, p.max_catchup, p.template, nextFireAt, now],
          );
          return r.rows[0]!;
        });
        return scheduleFromRow(row);
      } catch (e) {
        if (!isUniqueViolation(e)) throw e;
        if ((e as { constraint?: string }).constraint === 'schedules_pkey') throw new ConflictError(`schedule ${id} already exists`);
        const taken = await byName(owner, spec.name);
        throw new ConflictError(`schedule "${spec.name}" already exists for ${owner}${taken ? ` (schedule ${taken.id})` : ''}; choose another name or remove it first`);
      }
    },

    async getSchedule(id: string): Promise<ScheduleRecord | null> {
      return db.read(async (q) => {
        const row = (await q.query<ScheduleRow>('SELECT * FROM schedules WHERE id = $1', [id])).rows[0];
        return row ? scheduleFromRow(row) : null;
      });
    },

    getScheduleByName: byName,

    /** Keyset by id over the primary key, or over schedules_owner_id for one owner. */
    async listSchedules(filter: ScheduleFilter): Promise<SchedulePage> {
      checkLimit('limit', filter.limit);
      const where: string[] = [];
      const params: unknown[] = [];
      if (filter.owner !== undefined) {
        params.push(filter.owner);
        where.push(`owner = $${params.length}`);
      }
      if (filter.cursor !== undefined) {
        params.push(filter.cursor);
        where.push(`id > $${params.length}`);
      }
      params.push(filter.limit + 1);
      const sql = `SELECT * FROM schedules${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY id LIMIT $${params.length}`;
      return db.read(async (q) => {
        const { items, nextCursor } = pageOf((await q.query<ScheduleRow>(sql, params)).rows, filter.limit);
        return { schedules: items.map(scheduleFromRow), nextCursor };
      });
    },

    async setPaused(id: string, paused: boolean, now: number, nextFireAt: number | null): Promise<ScheduleRecord | null> {
      const row = await db.single(async (q) => {
        const r = await q.query<ScheduleRow>(
          'UPDATE schedules SET paused = $2, next_fire_at = CASE WHEN $2 THEN NULL ELSE $3::bigint END, version = version + 1, updated_at = $4 WHERE id = $1 RETURNING *',
          [id, paused, nextFireAt, now],
        );
        return r.rows[0];
      });
      return row ? scheduleFromRow(row) : null;
    },

    async deleteSchedule(id: string): Promise<boolean> {
      return db.write(async (tx) => {
        await tx.query('DELETE FROM schedule_runs WHERE schedule_id = $1', [id]);
        return ((await tx.query('DELETE FROM schedules WHERE id = $1', [id])).rowCount ?? 0) > 0;
      });
    },

    async dueSchedules(now: number, limit: number): Promise<ScheduleRecord[]> {
      checkLimit('limit', limit);
      return db.read(async (q) => (await q.query<ScheduleRow>(SCHEDULE_DUE_SQL.due, [now, limit])).rows.map(scheduleFromRow));
    },

    async nextScheduleDueAt(): Promise<number | null> {
      return db.read(async (q) => (await q.query<{ t: number }>(SCHEDULE_DUE_SQL.next)).rows[0]?.t ?? null);
    },

    async fireSchedule(req: FireRequest): Promise<FireResult> {
      return db.write(async (tx): Promise<FireResult> => {
        const leads = await tx.query(LEADS_SQL, [req.leader.name, req.leader.holder, req.leader.epoch]);
        if (leads.rowCount === 0) return { ok: false, reason: 'not_leader' };
        const row = (await tx.query<ScheduleRow>(LOCK_SCHEDULE_SQL, [req.scheduleId, req.expectedLastSlotAt])).rows[0];
        if (!row) return { ok: false, reason: 'stale' };
        const s = scheduleFromRow(row);
        const { tasks: wanted, repeated } = slotTasks(s, req.fire);
        const created = await insertSlotTasks(tx, s.owner, wanted, CRON_ACTOR, req.now);
        const made = new Set(created.map((t) => t.scheduledAt!));
        const runs = [
          ...created.map((t) => ({ slot: t.scheduledAt!, outcome: 'fired', reason: null, taskId: t.id })),
          ...req.skipped.map((k) => ({ slot: k.slot, outcome: 'skipped', reason: k.reason, taskId: null })),
        ];
        if (runs.length > 0) {
          await tx.query(INSERT_RUNS_SQL, [s.id, runs.map((r) => r.slot), runs.map((r) => r.outcome), runs.map((r) => r.reason), runs.map((r) => r.taskId), req.now]);
        }
        await tx.query('UPDATE schedules SET last_slot_at = $2, next_fire_at = $3, version = version + 1, updated_at = $4 WHERE id = $1', [
          s.id,
          req.lastSlotAt,
          req.nextFireAt,
          req.now,
        ]);
        const alreadyFired = [...wanted.filter((t) => !made.has(t.slot.scheduledAt)).map((t) => t.slot.scheduledAt), ...repeated];
        return { ok: true, created, alreadyFired };
      });
    },

    async scheduleRuns(scheduleId: string, limit: number): Promise<ScheduleRun[]> {
      checkLimit('limit', limit);
      return db.read(async (q) =>
        (
          await q.query<ScheduleRunRow>(
            `SELECT r.schedule_id, r.slot_at, r.outcome, r.reason, r.task_id, t.state AS task_state, r.at
             FROM schedule_runs r LEFT JOIN tasks t ON t.id = r.task_id
             WHERE r.schedule_id = $1 ORDER BY r.slot_at DESC LIMIT $2`,
            [scheduleId, limit],
          )
        ).rows.map(scheduleRunFromRow),
      );
    },
  };
}
