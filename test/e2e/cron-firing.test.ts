/**
 * The cron firing loop in a real `drover server` process (SQLite). Schedules
 * are created through a second connection to the server's database file
 * (the API is built separately): the server has no kick for them, so its
 * rescan (every second) finds them and arms its timer.
 *
 * Waits are for states (tasks appearing, polled briefly, bounded), except
 * in the restart test, which must let wall-clock time pass a due time while
 * no server runs: that wait is the subject of the test, bounded and named.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { firstFireAfter } from '../../src/core/cron/next-fire.js';
import { DUE_GRACE_MS } from '../../src/core/cron/plan-due.js';
import { parseSchedule } from '../../src/core/cron/schedule.js';
import { newTaskId } from '../../src/core/ids.js';
import type { Task } from '../../src/core/task.js';
import type { CatchupPolicy } from '../../src/core/cron/plan-due.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { ScheduleRecord, Store } from '../../src/store/store.js';
import { makeSpec } from '../store/contract.js';
import { startCluster, type Cluster } from './harness.js';

const iso = (t: number) => new Date(t).toISOString();

async function addSchedule(store: Store, name: string, expr: string, catchup: CatchupPolicy = 'latest'): Promise<ScheduleRecord> {
  const s = parseSchedule({ expr });
  const now = Date.now();
  const template = makeSpec({ name, command: 'sh', args: ['-c', `echo ${name}`] });
  return store.createSchedule(newTaskId(now), 'admin', { name, expr: s.expr, tz: s.tz, overlap: 'allow', catchup, maxCatchup: 10, template }, now, firstFireAfter(s, now));
}

async function runsOf(store: Store, s: ScheduleRecord): Promise<Task[]> {
  const tasks = (await store.listTasks({ limit: 1000 })).tasks.filter((t) => t.scheduleId === s.id);
  return tasks.sort((a, b) => a.scheduledAt! - b.scheduledAt!);
}

/** Polls (50 ms) until `s` has at least `n` runs; bounded. */
async function waitRuns(store: Store, s: ScheduleRecord, n: number, timeoutMs: number): Promise<Task[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const runs = await runsOf(store, s);
    if (runs.length >= n) return runs;
    if (Date.now() > deadline) throw new Error(`schedule ${s.name}: ${runs.length} runs after ${timeoutMs} ms, wanted ${n}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Resolves once the wall clock reads `t` or later (a bounded wait for time itself, not for a state). */
async function untilWallClock(t: number): Promise<void> {
  const wait = t - Date.now();
  assert.ok(wait < 30_000, 'bounded');
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
}

describe('e2e: cron firing', () => {
  let c: Cluster;
  let store: Store;
  after(async () => {
    await store?.close();
    await c?.close();
  });

  it('a */2-second schedule fires every slot once, each run created within 1 s of its slot, and runs on a worker', async () => {
    c = await startCluster({ workers: 1 });
    store = openSqliteStore(join(c.dir, 'drover.db'));
    const s = await addSchedule(store, 'every-2s', '*/2 * * * * *');
    const runs = await waitRuns(store, s, 5, 20_000);
    const slots = runs.map((t) => t.scheduledAt!);
    for (let i = 1; i < slots.length; i++) assert.equal(slots[i]! - slots[i - 1]!, 2000, `consecutive slots, none skipped or doubled: ${slots.map(iso).join(', ')}`);
    const lateness = runs.map((t) => t.createdAt - t.scheduledAt!);
    // The first slot may come before the server's rescan noticed the schedule (no kick: created behind its back).
    const timed = lateness.slice(1);
    console.log(`lateness of the runs (ms): ${lateness.join(', ')}`);
    assert.ok(timed.every((l) => l >= 0 && l < 1000), `lateness < 1 s: ${timed.join(', ')}`);
    // The run through the API: its schedule and slot, and it ran.
    const done = await c.api.waitDone(runs[1]!.id);
    assert.equal(done.task.state, 'succeeded');
    assert.equal(done.logs, 'every-2s\n');
    assert.equal(done.task.scheduleId, s.id);
    assert.equal(done.task.scheduledAt, iso(runs[1]!.scheduledAt!));
    const listed = await c.api.req('GET', '/v1/tasks?limit=100');
    const row = listed.body.tasks.find((t: { id: string }) => t.id === runs[1]!.id);
    assert.equal(row.scheduleId, s.id);
    assert.equal(row.scheduledAt, iso(runs[1]!.scheduledAt!));
    // No slot has two tasks (the store's unique key would refuse it; counted here from the store).
    assert.equal(new Set(slots).size, slots.length);
    await store.setPaused(s.id, true, Date.now(), null);
  });

  it('a restart across due times fires per catch-up policy: none skips, latest runs the newest once, all runs each', async () => {
    // Two slots 2 s apart, a few seconds ahead, once a minute.
    let first = Math.ceil((Date.now() + 4000) / 1000) * 1000;
    if (new Date(first).getUTCSeconds() > 57) first = Math.ceil(first / 60_000) * 60_000;
    const secs = `${new Date(first).getUTCSeconds()},${new Date(first).getUTCSeconds() + 2}`;
    const expr = `${secs} * * * * *`;
    const none = await addSchedule(store, 'restart-none', expr, 'none');
    const latest = await addSchedule(store, 'restart-latest', expr, 'latest');
    const all = await addSchedule(store, 'restart-all', expr, 'all');
    assert.equal(latest.nextFireAt, first);
    await c.server.stop('SIGKILL');
    // Down until both slots are missed (older than the on-time grace), then back.
    await untilWallClock(first + 2000 + DUE_GRACE_MS + 1000);
    await c.startServer();
    const latestRuns = await waitRuns(store, latest, 1, 10_000);
    const allRuns = await waitRuns(store, all, 2, 10_000);
    assert.deepEqual(latestRuns.map((t) => iso(t.scheduledAt!)), [iso(first + 2000)], 'latest: the newest missed slot, once');
    assert.ok(latestRuns[0]!.createdAt - latestRuns[0]!.scheduledAt! > DUE_GRACE_MS, 'it was missed, not merely late');
    assert.deepEqual(allRuns.map((t) => iso(t.scheduledAt!)), [iso(first), iso(first + 2000)], 'all: each missed slot');
    const deadline = Date.now() + 10_000;
    while ((await store.getSchedule(none.id))!.lastSlotAt !== first + 2000) {
      assert.ok(Date.now() < deadline, 'none: the schedule advanced past its missed slots');
      await new Promise((r) => setTimeout(r, 50));
    }
    const noneRuns = await store.scheduleRuns(none.id, 10);
    assert.deepEqual(noneRuns.map((r) => [iso(r.slotAt), r.outcome, r.reason]), [
      [iso(first + 2000), 'skipped', 'catchup_none'],
      [iso(first), 'skipped', 'catchup_none'],
    ]);
    assert.deepEqual(await runsOf(store, none), []);
    for (const s of [none, latest, all]) {
      const after = (await store.getSchedule(s.id))!;
      assert.equal(after.lastSlotAt, first + 2000);
      assert.equal(after.nextFireAt, first + 60_000);
    }
    assert.equal((await runsOf(store, latest)).length, 1, 'and no second run of it appeared');
  });
});
