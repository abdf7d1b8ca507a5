/**
 * The firing loop's batches (cron-service.ts pass / fireBatch, storeBatches):
 * many schedules due at once go through few store transactions, a long pass
 * keeps its lease, and a batch's limits hold. Real SQLite store, fake clock;
 * the store is wrapped only to count and time its calls.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { FakeClock } from '../../src/core/clock.js';
import { firstFireAfter } from '../../src/core/cron/next-fire.js';
import { parseSchedule } from '../../src/core/cron/schedule.js';
import { newTaskId } from '../../src/core/ids.js';
import { CRON_LEASE, CronService, DEFAULT_CRON_LEASE_TTL_MS, DUE_BATCH, FIRE_GROUP, FIRE_IN_FLIGHT, storeBatches } from '../../src/server/cron-service.js';
import { MAX_FIRE_SCHEDULES, MAX_FIRE_TASKS, type FireBatch, type ScheduleFiring } from '../../src/store/schedules.js';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { ScheduleSpec, Store } from '../../src/store/store.js';
import { makeSpec } from '../store/contract.js';

const quiet = { info() {}, warn() {}, error() {} };
const MIN = 60_000;
/** 2026-01-01T00:00:00Z */
const T0 = Date.UTC(2026, 0, 1);

describe('cron service: batched firing (fake clock, SQLite)', () => {
  let bare: SqliteStore;
  let clock: FakeClock;
  let batches: FireBatch[];
  /** Called on every fireSchedules, before the store runs it. */
  let onFire: () => void;
  let store: Store;
  beforeEach(async () => {
    bare = openSqliteStore(':memory:');
    await bare.migrate();
    clock = new FakeClock(T0);
    batches = [];
    onFire = () => {};
    store = Object.assign(Object.create(bare) as Store, {
      fireSchedules: (b: FireBatch) => {
        batches.push(b);
        onFire();
        return bare.fireSchedules(b);
      },
    });
  });
  afterEach(async () => {
    await bare.close();
  });

  async function addMany(n: number, o: Partial<ScheduleSpec> = {}): Promise<void> {
    const s = parseSchedule({ expr: '* * * * *' });
    const CHUNK = 200;
    for (let i = 0; i < n; i += CHUNK) {
      await Promise.all(
        Array.from({ length: Math.min(CHUNK, n - i) }, (_, j) => {
          const spec: ScheduleSpec = { name: `s${i + j}`, expr: s.expr, tz: s.tz, overlap: 'allow', catchup: 'latest', maxCatchup: 10, template: makeSpec({ name: `s${i + j}` }), ...o };
          return store.createSchedule(newTaskId(clock.now()), `u${(i + j) % 7}`, spec, clock.now(), firstFireAfter(s, clock.now()));
        }),
      );
    }
  }
  const taskCount = async () => Object.values(await bare.countTasksByState()).reduce((a, b) => a + b, 0);

  it(`1,200 schedules due at the same second fire in one pass, read ${DUE_BATCH} at a time, one store transaction per ${FIRE_GROUP} of them`, async () => {
    assert.equal(DUE_BATCH, 2 * FIRE_GROUP, 'the counts below assume a due batch of two store batches');
    await addMany(1200);
    const cron = new CronService(store, clock, quiet, { holder: 's1' });
    clock.set(T0 + MIN);
    await cron.tick();
    assert.equal(cron.stats.fired, 1200);
    assert.equal(await taskCount(), 1200);
    assert.deepEqual(batches.map((b) => b.requests.length), [500, 500, 200]);
    // Every slot once, every schedule advanced.
    assert.deepEqual(await store.dueSchedules(T0 + MIN, 10), []);
    clock.set(T0 + 2 * MIN);
    await cron.tick();
    assert.equal(await taskCount(), 2400);
    cron.stop();
  });

  it(`a due batch's store batches are in flight together, ${FIRE_IN_FLIGHT} at most`, async () => {
    await addMany(2 * DUE_BATCH + 1);
    let inFlight = 0;
    let most = 0;
    const counting = Object.assign(Object.create(store) as Store, {
      fireSchedules: async (b: FireBatch) => {
        most = Math.max(most, ++inFlight);
        try {
          return await store.fireSchedules(b);
        } finally {
          inFlight--;
        }
      },
    });
    const cron = new CronService(counting, clock, quiet, { holder: 's1' });
    clock.set(T0 + MIN);
    await cron.tick();
    assert.equal(cron.stats.fired, 2 * DUE_BATCH + 1);
    assert.equal(await taskCount(), 2 * DUE_BATCH + 1);
    assert.equal(most, FIRE_IN_FLIGHT);
    assert.deepEqual(batches.map((b) => b.requests.length), [FIRE_GROUP, FIRE_GROUP, FIRE_GROUP, FIRE_GROUP, 1]);
    cron.stop();
  });

  it('a lease taken over while two store batches are in flight: neither fires, the service stops leading, no later batch is tried', async () => {
    await addMany(DUE_BATCH + 10);
    const cron = new CronService(store, clock, quiet, { holder: 's1' });
    clock.set(T0 + MIN - 100);
    await cron.tick(); // takes the lease; nothing is due yet
    assert.equal(cron.leading, true);
    clock.set(T0 + MIN);
    let first = true;
    onFire = () => {
      if (!first) return;
      first = false;
      // Another server takes the expired lease; its write is queued before the two firings'.
      void bare.acquireLeadershipEpoch(CRON_LEASE, 's2', T0 + MIN + DEFAULT_CRON_LEASE_TTL_MS + 1, DEFAULT_CRON_LEASE_TTL_MS);
    };
    cron.kick();
    await cron.whenIdle();
    assert.equal(cron.leading, false);
    assert.equal(cron.stats.fired, 0);
    assert.equal(await taskCount(), 0);
    assert.deepEqual(batches.map((b) => b.requests.length), [FIRE_GROUP, FIRE_GROUP], 'the due batch after them was not tried');
    cron.stop();
  });

  it('a pass longer than the lease renews it between batches and fires everything', async () => {
    await addMany(1200);
    const cron = new CronService(store, clock, quiet, { holder: 's1' });
    clock.set(T0 + MIN);
    // Each batch's transaction "takes" 3 s: without a renewal in the pass, the third would be refused (not_leader).
    onFire = () => void clock.advance(3000);
    await cron.tick();
    assert.ok(3 * 3000 > DEFAULT_CRON_LEASE_TTL_MS);
    assert.equal(cron.leading, true);
    assert.equal(cron.stats.fired, 1200);
    cron.stop();
  });

  it('a pass of one batch writes no lease renewal before firing (the renewal is the tick\'s; it would delay the slot)', async () => {
    await addMany(3);
    let renewals = 0;
    const counting = Object.assign(Object.create(store) as Store, {
      acquireLeadershipEpoch: (...a: Parameters<Store['acquireLeadershipEpoch']>) => (renewals++, store.acquireLeadershipEpoch(...a)),
    });
    const cron = new CronService(counting, clock, quiet, { holder: 's1' });
    clock.set(T0 + MIN - 100);
    await cron.tick();
    assert.equal(renewals, 1);
    // The due timer's pass, a whole tick after the last renewal (the lease, 5 s, still holds).
    clock.set(T0 + MIN + 900);
    cron.kick();
    await cron.whenIdle();
    assert.equal(cron.stats.fired, 3);
    assert.equal(renewals, 1);
    cron.stop();
  });

  it('a stale schedule in a batch is re-read and re-planned; the rest of the batch fires', async () => {
    await addMany(3);
    const cron = new CronService(store, clock, quiet, { holder: 's1' });
    clock.set(T0 + MIN);
    // Another firer (same lease) fires schedule s1 between this pass's read and its write.
    const [, victim] = await store.dueSchedules(clock.now(), 10);
    let once = true;
    onFire = () => {
      if (!once) return;
      once = false;
      void bare.fireSchedule({ scheduleId: victim!.id, leader: batches[0]!.leader, now: clock.now(), expectedLastSlotAt: null, fire: [{ slot: T0 + MIN, taskId: newTaskId(clock.now()) }], skipped: [], lastSlotAt: T0 + MIN, nextFireAt: T0 + 2 * MIN });
    };
    await cron.tick();
    assert.equal(await taskCount(), 3, 'one task per schedule, the raced one included');
    assert.equal(cron.stats.replans, 1);
    assert.equal(cron.stats.fired, 2);
    cron.stop();
  });

  it('storeBatches: within MAX_FIRE_SCHEDULES schedules and MAX_FIRE_TASKS tasks each, in order', () => {
    const req = (tasks: number) => ({ request: { fire: Array.from({ length: tasks }, (_, i) => ({ slot: i, taskId: String(i) })) } as unknown as ScheduleFiring });
    assert.deepEqual(storeBatches([]), []);
    const many = Array.from({ length: MAX_FIRE_SCHEDULES + 5 }, () => req(0));
    assert.deepEqual(storeBatches(many).map((b) => b.length), [MAX_FIRE_SCHEDULES, 5]);
    const big = [req(600), req(300), req(200), req(MAX_FIRE_TASKS), req(1)];
    assert.deepEqual(storeBatches(big).map((b) => b.map((p) => p.request.fire.length)), [[600, 300], [200], [MAX_FIRE_TASKS], [1]]);
    // A smaller schedule limit; one above fireSchedules' own is capped at it.
    assert.deepEqual(storeBatches(many, 400).map((b) => b.length), [400, 400, MAX_FIRE_SCHEDULES + 5 - 800]);
    assert.deepEqual(storeBatches(many, MAX_FIRE_SCHEDULES * 2).map((b) => b.length), [MAX_FIRE_SCHEDULES, 5]);
    assert.deepEqual(storeBatches(big, 1).map((b) => b.length), [1, 1, 1, 1, 1]);
    assert.throws(() => storeBatches(many, 0), /maxSchedules/);
    assert.throws(() => storeBatches(many, 1.5), /maxSchedules/);
  });
});
