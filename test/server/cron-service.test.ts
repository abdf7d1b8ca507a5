/**
 * The cron firing loop against a real (in-memory SQLite) store and a fake
 * clock: nothing sleeps; ticks are called directly (start() and its timers
 * are not used here; the e2e test covers them with a real server).
 */
import type { Task } from '../../src/core/task.js';
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { FakeClock } from '../../src/core/clock.js';
import { InvalidInputError } from '../../src/core/errors.js';
import { newTaskId } from '../../src/core/ids.js';
import { firstFireAfter } from '../../src/core/cron/next-fire.js';
import { SKIP_COUNT_LIMIT } from '../../src/core/cron/plan-due.js';
import { parseSchedule } from '../../src/core/cron/schedule.js';
import { CRON_LEASE, CronService, DEFAULT_CRON_LEASE_TTL_MS } from '../../src/server/cron-service.js';
import { runScheduleNow } from '../../src/server/schedule-run-now.js';
import { taskJson, taskSummaryJson } from '../../src/server/serialize.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { ScheduleRecord, ScheduleSpec, Store } from '../../src/store/store.js';
import { makeSpec } from '../store/contract.js';

const quiet = { info() {}, warn() {}, error() {} };
const SEC = 1000;
const MIN = 60 * SEC;
/** 2026-01-01T00:00:00Z */
const T0 = Date.UTC(2026, 0, 1);
const iso = (t: number) => new Date(t).toISOString();

