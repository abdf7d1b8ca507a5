/**
 * The order of fireSchedules' locks on PostgreSQL (store/postgres/schedules.ts,
 * the header's steps 1 and 2). The lease row is locked before any schedule
 * row, and a firer whose lease does not match locks no schedule row at all.
 * (Fails with the two steps swapped: the schedule's row is then held while
 * the firing waits on the leaders row.) Checked by behaviour, with plain clients holding the
 * rows: a firing that waits on the leaders row (as behind a takeover's upsert)
 * must not hold its schedule's row meanwhile, and a refused firing must not
 * wait for a schedule row someone else holds.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import pg from 'pg';
import { firstFireAfter } from '../../src/core/cron/next-fire.js';
import { parseSchedule } from '../../src/core/cron/schedule.js';
import { newTaskId } from '../../src/core/ids.js';
import { openPostgresStore } from '../../src/store/postgres/postgres-store.js';
import type { FireRequest, FireResult, ScheduleRecord } from '../../src/store/schedules.js';
import { createTestDatabase, dropAllTestDatabases, PG_SKIP_REASON, requirePostgres } from '../support/postgres.js';
import { makeSpec } from './contract.js';

const PG = await requirePostgres();
const LEASE = 'cron';
const APP = 'drover-test-fire-order';

after(async () => {
  if (PG) await dropAllTestDatabases();
});

function request(rec: ScheduleRecord, holder: string, epoch: number, now: number): FireRequest {
  const slot = rec.nextFireAt!;
  return { scheduleId: rec.id, leader: { name: LEASE, holder, epoch }, expectedLastSlotAt: null, fire: [{ slot, taskId: newTaskId(now) }], skipped: [], lastSlotAt: slot, nextFireAt: slot + 60_000, now };
}

/** Resolves once a backend of the store (by application_name) waits on a lock; a deadline bounds it. */
async function untilWaitingOnLock(c: pg.Client, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    const r = await c.query(`SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`, [APP]);
    if ((r.rowCount ?? 0) > 0) return;
    assert.ok(Date.now() < deadline, `the firing did not wait on a lock within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('PostgreSQL: fireSchedules takes the lease row before any schedule row', { skip: PG ? false : PG_SKIP_REASON }, () => {
  it('a firing waiting on the leaders row holds no schedule row; a refused one takes none', async () => {
    const db = await createTestDatabase();
    const store = openPostgresStore(db.url, { poolSize: 2, applicationName: APP });
    const holder = new pg.Client({ connectionString: db.url });
    const other = new pg.Client({ connectionString: db.url });
    await holder.connect();
    await other.connect();
    let firing: Promise<FireResult> | null = null;
    try {
      const now = Date.now();
      const s = parseSchedule({ expr: '* * * * *' });
      // Created two minutes ago, so its first slot is due.
      const schedule = (name: string) =>
        store.createSchedule(newTaskId(now), 'u', { name, expr: s.expr, tz: s.tz, overlap: 'allow', catchup: 'latest', maxCatchup: 10, template: makeSpec({ name }) }, now - 120_000, firstFireAfter(s, now - 120_000));
      const rec = await schedule('order');
      const epoch = (await store.acquireLeadershipEpoch(LEASE, 'a', now, 60_000))!;
      assert.equal(epoch, 1);

      // 1. The leaders row held (as a takeover's upsert holds it): the firing waits there, and its schedule's row stays free.
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM leaders WHERE name = $1 FOR UPDATE', [LEASE]);
      firing = store.fireSchedule(request(rec, 'a', epoch, now));
      await untilWaitingOnLock(other);
      await other.query('BEGIN');
      const free = await other.query('SELECT id FROM schedules WHERE id = $1 FOR UPDATE NOWAIT', [rec.id]).then(
        (r) => r.rowCount,
        (e: Error) => e,
      );
      await other.query('ROLLBACK');
      assert.equal(free, 1, `the schedule's row was free while the firing waited on the leaders row (${String(free)})`);
      await holder.query('ROLLBACK');
      const fired = await firing;
      firing = null;
      assert.equal(fired.ok, true, JSON.stringify(fired));

      // 2. A schedule's row held by someone else: a firing under a lease that does not match is refused at once,
      // without waiting for that row.
      const rec2 = await schedule('order2');
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM schedules WHERE id = $1 FOR UPDATE', [rec2.id]);
      const refused = await Promise.race([
        store.fireSchedule(request(rec2, 'a', epoch + 1, now)),
        new Promise<'waited'>((resolve) => setTimeout(() => resolve('waited'), 5000).unref()),
      ]);
      assert.deepEqual(refused, { ok: false, reason: 'not_leader' });
      // And the right lease does wait for the row (so the row lock is real), then fires.
      firing = store.fireSchedule(request(rec2, 'a', epoch, now));
      await untilWaitingOnLock(other);
      await holder.query('ROLLBACK');
      assert.equal((await firing).ok, true);
      firing = null;
    } finally {
      await holder.query('ROLLBACK').catch(() => {});
      await firing?.catch(() => {});
      await holder.end();
      await other.end();
      await store.close();
      await db.drop();
    }
  });
});
