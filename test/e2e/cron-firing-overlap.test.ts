/**
 * Overlap policies with a real server and a real worker running the runs:
 * an every-2-seconds schedule whose run takes longer than its interval.
 * Schedules are created through a second connection to the server's SQLite
 * file (the API is built separately). Waits are bounded polls for states.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { firstFireAfter } from '../../src/core/cron/next-fire.js';
import type { OverlapPolicy } from '../../src/core/cron/overlap.js';
import { parseSchedule } from '../../src/core/cron/schedule.js';
import { newTaskId } from '../../src/core/ids.js';
import type { Attempt, Task } from '../../src/core/task.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { ScheduleRecord, ScheduleRun, Store } from '../../src/store/store.js';
import { makeSpec } from '../store/contract.js';
import { startCluster, type Cluster } from './harness.js';

async function addSchedule(store: Store, name: string, overlap: OverlapPolicy, sleepS: number): Promise<ScheduleRecord> {
  const s = parseSchedule({ expr: '*/2 * * * * *' });
  const now = Date.now();
  const template = makeSpec({ name, command: 'sleep', args: [String(sleepS)] });
  return store.createSchedule(newTaskId(now), 'admin', { name, expr: s.expr, tz: s.tz, overlap, catchup: 'latest', maxCatchup: 10, template }, now, firstFireAfter(s, now));
}

/** Polls (50 ms) until `ok(runs)`; bounded. Run records oldest first. */
async function waitRuns(store: Store, s: ScheduleRecord, ok: (runs: ScheduleRun[]) => boolean, timeoutMs = 20_000): Promise<ScheduleRun[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const runs = (await store.scheduleRuns(s.id, 100)).reverse();
    if (ok(runs)) return runs;
    if (Date.now() > deadline) throw new Error(`schedule ${s.name}: runs ${JSON.stringify(runs)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const fired = (runs: ScheduleRun[]) => runs.filter((r) => r.outcome === 'fired');

describe('e2e: cron overlap policies', () => {
  let c: Cluster;
  let store: Store;
  before(async () => {
    c = await startCluster({ workers: 1, slots: 8 });
    store = openSqliteStore(join(c.dir, 'drover.db'));
  });
  after(async () => {
    await store?.close();
    await c?.close();
  });

  async function taskAndAttempts(id: string): Promise<{ task: Task; attempts: Attempt[] }> {
    return { task: (await store.getTask(id))!, attempts: await store.listAttempts(id) };
  }

  it('forbid: while a 3 s run goes on, its 2 s slots are skipped; the next run is created only after it ended', async () => {
    const s = await addSchedule(store, 'forbid', 'forbid', 3);
    const runs = await waitRuns(store, s, (r) => fired(r).length >= 2 && r.some((x) => x.reason === 'overlap_forbid'));
    await store.setPaused(s.id, true, Date.now(), null);
    const f = fired(runs);
    for (let i = 1; i < f.length; i++) {
      const prev = await taskAndAttempts(f[i - 1]!.taskId!);
      const next = (await store.getTask(f[i]!.taskId!))!;
      assert.equal(prev.task.state, 'succeeded');
      assert.ok(prev.task.updatedAt <= next.createdAt, `run ${i} was created (${next.createdAt}) after run ${i - 1} ended (${prev.task.updatedAt})`);
    }
    for (const r of runs.filter((x) => x.outcome === 'skipped')) assert.equal(r.reason, 'overlap_forbid');
  });

  it('allow: runs overlap (a 5 s run every 2 s)', async () => {
    const s = await addSchedule(store, 'allow', 'allow', 5);
    const runs = await waitRuns(store, s, (r) => fired(r).length >= 2 && r.every((x) => x.outcome === 'fired'));
    await store.setPaused(s.id, true, Date.now(), null);
    const [a, b] = fired(runs);
    const second = await taskAndAttempts(b!.taskId!);
    const deadline = Date.now() + 10_000;
    while (second.attempts.length === 0) {
      assert.ok(Date.now() < deadline, 'the second run starts');
      await new Promise((r) => setTimeout(r, 50));
      second.attempts = await store.listAttempts(b!.taskId!);
    }
    const first = await taskAndAttempts(a!.taskId!);
    assert.equal(first.attempts[0]!.endedAt, null, 'the first run is still running when the second started');
  });

  it('replace: each new run cancels the running one, whose process the worker stops', async () => {
    const s = await addSchedule(store, 'replace', 'replace', 30);
    const runs = await waitRuns(store, s, (r) => fired(r).length >= 3);
    await store.setPaused(s.id, true, Date.now(), null);
    const f = fired(runs);
    const deadline = Date.now() + 10_000;
    for (const r of f.slice(0, -1)) {
      for (;;) {
        const { task, attempts } = await taskAndAttempts(r.taskId!);
        if (task.state === 'cancelled' && attempts.every((x) => x.endedAt !== null)) break;
        assert.ok(Date.now() < deadline, `run ${r.taskId} cancelled and its attempt ended: ${task.state} ${JSON.stringify(attempts.map((x) => x.state))}`);
        await new Promise((res) => setTimeout(res, 50));
      }
      const ev = await store.listEvents(r.taskId!);
      assert.ok(ev.some((e) => e.to === 'cancelled' && e.actor === 'cron'), 'cancelled by the cron loop');
    }
    const last = (await store.getTask(f[f.length - 1]!.taskId!))!;
    assert.ok(['waiting', 'running'].includes(last.state), `the newest run goes on: ${last.state}`);
    await store.cancelTask(last.id, 'admin', Date.now());
  });
});
