/**
 * Cron schedules on PostgreSQL (store/schedules.ts is the contract).
 *
 * fireSchedules is one READ COMMITTED transaction of a fixed number of
 * statements whatever the batch's size, taking its locks in one order,
 * leaders row then schedule rows by id, so two firers cannot deadlock:
 *   1. the lease row FOR SHARE, with holder, epoch and expiry (database
 *      clock, as acquireLeadership sets it) in the WHERE: a takeover's
 *      upsert waits for this transaction to end, so no firing commits after
 *      a takeover it could not see; and the transaction may sit idle no
 *      longer than the lease has left (LEADS_SQL), so a stalled firer
 *      cannot hold a takeover up past the lease's expiry;
 *   2. the batch's schedule rows FOR NO KEY UPDATE, in id order: a second
 *      firer waits here, and once the first commits, READ COMMITTED hands it
 *      the rows as the first left them, whose last slot no longer matches
 *      its expectation (stale); a missing or paused row is stale too;
 *   3. the tasks of every live request in one statement (create-tasks.ts
 *      insertSlotTasks) with ON CONFLICT on tasks_schedule_slot DO NOTHING:
 *      even a firer that passed 2 with another expectation (or a second
 *      store racing on a fresh row) cannot make a second task for a slot;
 *   4. the run records of the batch in one statement ON CONFLICT DO NOTHING,
 *      and the schedules' advance in one UPDATE ... FROM unnest.
 * test/store/postgres-fire-lock-order.test.ts holds 1 before 2.
 *
 * Tried and left out (issue 9, 2026-12-05): 1 and 2 as one statement (the
 * lease check a CTE read by a one-time EXISTS filter) and 4 as one (the
 * advance reading the records' RETURNING), 5 round trips a batch instead of
 * 7 (BEGIN and COMMIT included). `measure-cron-pass.js --measure 10000 3 postgres`, four pairs
 * alternating: passes 887-1,350 ms (median 1,062) as is, 964-1,164 ms
 * (median 1,033) with it: within the spread. The pass is bound by the
 * database's CPU (the task insert alone 37 ms of a batch's ~74), not by
 * round trips.
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
  type CatchupCount,
  type FireBatch,
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
import { planDagFirings, type DagFiringPlan } from '../schedule-dag-runs.js';
import { insertSlotTasks } from './create-tasks.js';
import { latestDagIn, startRunIn } from './dags.js';
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

/**
 * $1 name, $2 holder, $3 epoch. See the header, step 1. The row lock must not
 * outlive the lease: a firer that stalls inside this transaction (SIGSTOP, a
 * VM freeze) would otherwise make every takeover wait for it, up to the
 * pool's 60 s idle_in_transaction_session_timeout. So the transaction's own
 * idle limit is set (SET LOCAL, via set_config) to the time the lease has
 * left: a stalled firing is ended by the database (nothing commits) no later
 * than the lease's expiry plus its own running time, and the takeover goes
 * on. A live firer's gaps between statements are milliseconds against a
 * lease renewed every tick for several; one slower than the lease's rest
 * fails and its next pass fires again.
 */
const LEADS_SQL = `SELECT set_config('idle_in_transaction_session_timeout', GREATEST(expires_at - ${DB_NOW_MS}, 1)::text, true) AS ok
  FROM leaders WHERE name = $1 AND holder = $2 AND epoch = $3::bigint AND expires_at >= ${DB_NOW_MS} FOR SHARE`;
/**
 * fireSchedules' statements after the lease check (see the header, steps 2-4).
 * Arrays in, one per column, as createTasks does.
 */
