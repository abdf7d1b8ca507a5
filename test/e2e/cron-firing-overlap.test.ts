/**
 * Overlap policies with a real server and a real worker running the runs:
 * an every-2-seconds schedule whose run takes longer than its interval, and
 * a run started with "run now" (POST /v1/schedules/:name/run), which the
 * policies see like a slot's run. Schedules are created through a second
 * connection to the server's SQLite file. Waits are bounded polls for states.
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

async function addSchedule(store: Store, name: string, overlap: OverlapPolicy, sleepS: number, o: { paused?: boolean } = {}): Promise<ScheduleRecord> {
  const s = parseSchedule({ expr: '*/2 * * * * *' });
  const now = Date.now();
  const template = makeSpec({ name, command: 'sleep', args: [String(sleepS)] });
  // Paused: created with no next fire time (never due), then paused, so no slot can fire before the test resumes it.
  const made = await store.createSchedule(newTaskId(now), 'admin', { name, expr: s.expr, tz: s.tz, overlap, catchup: 'latest', maxCatchup: 10, template }, now, o.paused ? null : firstFireAfter(s, now));
  return o.paused ? (await store.setPaused(made.id, true, now, null))! : made;
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

  /** POST /v1/schedules/NAME/run as the admin (the schedules' owner): the run-now task, once it is running. */
  async function runNowRunning(name: string): Promise<Task> {
    const r = await c.api.req('POST', `/v1/schedules/${name}/run`);
    assert.equal(r.status, 201, r.text);
    assert.equal(r.body.task.scheduledAt, null);
    await c.api.waitState(r.body.task.id, ['running'], 15_000);
    return (await store.getTask(r.body.task.id))!;
  }
  async function resume(name: string): Promise<void> {
    const r = await c.api.req('POST', `/v1/schedules/${name}/resume`);
    assert.equal(r.status, 200, r.text);
  }

  it('forbid sees a "run now" run: its slots are skipped while it runs; the next run is created after it ended', async () => {
    const s = await addSchedule(store, 'forbid-manual', 'forbid', 4, { paused: true });
    const manual = await runNowRunning(s.name);
    await resume(s.name);
    const runs = await waitRuns(store, s, (r) => fired(r).length >= 1, 30_000);
    await store.setPaused(s.id, true, Date.now(), null);
    const skipped = runs.filter((r) => r.outcome === 'skipped');
    assert.ok(skipped.length >= 1, `slots were skipped while the manual run ran: ${JSON.stringify(runs)}`);
    for (const r of skipped) assert.equal(r.reason, 'overlap_forbid');
    const ended = (await store.getTask(manual.id))!;
    assert.equal(ended.state, 'succeeded', 'forbid lets the manual run finish');
    const first = (await store.getTask(fired(runs)[0]!.taskId!))!;
    assert.ok(first.createdAt >= ended.updatedAt, `the first slot run was created (${first.createdAt}) after the manual run ended (${ended.updatedAt})`);
    assert.ok(skipped.every((r) => r.slotAt < first.scheduledAt!), 'the skips came before it');
    await store.cancelTask(first.id, 'admin', Date.now()).catch(() => {});
  });

  it('replace cancels a "run now" run: the next slot stops it and starts its own run', async () => {
    const s = await addSchedule(store, 'replace-manual', 'replace', 30, { paused: true });
    const manual = await runNowRunning(s.name);
    await resume(s.name);
    const runs = await waitRuns(store, s, (r) => fired(r).length >= 1, 30_000);
    await store.setPaused(s.id, true, Date.now(), null);
    const deadline = Date.now() + 10_000;
    for (;;) {
      const { task, attempts } = await taskAndAttempts(manual.id);
      if (task.state === 'cancelled' && attempts.every((x) => x.endedAt !== null)) break;
      assert.ok(Date.now() < deadline, `the manual run is cancelled and its process stopped: ${task.state} ${JSON.stringify(attempts.map((x) => x.state))}`);
      await new Promise((res) => setTimeout(res, 50));
    }
    const ev = await store.listEvents(manual.id);
    assert.ok(ev.some((e) => e.to === 'cancelled' && e.actor === 'cron'), 'cancelled by the cron loop');
    const run = (await store.getTask(fired(runs)[0]!.taskId!))!;
    assert.ok(['waiting', 'running'].includes(run.state), `the slot's run goes on: ${run.state}`);
    await store.cancelTask(run.id, 'admin', Date.now());
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
