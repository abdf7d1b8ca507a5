/**
 * The cron firing loop on PostgreSQL with two servers (two stores, two pools,
 * one database): only the lease holder fires, a takeover fences the former
 * leader, and summary rows carry the run's schedule and slot on this backend
 * too. The lease runs on the database's clock, so its expiry is real time
 * (a 300 ms lease, awaited by a bounded poll of the taker's renewals); slots
 * are planned on a fake clock set near the real one and moved by hand.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { FakeClock } from '../../src/core/clock.js';
import { firstFireAfter } from '../../src/core/cron/next-fire.js';
import { parseSchedule } from '../../src/core/cron/schedule.js';
import { newTaskId } from '../../src/core/ids.js';
import { CronService } from '../../src/server/cron-service.js';
import { openPostgresStore } from '../../src/store/postgres/postgres-store.js';
import type { ScheduleRecord, Store } from '../../src/store/store.js';
import { makeSpec } from '../store/contract.js';
import { createTestDatabase, dropAllTestDatabases, PG_SKIP_REASON, requirePostgres } from '../support/postgres.js';

const PG = await requirePostgres();
const quiet = { info() {}, warn() {}, error() {} };
const SEC = 1000;

after(async () => {
  if (PG) await dropAllTestDatabases();
});

describe('cron service on PostgreSQL (two servers)', { skip: PG ? false : PG_SKIP_REASON }, () => {
  it('only the holder fires; a takeover fences the old leader; each slot has one task; summaries carry the slot', async () => {
    const db = await createTestDatabase();
    const a: Store = openPostgresStore(db.url);
    const b: Store = openPostgresStore(db.url);
    const clock = new FakeClock(Math.floor(Date.now() / SEC) * SEC);
    const ca = new CronService(a, clock, quiet, { holder: 'server-a', tickMs: 100, leaseTtlMs: 300 });
    const cb = new CronService(b, clock, quiet, { holder: 'server-b', tickMs: 100, leaseTtlMs: 300 });
    try {
      const s = parseSchedule({ expr: '* * * * * *' });
      const rec: ScheduleRecord = await a.createSchedule(newTaskId(clock.now()), 'u', { name: 'sec', expr: s.expr, tz: s.tz, overlap: 'allow', catchup: 'latest', maxCatchup: 10, template: makeSpec({ name: 'sec' }) }, clock.now(), firstFireAfter(s, clock.now()));
      const runs = async () => (await a.scheduleRuns(rec.id, 100)).filter((r) => r.outcome === 'fired');

      await ca.tick();
      assert.equal(ca.leading, true);
      for (let i = 1; i <= 3; i++) {
        clock.advance(SEC);
        await Promise.all([ca.tick(), cb.tick()]);
        assert.equal(cb.leading, false, 'b does not lead while a renews');
      }
      assert.equal((await runs()).length, 3);
      assert.equal(ca.stats.fired, 3);
      assert.equal(cb.stats.fired, 0);

      // a stops renewing (a pause); b takes the expired lease.
      const deadline = Date.now() + 5000;
      while (!cb.leading) {
        assert.ok(Date.now() < deadline, 'b takes over within the lease');
        await new Promise((r) => setTimeout(r, 50));
        await cb.tick();
      }
      clock.advance(SEC);
      // a wakes with its old epoch (a pass, no renewal): fenced.
      ca.kick();
      await ca.whenIdle();
      assert.equal(ca.leading, false);
      assert.equal(ca.stats.fired, 3);
      await cb.tick();
      const fired = await runs();
      assert.equal(fired.length, 4);
      assert.equal(cb.stats.fired, 1);
      const slots = fired.map((r) => r.slotAt);
      assert.equal(new Set(slots).size, slots.length, 'one task per slot');

      const sums = await b.getTaskSummaries(fired.map((r) => r.taskId!));
      assert.equal(sums.length, 4);
      for (const t of sums) {
        assert.equal(t.scheduleId, rec.id);
        assert.equal(typeof t.scheduledAt, 'number');
        assert.ok(slots.includes(t.scheduledAt!));
      }
      const page = await b.listTaskSummaries({ limit: 10 });
      assert.ok(page.tasks.every((t) => t.scheduleId === rec.id && typeof t.scheduledAt === 'number'));
    } finally {
      ca.stop();
      cb.stop();
      await ca.whenIdle();
      await cb.whenIdle();
      await a.close();
      await b.close();
      await db.drop();
    }
  });
});