describe('cron service (fake clock, SQLite)', () => {
  let store: Store;
  let clock: FakeClock;
  let cron: CronService;
  let warnings: Array<{ obj: object; msg?: string }>;
  beforeEach(async () => {
    store = openSqliteStore(':memory:');
    await store.migrate();
    clock = new FakeClock(T0);
    warnings = [];
    cron = new CronService(store, clock, { ...quiet, warn: (obj, msg) => void warnings.push({ obj, msg }) }, { holder: 's1' });
  });
  afterEach(async () => {
    cron.stop();
    await cron.whenIdle();
    await store.close();
  });

  /** A schedule as the API would store it: created now, nextFireAt = first fire after now. */
  async function add(name: string, expr: string, o: Partial<ScheduleSpec> = {}): Promise<ScheduleRecord> {
    const s = parseSchedule({ expr, tz: o.tz ?? 'UTC' });
    const spec: ScheduleSpec = { name, expr: s.expr, tz: s.tz, overlap: 'allow', catchup: 'latest', maxCatchup: 10, template: makeSpec({ name }), ...o };
    return store.createSchedule(newTaskId(clock.now()), 'u', spec, clock.now(), firstFireAfter(s, clock.now()));
  }
  const tasksOf = async (s: ScheduleRecord) => (await store.listTasks({ limit: 1000 })).tasks.filter((t) => t.scheduleId === s.id).sort((a, b) => a.scheduledAt! - b.scheduledAt!);
  /** The slots of the schedule's tasks (run-now tasks have none and are left out). */
  const slotsOf = async (s: ScheduleRecord) => (await tasksOf(s)).filter((t) => t.scheduledAt !== null).map((t) => iso(t.scheduledAt!));
  const runsOf = async (s: ScheduleRecord) => (await store.scheduleRuns(s.id, 1000)).reverse().map((r) => `${iso(r.slotAt)} ${r.outcome}${r.reason ? ` ${r.reason}` : ''}`);
  const at = async (t: number) => {
    clock.set(t);
    await cron.tick();
  };

  it('fires each slot once, on its time, and advances the schedule', async () => {
    const s = await add('m', '* * * * *');
    await at(T0 + 30 * SEC);
    assert.deepEqual(await slotsOf(s), []);
    await at(T0 + MIN);
    await at(T0 + MIN + 1);
    await at(T0 + MIN + 2 * SEC);
    const tasks = await tasksOf(s);
    assert.deepEqual(tasks.map((t) => iso(t.scheduledAt!)), [iso(T0 + MIN)]);
    assert.equal(tasks[0]!.createdAt - tasks[0]!.scheduledAt!, 0, 'lateness 0: created at the tick at its slot');
    assert.equal(tasks[0]!.state, 'waiting');
    const after = (await store.getSchedule(s.id))!;
    assert.equal(after.lastSlotAt, T0 + MIN);
    assert.equal(after.nextFireAt, T0 + 2 * MIN);
    await at(T0 + 2 * MIN + 300);
    assert.deepEqual(await slotsOf(s), [iso(T0 + MIN), iso(T0 + 2 * MIN)]);
    assert.equal(cron.stats.fired, 2);
  });

  describe('catch-up across a downtime (created at 00:00, no tick until 00:10:30)', () => {
    const DOWN_UNTIL = T0 + 10 * MIN + 30 * SEC;

    it('none: fires nothing, records the first and last missed slot, then fires the next on time', async () => {
      const s = await add('n', '* * * * *', { catchup: 'none' });
      await at(DOWN_UNTIL);
      assert.deepEqual(await slotsOf(s), []);
      assert.deepEqual(await runsOf(s), [`${iso(T0 + MIN)} skipped catchup_none`, `${iso(T0 + 10 * MIN)} skipped catchup_none`]);
      assert.ok(warnings.some((w) => (w.obj as { dropped?: number }).dropped === 10), 'the log says how many were dropped');
      await at(T0 + 11 * MIN);
      assert.deepEqual(await slotsOf(s), [iso(T0 + 11 * MIN)]);
    });

    it('latest: fires the most recent missed slot once', async () => {
      const s = await add('l', '* * * * *', { catchup: 'latest' });
      await at(DOWN_UNTIL);
      await at(DOWN_UNTIL + SEC);
      assert.deepEqual(await slotsOf(s), [iso(T0 + 10 * MIN)]);
      assert.deepEqual(await runsOf(s), [`${iso(T0 + MIN)} skipped catchup_latest`, `${iso(T0 + 9 * MIN)} skipped catchup_latest`, `${iso(T0 + 10 * MIN)} fired`]);
      const t = (await tasksOf(s))[0]!;
      assert.equal(t.createdAt - t.scheduledAt!, 30 * SEC, 'its lateness is the downtime past the slot');
    });

    it('all: fires the newest maxCatchup missed slots, oldest first, and records the capped ones', async () => {
      const s = await add('a', '* * * * *', { catchup: 'all', maxCatchup: 3 });
      await at(DOWN_UNTIL);
      assert.deepEqual(await slotsOf(s), [iso(T0 + 8 * MIN), iso(T0 + 9 * MIN), iso(T0 + 10 * MIN)]);
      assert.deepEqual((await runsOf(s)).filter((r) => r.includes('skipped')), [`${iso(T0 + MIN)} skipped catchup_capped`, `${iso(T0 + 7 * MIN)} skipped catchup_capped`]);
      assert.ok(warnings.some((w) => /capped/.test(w.msg ?? '')), 'a warning when capped');
      // The count of dropped slots (00:01-00:07) is stored with both records, not only logged.
      const stored = (await store.scheduleRuns(s.id, 100)).filter((r) => r.outcome === 'skipped');
      assert.deepEqual(stored.map((r) => r.catchup), [{ count: 7, exact: true }, { count: 7, exact: true }]);
      assert.equal((await store.scheduleRuns(s.id, 100)).filter((r) => r.outcome === 'fired' && r.catchup !== null).length, 0);
    });

    it('all under the cap: fires every missed slot once, nothing skipped', async () => {
      const s = await add('a2', '* * * * *', { catchup: 'all', maxCatchup: 20 });
      await at(DOWN_UNTIL);
      await at(DOWN_UNTIL + 1);
      assert.equal((await slotsOf(s)).length, 10);
      assert.equal((await runsOf(s)).filter((r) => r.includes('skipped')).length, 0);
    });

    it('a per-second schedule down for a day records two skipped rows, not 86,400', async () => {
      const s = await add('sec', '* * * * * *', { catchup: 'none' });
      await at(T0 + 86_400 * SEC + 10 * SEC);
      const runs = await store.scheduleRuns(s.id, 1000);
      // Slots 0-5 s old are on time (not missed) and fire under every policy.
      assert.equal(runs.filter((r) => r.outcome === 'skipped').length, 2);
      // 86,400 + 4 missed slots, counted up to the core's limit: stored as a lower bound.
      for (const r of runs.filter((x) => x.outcome === 'skipped')) assert.deepEqual(r.catchup, { count: SKIP_COUNT_LIMIT + 1, exact: false });
      assert.ok(runs.filter((r) => r.outcome === 'fired').length <= 6);
    });

    it('a paused schedule fires nothing; resumed, its missed slots follow the catch-up policy', async () => {
      const s = await add('p', '* * * * *', { catchup: 'latest' });
      await store.setPaused(s.id, true, T0 + 1, null);
      await at(T0 + 5 * MIN);
      assert.deepEqual(await slotsOf(s), []);
      // The API resumes with nextFireAt = first fire after now.
      await store.setPaused(s.id, false, T0 + 5 * MIN + 20 * SEC, T0 + 6 * MIN);
      cron.kick();
      await cron.whenIdle();
      assert.deepEqual(await slotsOf(s), [], 'nothing before the next fire time');
      await at(T0 + 6 * MIN);
      // latest: the on-time 00:06 slot is the latest; the paused ones are recorded skipped.
      assert.deepEqual(await slotsOf(s), [iso(T0 + 6 * MIN)]);
      assert.deepEqual((await runsOf(s)).filter((r) => r.includes('skipped')), [`${iso(T0 + MIN)} skipped catchup_latest`, `${iso(T0 + 5 * MIN)} skipped catchup_latest`]);
    });
  });

  describe('overlap (the previous run still waiting: no worker)', () => {
    it('allow starts the next run beside the previous one', async () => {
      const s = await add('oa', '* * * * *', { overlap: 'allow' });
      await at(T0 + MIN);
      await at(T0 + 2 * MIN);
      const tasks = await tasksOf(s);
      assert.deepEqual(tasks.map((t) => t.state), ['waiting', 'waiting']);
    });

    it('forbid skips the slot while the previous run is active, and fires again once it ended', async () => {
      const s = await add('of', '* * * * *', { overlap: 'forbid' });
      await at(T0 + MIN);
      await at(T0 + 2 * MIN);
      await at(T0 + 3 * MIN);
      assert.deepEqual(await slotsOf(s), [iso(T0 + MIN)]);
      assert.deepEqual(await runsOf(s), [`${iso(T0 + MIN)} fired`, `${iso(T0 + 2 * MIN)} skipped overlap_forbid`, `${iso(T0 + 3 * MIN)} skipped overlap_forbid`]);
      const [first] = await tasksOf(s);
      await store.cancelTask(first!.id, 'u', clock.now());
      await at(T0 + 4 * MIN);
      assert.deepEqual(await slotsOf(s), [iso(T0 + MIN), iso(T0 + 4 * MIN)]);
    });

    it('replace cancels the active run and starts the new one', async () => {
      const s = await add('or', '* * * * *', { overlap: 'replace' });
      await at(T0 + MIN);
      await at(T0 + 2 * MIN);
      const tasks = await tasksOf(s);
      assert.deepEqual(tasks.map((t) => [iso(t.scheduledAt!), t.state]), [
        [iso(T0 + MIN), 'cancelled'],
        [iso(T0 + 2 * MIN), 'waiting'],
      ]);
      const ev = await store.listEvents(tasks[0]!.id);
      assert.equal(ev[ev.length - 1]!.actor, 'cron');
    });

    it('forbid sees a run started by "run now" (no slot): the slot is skipped while it is active', async () => {
      const s = await add('ofm', '* * * * *', { overlap: 'forbid' });
      const manual = ((await runScheduleNow(store, s, 'u', T0 + 10 * SEC)) as { task: Task }).task;
      await at(T0 + MIN);
      assert.deepEqual(await slotsOf(s), []);
      assert.deepEqual(await runsOf(s), [`${iso(T0 + MIN)} skipped overlap_forbid`]);
      await store.cancelTask(manual.id, 'u', clock.now());
      await at(T0 + 2 * MIN);
      assert.deepEqual(await slotsOf(s), [iso(T0 + 2 * MIN)]);
    });

    it('replace cancels every active run, slot runs and "run now" ones, before the new run', async () => {
      const s = await add('orm', '* * * * *', { overlap: 'replace' });
      await at(T0 + MIN);
      const manual = [await runScheduleNow(store, s, 'u', T0 + MIN + SEC), await runScheduleNow(store, s, 'u', T0 + MIN + 2 * SEC)].map((m) => (m as { task: Task }).task);
      await at(T0 + 2 * MIN);
      const [first, second] = await tasksOf(s).then((ts) => ts.filter((t) => t.scheduledAt !== null));
      assert.deepEqual([first!.state, second!.state], ['cancelled', 'waiting']);
      for (const m of manual) {
        const t = (await store.getTask(m.id))!;
        assert.equal(t.state, 'cancelled', 'the run-now task was cancelled too');
        const ev = await store.listEvents(m.id);
        assert.equal(ev[ev.length - 1]!.actor, 'cron');
      }
      assert.deepEqual((await store.activeScheduleRuns([s.id], 10)).map((r) => r.taskId), [second!.id], 'only the new run is active');
    });

    it('allow does not ask what is running (no overlap read for allow schedules)', async () => {
      const s = await add('oal', '* * * * *', { overlap: 'allow' });
      let asked = 0;
      const counting = Object.assign(Object.create(store) as Store, { activeScheduleRuns: (...a: Parameters<Store['activeScheduleRuns']>) => (asked++, store.activeScheduleRuns(...a)) });
      const c2 = new CronService(counting, clock, quiet, { holder: 's1' });
      await runScheduleNow(store, s, 'u', T0 + SEC);
      clock.set(T0 + MIN);
      await c2.tick();
      c2.stop();
      assert.equal(asked, 0);
      assert.deepEqual(await slotsOf(s), [iso(T0 + MIN)]);
    });

    it('forbid with catch-up all fires only the oldest slot of the burst (the others would overlap it)', async () => {
      const s = await add('ofa', '* * * * *', { overlap: 'forbid', catchup: 'all' });
      await at(T0 + 3 * MIN + 30 * SEC);
      assert.deepEqual(await slotsOf(s), [iso(T0 + MIN)]);
      assert.deepEqual(await runsOf(s), [`${iso(T0 + MIN)} fired`, `${iso(T0 + 2 * MIN)} skipped overlap_forbid`, `${iso(T0 + 3 * MIN)} skipped overlap_forbid`]);
    });

    it('replace with catch-up all fires only the newest slot of the burst', async () => {
      const s = await add('ora', '* * * * *', { overlap: 'replace', catchup: 'all' });
      await at(T0 + 3 * MIN + 30 * SEC);
      assert.deepEqual(await slotsOf(s), [iso(T0 + 3 * MIN)]);
      assert.deepEqual((await runsOf(s)).slice(0, 2), [`${iso(T0 + MIN)} skipped overlap_replace`, `${iso(T0 + 2 * MIN)} skipped overlap_replace`]);
    });
  });

  describe('leadership', () => {
    it('a server whose lease another holder took fires nothing, and fences a pass made under the old epoch', async () => {
      const s = await add('lead', '* * * * *');
      await at(T0 + 10 * SEC);
      assert.equal(cron.leading, true);
      // s1 stops renewing (paused); its lease expires and s2 takes it.
      clock.set(T0 + 10 * SEC + DEFAULT_CRON_LEASE_TTL_MS + 1);
      assert.ok((await store.acquireLeadershipEpoch(CRON_LEASE, 's2', clock.now(), 120_000)) !== null);
      clock.set(T0 + MIN);
      // A pass without a renewal (a timer after the pause) still holds the old epoch: the store refuses it.
      cron.kick();
      await cron.whenIdle();
      assert.equal(cron.leading, false, 'not_leader: stops firing');
      await cron.tick();
      assert.equal(cron.leading, false, 'the renewal fails while s2 holds the lease');
      assert.deepEqual(await slotsOf(s), []);
      // s2 fires (another service on the same store), once.
      const s2 = new CronService(store, clock, quiet, { holder: 's2', leaseTtlMs: 120_000 });
      await s2.tick();
      assert.deepEqual(await slotsOf(s), [iso(T0 + MIN)]);
      s2.stop();
    });

    it('takes over an expired lease and fires what came due per catch-up', async () => {
      const s = await add('take', '* * * * *', { catchup: 'latest' });
      assert.ok((await store.acquireLeadershipEpoch(CRON_LEASE, 'dead', clock.now(), DEFAULT_CRON_LEASE_TTL_MS)) !== null);
      await at(T0 + 2 * SEC);
      assert.equal(cron.leading, false);
      await at(T0 + 3 * MIN + 20 * SEC);
      assert.equal(cron.leading, true);
      assert.deepEqual(await slotsOf(s), [iso(T0 + 3 * MIN)]);
    });

    it('two firers racing on one slot (same lease) create one task: the loser re-plans on stale', async () => {
      const s = await add('race', '* * * * * *');
      const other = new CronService(store, clock, quiet, { holder: 's1' });
      for (let i = 1; i <= 5; i++) {
        clock.set(T0 + i * SEC);
        await Promise.all([cron.tick(), other.tick()]);
      }
      assert.deepEqual(await slotsOf(s), [1, 2, 3, 4, 5].map((i) => iso(T0 + i * SEC)));
      assert.ok(cron.stats.replans + other.stats.replans > 0, 'the optimistic guard was exercised');
      other.stop();
    });
  });

  it('a clock that jumps backwards re-runs nothing', async () => {
    const s = await add('back', '*/10 * * * *');
    await at(T0 + 10 * MIN);
    await at(T0 + 3 * MIN);
    await at(T0 + 10 * MIN);
    await at(T0 + 15 * MIN);
    assert.deepEqual(await slotsOf(s), [iso(T0 + 10 * MIN)]);
    await at(T0 + 20 * MIN);
    assert.deepEqual(await slotsOf(s), [iso(T0 + 10 * MIN), iso(T0 + 20 * MIN)]);
  });

  it('a schedule deleted while due fires nothing and does not stop the others', async () => {
    const a = await add('a', '* * * * *');
    const b = await add('b', '* * * * *');
    await store.deleteSchedule(a.id);
    await at(T0 + MIN);
    assert.deepEqual(await slotsOf(a), []);
    assert.deepEqual(await slotsOf(b), [iso(T0 + MIN)]);
  });

  it('a run carries scheduleId and scheduledAt in the task JSON and the summary row', async () => {
    const s = await add('json', '* * * * *');
    await at(T0 + MIN);
    const [t] = await tasksOf(s);
    const j = taskJson(t!, 'u');
    assert.equal(j.scheduleId, s.id);
    assert.equal(j.scheduledAt, iso(T0 + MIN));
    const [sum] = await store.getTaskSummaries([t!.id]);
    assert.equal(taskSummaryJson(sum!).scheduleId, s.id);
    assert.equal(taskSummaryJson(sum!).scheduledAt, iso(T0 + MIN));
    const page = await store.listTaskSummaries({ limit: 10 });
    assert.equal(page.tasks[0]!.scheduledAt, T0 + MIN);
    const plain = (await store.createTask(newTaskId(clock.now()), 'u', makeSpec({ name: 'x' }), 'u', clock.now())).task;
    const [ps] = await store.getTaskSummaries([plain.id]);
    assert.deepEqual([taskJson(plain, 'u').scheduleId, taskJson(plain, 'u').scheduledAt, ps!.scheduleId, ps!.scheduledAt], [null, null, null, null]);
  });

  it('rejects bad options naming the field', () => {
    const make = (o: object) => () => new CronService(store, clock, quiet, { holder: 's', ...o });
    assert.throws(make({ holder: '' }), (e: unknown) => e instanceof InvalidInputError && /holder/.test(e.message));
    assert.throws(make({ tickMs: 0 }), (e: unknown) => e instanceof InvalidInputError && /tickMs/.test(e.message));
    assert.throws(make({ tickMs: 5000 }), (e: unknown) => e instanceof InvalidInputError && /tickMs/.test(e.message));
    assert.throws(make({ leaseTtlMs: 1000 }), (e: unknown) => e instanceof InvalidInputError && /leaseTtlMs/.test(e.message));
  });
});