export const FIRE_SQL = {
  /**
   * $1 ids. The caller compares each row's last slot and pause with the
   * request (after the lock: a row another transaction changed is waited for
   * and returned as that transaction left it). `id = ANY` rather than a join
   * with unnest(ids, expected): measured on 10,000 schedules, the join was
   * planned as a hash join over a sequential scan (31 ms per 500 ids), this
   * is an index scan of the primary key (1.1 ms).
   */
  lock: 'SELECT * FROM schedules WHERE id = ANY($1::text[]) ORDER BY id FOR NO KEY UPDATE',
  /** The same lock, returning only what the guard compares: when every request carries its schedule (ScheduleFiring.schedule). */
  lockGuards: 'SELECT id, paused, last_slot_at FROM schedules WHERE id = ANY($1::text[]) ORDER BY id FOR NO KEY UPDATE',
  /** $1 schedules, $2 slots, $3 outcomes, $4 reasons, $5 task ids, $6 now, $7 catch-up counts, $8 catch-up exact, $9 DAG run ids. */
  runs: `INSERT INTO schedule_runs (schedule_id, slot_at, outcome, reason, task_id, at, catchup_count, catchup_exact, dag_run_id)
    SELECT u.schedule_id, u.slot_at, u.outcome, u.reason, u.task_id, $6::bigint, u.catchup_count, u.catchup_exact, u.dag_run_id
    FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $7::int[], $8::boolean[], $9::text[])
      AS u(schedule_id, slot_at, outcome, reason, task_id, catchup_count, catchup_exact, dag_run_id)
    ON CONFLICT (schedule_id, slot_at) DO NOTHING
    RETURNING schedule_id`,
  /**
   * $1 ids, $2 last slots, $3 next fire times, $4 now, $5 run records added (run_count). `s.id = ANY($1)`
   * as in `lock`, for the same reason.
   */
  advance: `UPDATE schedules AS s SET last_slot_at = u.last, next_fire_at = u.next, version = s.version + 1, updated_at = $4::bigint,
      run_count = s.run_count + u.added
    FROM unnest($1::text[], $2::bigint[], $3::bigint[], $5::int[]) AS u(id, last, next, added) WHERE s.id = u.id AND s.id = ANY($1::text[])`,
} as const;

/**
 * activeScheduleRuns: $1 schedule ids, $2 limit per schedule. For each id a
 * LIMITed range of the partial index tasks_schedule_active (a lateral join:
 * the limit stops each schedule's index read; test/store/query-plans.test.ts).
 */
export const ACTIVE_RUNS_SQL = `SELECT a.schedule_id, a.id, a.state, a.scheduled_at, a.dag
  FROM unnest($1::text[]) AS s(id)
  CROSS JOIN LATERAL (
    (SELECT t.schedule_id, t.id, t.state, t.scheduled_at, false AS dag FROM tasks t
     WHERE t.schedule_id = s.id AND t.state IN ${ACTIVE_RUN_STATES_SQL}
     ORDER BY t.id LIMIT $2)
    UNION ALL
    -- A DAG schedule's running runs: a range of dag_runs_schedule_active.
    (SELECT r.schedule_id, r.id, r.state, r.scheduled_at, true AS dag FROM dag_runs r
     WHERE r.schedule_id = s.id AND r.state = 'running'
     ORDER BY r.id LIMIT $2)
  ) AS a
  ORDER BY a.schedule_id, a.dag, a.id`;

/** $1 schedule id, $2 slots: those of the slots whose DAG run exists (dag_runs_schedule_slot). */
export const DAG_SLOTS_TAKEN_SQL = 'SELECT scheduled_at FROM dag_runs WHERE schedule_id = $1 AND scheduled_at = ANY($2::bigint[])';

/**
 * pruneScheduleRuns in one statement: $1 most schedules, $2 most records per
 * schedule, $3 SCHEDULE_RUNS_KEPT. The schedules over the limit come from the
 * partial index schedules_runs_over (predicate spelled as RUNS_OVER_SQL),
 * locked SKIP LOCKED (one being fired now is trimmed by a later call rather
 * than waited for); each one's oldest records are a LIMITed range of the
 * primary key (a lateral join); run_count is set to what is left.
 */
export const PRUNE_RUNS_SQL = `WITH c AS (
    SELECT id, least(run_count - $3::int, $2::int) AS n FROM schedules WHERE ${RUNS_OVER_SQL} ORDER BY id LIMIT $1 FOR NO KEY UPDATE SKIP LOCKED
  ), v AS (
    SELECT c.id, x.slot_at FROM c CROSS JOIN LATERAL (
      SELECT r.slot_at FROM schedule_runs r WHERE r.schedule_id = c.id ORDER BY r.slot_at LIMIT c.n
    ) AS x
  ), d AS (
    DELETE FROM schedule_runs r USING v WHERE r.schedule_id = v.id AND r.slot_at = v.slot_at RETURNING r.schedule_id
  ), k AS (
    SELECT schedule_id, count(*)::int AS n FROM d GROUP BY schedule_id
  ), u AS (
    -- Recounted (the statement's snapshot still holds the deleted rows, hence minus them) rather than
    -- decremented: a count that was off heals here.
    UPDATE schedules s SET run_count = (SELECT count(*) FROM schedule_runs r WHERE r.schedule_id = s.id) - coalesce(k.n, 0)
    FROM c LEFT JOIN k ON k.schedule_id = c.id WHERE s.id = c.id RETURNING coalesce(k.n, 0) AS n
  )
  SELECT (SELECT count(*)::int FROM c) AS schedules, coalesce((SELECT sum(n)::int FROM u), 0) AS deleted`;

