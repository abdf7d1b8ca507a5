/**
 * The sweeper leader's retention pass (retention.ts pruneExpired) trims
 * schedules' run records to the newest SCHEDULE_RUNS_KEPT, over several
 * bounded transactions, on a real SQLite store. (Both stores' pruning is in
 * the contract suite: test/store/contract-schedules.ts.)
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newTaskId } from '../../src/core/ids.js';
import { pruneExpired, RUNS_PRUNE_PER_SCHEDULE, RUNS_PRUNE_SCHEDULES } from '../../src/server/retention.js';
import { MIGRATIONS as PG_MIGRATIONS } from '../../src/store/postgres/migrations.js';
import { RUNS_OVER_SQL, SCHEDULE_RUNS_KEPT, SCHEDULE_RUNS_SLACK } from '../../src/store/schedules.js';
import { MIGRATIONS as SQLITE_MIGRATIONS } from '../../src/store/sqlite/migrations.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { ScheduleSpec, Store } from '../../src/store/store.js';
import { makeSpec } from '../store/contract.js';

const T0 = Date.UTC(2026, 0, 1);
const MIN = 60_000;

describe('retention: schedule run records', () => {
  it('the limit in the partial index and its query is SCHEDULE_RUNS_KEPT + SCHEDULE_RUNS_SLACK', () => {
    assert.equal(RUNS_OVER_SQL, `run_count > ${SCHEDULE_RUNS_KEPT + SCHEDULE_RUNS_SLACK}`);
    for (const m of [...SQLITE_MIGRATIONS, ...PG_MIGRATIONS].filter((x) => /schedules_runs_over/.test(x.sql))) assert.match(m.sql, new RegExp(`WHERE ${RUNS_OVER_SQL};`));
  });


  it(`keeps the newest ${SCHEDULE_RUNS_KEPT} run records of every schedule over the limit, at most ${RUNS_PRUNE_SCHEDULES} schedules (${RUNS_PRUNE_PER_SCHEDULE} records each) per transaction`, async () => {
    const store: Store = openSqliteStore(':memory:');
    await store.migrate();
    try {
      const epoch = (await store.acquireLeadershipEpoch('cron', 'test', T0, 60_000))!;
      const sizes = [SCHEDULE_RUNS_KEPT + SCHEDULE_RUNS_SLACK + 1, ...Array.from({ length: RUNS_PRUNE_SCHEDULES + 2 }, () => SCHEDULE_RUNS_KEPT + 450), 700];
      const ids: string[] = [];
      for (const [i, n] of sizes.entries()) {
        const spec: ScheduleSpec = { name: `s${i}`, expr: '* * * * *', tz: 'UTC', overlap: 'allow', catchup: 'latest', maxCatchup: 10, template: makeSpec({ name: `s${i}` }) };
        const s = await store.createSchedule(newTaskId(T0 + i), 'u', spec, T0, T0 + MIN);
        const slots = Array.from({ length: n }, (_, k) => T0 + (k + 1) * MIN);
        const f = await store.fireSchedule({ scheduleId: s.id, leader: { name: 'cron', holder: 'test', epoch }, now: T0, expectedLastSlotAt: null, fire: [], skipped: slots.map((slot) => ({ slot, reason: 'overlap_forbid' })), lastSlotAt: slots.at(-1)!, nextFireAt: slots.at(-1)! + MIN });
        assert.ok(f.ok);
        ids.push(s.id);
      }
      const excess = sizes.reduce((sum, n) => sum + Math.max(0, n - SCHEDULE_RUNS_KEPT), 0);
      const calls: Array<{ schedules: number; deleted: number }> = [];
      const counting = Object.assign(Object.create(store) as Store, {
        pruneScheduleRuns: async (a: number, b: number) => {
          const r = await store.pruneScheduleRuns(a, b);
          calls.push(r);
          return r;
        },
      });
      const pruned = await pruneExpired(counting, T0);
      assert.equal(pruned.scheduleRuns, excess);
      // 13 schedules over the limit: two transactions of at most RUNS_PRUNE_SCHEDULES each (the second trims the last 3).
      assert.deepEqual(calls.map((c) => c.schedules), [RUNS_PRUNE_SCHEDULES, 3]);
      assert.ok(calls.every((c) => c.deleted <= RUNS_PRUNE_SCHEDULES * RUNS_PRUNE_PER_SCHEDULE));
      for (const [i, id] of ids.entries()) assert.equal((await store.scheduleRuns(id, 5000)).length, Math.min(sizes[i]!, SCHEDULE_RUNS_KEPT), `schedule ${i}`);
      assert.equal((await pruneExpired(store, T0)).scheduleRuns, 0, 'nothing left over the limit');
    } finally {
      await store.close();
    }
  });
});
