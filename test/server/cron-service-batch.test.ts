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
import { CRON_LEASE, CronService, DEFAULT_CRON_LEASE_TTL_MS, DUE_BATCH, FIRE_GROUP, FIRE_IN_FLIGHT, PREPARE_AHEAD_MS, storeBatches } from '../../src/server/cron-service.js';
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

  describe('read ahead (prepareAhead): what comes due is read and planned before its due time', () => {
    /** The store's reads and writes in call order. */
    let calls: string[];
    let logging: Store;
    beforeEach(() => {
      calls = [];
      logging = Object.assign(Object.create(store) as Store, {
        dueSchedules: (...a: Parameters<Store['dueSchedules']>) => (calls.push('due'), store.dueSchedules(...a)),
        fireSchedules: (b: FireBatch) => (calls.push(`fire ${b.requests.length}`), store.fireSchedules(b)),
      });
    });

    /** A service that took the lease before T0 + MIN (nothing due yet) and has read ahead for it. */
    async function readAhead(): Promise<CronService> {
      const cron = new CronService(logging, clock, quiet, { holder: 's1' });
      clock.set(T0 + MIN - PREPARE_AHEAD_MS);
      await cron.tick();
      await cron.prepareAhead(T0 + MIN);
      return cron;
    }

    it('read and planned ahead, nothing is written; at the due time the pass fires them before it reads anything', async () => {
      await addMany(DUE_BATCH + 200);
      const cron = await readAhead();
      assert.equal(await taskCount(), 0, 'nothing is written ahead');
      assert.equal(cron.stats.fired, 0);
      calls = [];
      clock.set(T0 + MIN + 3);
      cron.kick();
      await cron.whenIdle();
      const g = `fire ${FIRE_GROUP}`;
      assert.deepEqual(calls, [g, g, 'fire 200', 'due'], 'the read ahead fired first; then one read finds nothing left');
      assert.equal(cron.stats.fired, DUE_BATCH + 200);
      assert.equal(await taskCount(), DUE_BATCH + 200);
      // Created at the firing, not at the read ahead.
      const t = (await bare.listTasks({ limit: 1 })).tasks[0]!;
      assert.equal(t.createdAt, T0 + MIN + 3);
      assert.equal(t.scheduledAt, T0 + MIN);
      cron.stop();
    });

    it('a pass before the due time leaves the read ahead for the due time', async () => {
      await addMany(3);
      const cron = await readAhead();
      clock.set(T0 + MIN - 100);
      await cron.tick();
      assert.equal(await taskCount(), 0);
      calls = [];
      clock.set(T0 + MIN);
      await cron.tick();
      assert.deepEqual(calls, ['fire 3', 'due']);
      assert.equal(await taskCount(), 3);
      cron.stop();
    });

    it('paused, removed or fired elsewhere in between: not fired by the read ahead (stale, re-read); created in between: read at the due time', async () => {
      await addMany(4);
      const cron = await readAhead();
      const [paused, removed, raced] = await store.dueSchedules(T0 + MIN, 10);
      await store.setPaused(paused!.id, true, clock.now(), null);
      assert.equal(await store.deleteSchedule(removed!.id), true);
      const leader = { name: CRON_LEASE, holder: 's1', epoch: (await bare.acquireLeadershipEpoch(CRON_LEASE, 's1', clock.now(), DEFAULT_CRON_LEASE_TTL_MS))! };
      const fired = await bare.fireSchedule({ scheduleId: raced!.id, leader, now: clock.now(), expectedLastSlotAt: null, fire: [{ slot: T0 + MIN, taskId: newTaskId(clock.now()) }], skipped: [], lastSlotAt: T0 + MIN, nextFireAt: T0 + 2 * MIN });
      assert.equal(fired.ok, true);
      await addMany(1, { name: 'late' });
      clock.set(T0 + MIN);
      await cron.tick();
      // The fourth of the first four and the one created late; the raced one has its one task from elsewhere.
      assert.equal(cron.stats.fired, 2);
      assert.equal(cron.stats.replans, 3);
      assert.equal(await taskCount(), 3);
      assert.deepEqual(await store.dueSchedules(T0 + MIN, 10), []);
      cron.stop();
    });

    it('only overlap allow is read ahead: the other policies see what runs at the firing itself', async () => {
      await addMany(2);
      await addMany(1, { name: 'forbid', overlap: 'forbid' });
      const cron = await readAhead();
      calls = [];
      clock.set(T0 + MIN);
      await cron.tick();
      assert.deepEqual(calls, ['fire 2', 'due', 'fire 1'], 'the forbid schedule is read and planned at the due time');
      assert.equal(await taskCount(), 3);
      cron.stop();
    });

    it('without the lease nothing is read ahead', async () => {
      await addMany(3);
      const other = new CronService(logging, clock, quiet, { holder: 's2' });
      const cron = new CronService(logging, clock, quiet, { holder: 's1' });
      clock.set(T0 + MIN - PREPARE_AHEAD_MS);
      await other.tick(); // s2 holds the lease
      await cron.tick();
      assert.equal(cron.leading, false);
      calls = [];
      await cron.prepareAhead(T0 + MIN);
      assert.deepEqual(calls, [], 'not read');
      other.stop();
      cron.stop();
    });

    it('a lease taken over between the read ahead and the due time: nothing of it fires, and the service stops leading', async () => {
      await addMany(3);
      const cron = await readAhead();
      // Another server takes the lease (as after s1 stalled past its expiry).
      assert.notEqual(await bare.acquireLeadershipEpoch(CRON_LEASE, 's2', clock.now() + DEFAULT_CRON_LEASE_TTL_MS + 1, DEFAULT_CRON_LEASE_TTL_MS), null);
      calls = [];
      clock.set(T0 + MIN);
      cron.kick();
      await cron.whenIdle();
      assert.deepEqual(calls, ['fire 3'], 'refused (not_leader); nothing read after it');
      assert.equal(cron.stats.fired, 0);
      assert.equal(await taskCount(), 0);
      assert.equal(cron.leading, false);
      cron.stop();
    });
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