export function postgresSchedules(db: Db): ScheduleStore {
  const byName = async (owner: string, name: string): Promise<ScheduleRecord | null> =>
    db.read(async (q) => {
      const row = (await q.query<ScheduleRow>('SELECT * FROM schedules WHERE owner = $1 AND name = $2', [owner, name])).rows[0];
      return row ? scheduleFromRow(row) : null;
    });
  const store: ScheduleStore = {
    async createSchedule(id: string, owner: string, spec: ScheduleSpec, now: number, nextFireAt: number | null): Promise<ScheduleRecord> {
      const p = scheduleSpecParams(spec);
      try {
        const row = await db.single(async (q) => {
          const r = await q.query<ScheduleRow>(
            `INSERT INTO schedules (id, owner, name, expr, tz, overlap, catchup, max_catchup, template, dag_name, dag_params, paused, next_fire_at, last_slot_at, version, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $12, $13, false, $10, NULL, 1, $11, $11)
             RETURNING *`,
            [id, owner, p.name, p.expr, p.tz, p.overlap, p.catchup, p.max_catchup, p.template, nextFireAt, now, p.dag_name, p.dag_params],
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

    async fireSchedules(batch: FireBatch): Promise<FireResult[]> {
      checkFireBatch(batch);
      const { leader, now, requests } = batch;
      return db.write(async (tx): Promise<FireResult[]> => {
        const leads = await tx.query(LEADS_SQL, [leader.name, leader.holder, leader.epoch]);
        if (leads.rowCount === 0) return notLeader(batch);
        const locked = await tx.query<ScheduleRow>(firesAsRead(requests) ? FIRE_SQL.lockGuards : FIRE_SQL.lock, [requests.map((r) => r.scheduleId)]);
        const rows = new Map(locked.rows.map((r) => [r.id, r]));
        const live = requests.map((req) => {
          const row = rows.get(req.scheduleId);
          if (!row || row.paused || row.last_slot_at !== req.expectedLastSlotAt) return null;
          const s = req.schedule ?? scheduleFromRow(row);
          return { req, s, dag: null as DagFiringPlan | null, ...slotTasks(s, req.fire) };
        });
        // DAG schedules (schedule-dag-runs.ts): their rows are locked, so no other firing takes their slots meanwhile.
        for (const l of live) {
          if (l === null || l.s.dag === null) continue;
          const slots = l.req.fire.map((f) => f.slot);
          const taken = new Set((await tx.query<{ scheduled_at: string }>(DAG_SLOTS_TAKEN_SQL, [l.s.id, slots])).rows.map((r) => Number(r.scheduled_at)));
          l.dag = planDagFirings(l.s, l.req.fire, (slot) => taken.has(slot), await latestDagIn(tx, l.s.owner, l.s.dag.name), now);
          for (const start of l.dag.starts) await startRunIn(tx, start);
        }
        const created = await insertSlotTasks(tx, live.flatMap((l) => l?.tasks ?? []), CRON_ACTOR, now);
        const byId = new Map(created.map((t) => [t.id, t]));
        const runs = {
          schedule: [] as string[],
          slot: [] as number[],
          outcome: [] as string[],
          reason: [] as Array<string | null>,
          task: [] as Array<string | null>,
          count: [] as Array<number | null>,
          exact: [] as Array<boolean | null>,
          dagRun: [] as Array<string | null>,
        };
        const addRun = (schedule: string, slot: number, outcome: string, reason: string | null, task: string | null, catchup: CatchupCount | null, dagRun: string | null = null) => {
          runs.dagRun.push(dagRun);
          runs.schedule.push(schedule);
          runs.slot.push(slot);
          runs.outcome.push(outcome);
          runs.reason.push(reason);
          runs.task.push(task);
          runs.count.push(catchup?.count ?? null);
          runs.exact.push(catchup?.exact ?? null);
        };
        const adv = { id: [] as string[], last: [] as Array<number | null>, next: [] as Array<number | null>, added: [] as number[] };
        const results = live.map((l): FireResult => {
          if (l === null) return { ok: false, reason: 'stale' };
          const mine = l.tasks.filter((t) => byId.has(t.id)).map((t) => byId.get(t.id)!);
          for (const t of mine) addRun(l.req.scheduleId, t.scheduledAt!, 'fired', null, t.id, null);
          for (const k of l.req.skipped) addRun(l.req.scheduleId, k.slot, 'skipped', k.reason, null, k.catchup ?? null);
          adv.id.push(l.req.scheduleId);
          adv.last.push(l.req.lastSlotAt);
          adv.next.push(l.req.nextFireAt);
          adv.added.push(0);
          if (l.dag !== null) {
            for (const start of l.dag.starts) addRun(l.req.scheduleId, start.slot!.scheduledAt!, 'fired', null, null, null, start.runId);
            for (const k of l.dag.skipped) addRun(l.req.scheduleId, k.slot, 'skipped', k.reason, null, null);
            return { ok: true, created: [], dagRuns: l.dag.starts.map((x) => x.runId), unstarted: l.dag.skipped, alreadyFired: l.dag.alreadyFired };
          }
          const alreadyFired = [...l.tasks.filter((t) => !byId.has(t.id)).map((t) => t.slot.scheduledAt), ...l.repeated];
          return { ok: true, created: mine, dagRuns: [], unstarted: [], alreadyFired };
        });
        if (runs.slot.length > 0) {
          // Records actually added (a slot recorded before is not): each schedule's run_count grows by its own.
          const added = new Map<string, number>();
          for (const r of (await tx.query<{ schedule_id: string }>(FIRE_SQL.runs, [runs.schedule, runs.slot, runs.outcome, runs.reason, runs.task, now, runs.count, runs.exact, runs.dagRun])).rows) {
            added.set(r.schedule_id, (added.get(r.schedule_id) ?? 0) + 1);
          }
          adv.id.forEach((id, i) => (adv.added[i] = added.get(id) ?? 0));
        }
        if (adv.id.length > 0) await tx.query(FIRE_SQL.advance, [adv.id, adv.last, adv.next, now, adv.added]);
        return results;
      });
    },

    async fireSchedule(req: FireRequest): Promise<FireResult> {
      return fireSingle(store, req);
    },

    async activeScheduleRuns(scheduleIds: readonly string[], perSchedule: number): Promise<ActiveRun[]> {
      checkActiveQuery(scheduleIds);
      checkLimit('perSchedule', perSchedule);
      if (scheduleIds.length === 0) return [];
      const ids = [...new Set(scheduleIds)];
      return db.read(async (q) =>
        (await q.query<{ schedule_id: string; id: string; state: TaskState; scheduled_at: number | null; dag: boolean }>(ACTIVE_RUNS_SQL, [ids, perSchedule])).rows.map(
          (r): ActiveRun =>
            r.dag
              ? { scheduleId: r.schedule_id, dagRunId: r.id, state: 'running', scheduledAt: r.scheduled_at }
              : { scheduleId: r.schedule_id, taskId: r.id, state: r.state, scheduledAt: r.scheduled_at },
        ),
      );
    },

    async pruneScheduleRuns(maxSchedules: number, maxPerSchedule: number): Promise<{ schedules: number; deleted: number }> {
      checkLimit('maxSchedules', maxSchedules);
      checkLimit('maxPerSchedule', maxPerSchedule);
      return db.write(async (tx) => (await tx.query<{ schedules: number; deleted: number }>(PRUNE_RUNS_SQL, [maxSchedules, maxPerSchedule, SCHEDULE_RUNS_KEPT])).rows[0]!);
    },

    async scheduleRuns(scheduleId: string, limit: number): Promise<ScheduleRun[]> {
      checkLimit('limit', limit);
      return db.read(async (q) =>
        (
          await q.query<ScheduleRunRow>(
            `SELECT r.schedule_id, r.slot_at, r.outcome, r.reason, r.task_id, t.state AS task_state, r.dag_run_id, dr.state AS dag_run_state,
                    r.at, r.catchup_count, r.catchup_exact
             FROM schedule_runs r LEFT JOIN tasks t ON t.id = r.task_id LEFT JOIN dag_runs dr ON dr.id = r.dag_run_id
             WHERE r.schedule_id = $1 ORDER BY r.slot_at DESC LIMIT $2`,
            [scheduleId, limit],
          )
        ).rows.map(scheduleRunFromRow),
      );
    },
  };
  return store;
}
