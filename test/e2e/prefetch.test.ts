/**
 * `drover worker --prefetch N` against a real server: the server assigns up
 * to slots + N, the agent runs no more than its slots at once, a drain gives
 * the queued tasks back at once to run elsewhere without using a retry, and
 * a worker with a free slot takes them back (give_back) without a drain.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { until } from './cli-run.js';
import { startCluster, type Cluster } from './harness.js';

/** Prints its start and end times (ns) around a sleep, so overlaps between tasks show in their logs. */
const timed = (sleep: string) => ({ script: `echo "start $(date +%s%N)"; sleep ${sleep}; echo "end $(date +%s%N)"` });

describe('e2e: drover worker --prefetch', () => {
  let c: Cluster;
  before(async () => {
    c = await startCluster({ workers: 0 });
  });
  after(async () => c?.close());

  it('slots 1, prefetch 2: three tasks assigned to the worker at once, run one after another', async () => {
    const w = await c.startWorker({ id: 'pf', slots: 1, extra: ['--prefetch', '2'] });
    // The start line is printed after the agent connects: waited for, not read once.
    await until('the start line', () => (/pf: 1 slot \(\+2 prefetched\)/.test(w.output()) ? true : undefined));
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(await c.api.submit(timed('0.4')));
    // All three are this worker's (running, leased to it) while the first runs.
    const worker = await until('three attempts on the worker', async () => {
      const ws = (await c.api.req('GET', '/v1/workers')).body.workers as Array<{ id: string; slots: number; slotsUsed: number }>;
      const pf = ws.find((x) => x.id === 'pf');
      return pf && pf.slotsUsed === 3 ? pf : undefined;
    });
    assert.equal(worker.slots, 1);
    const done = [];
    for (const id of ids) done.push(await c.api.waitDone(id));
    const spans = done.map((d) => {
      assert.equal(d.task.state, 'succeeded', d.logs);
      assert.equal(d.attempts.length, 1);
      assert.equal(d.attempts[0].workerId, 'pf');
      const [, start] = /start (\d+)/.exec(d.logs)!;
      const [, end] = /end (\d+)/.exec(d.logs)!;
      return [BigInt(start!), BigInt(end!)] as const;
    });
    spans.sort((a, b) => (a[0] < b[0] ? -1 : 1));
    for (let i = 1; i < spans.length; i++) assert.ok(spans[i]![0] >= spans[i - 1]![1], `task ${i + 1} started before task ${i} ended: one slot runs one at a time`);
    await c.api.req('POST', '/v1/workers/pf/drain');
  });

  /** Starts worker `id` (1 slot, prefetch 2), runs a long task on it and queues two short ones behind it. */
  async function busyWithQueue(id: string, sleep: string): Promise<{ long: string; queued: string[] }> {
    await c.startWorker({ id, slots: 1, extra: ['--prefetch', '2', '--drain-timeout', '30s'] });
    const long = await c.api.submit({ script: `echo running; sleep ${sleep}` });
    await c.api.waitState(long, ['running']);
    const queued = [await c.api.submit({ command: 'true' }), await c.api.submit({ command: 'true' })];
    await until(`both queued on ${id}`, async () => {
      const ws = (await c.api.req('GET', '/v1/workers')).body.workers as Array<{ id: string; slotsUsed: number }>;
      return ws.find((x) => x.id === id)?.slotsUsed === 3 ? true : undefined;
    });
    return { long, queued };
  }

  it('a drain gives the queued tasks back at once: they run on another worker, no retry used', async () => {
    const { long, queued } = await busyWithQueue('busy', '6');
    const t0 = Date.now();
    assert.equal((await c.api.req('POST', '/v1/workers/busy/drain')).status, 200);
    // Given back at once, and waiting: no other worker is there yet.
    for (const id of queued) await c.api.waitState(id, ['waiting']);
    await c.startWorker({ id: 'other', slots: 2 });
    for (const id of queued) {
      const d = await c.api.waitDone(id);
      assert.equal(d.task.state, 'succeeded');
      assert.deepEqual(d.attempts.map((a) => [a.workerId, a.state]), [['busy', 'lost'], ['other', 'succeeded']]);
      assert.equal(d.attempts[0].error, 'worker is draining');
      assert.equal(d.task.retriesUsed, 0);
      assert.ok(d.events.some((e) => e.reason === 'worker_lost'));
    }
    assert.ok(Date.now() - t0 < 4_500, 'given back without waiting for the running task');
    // The running one finishes where it is: a drain lets it.
    const d = await c.api.waitDone(long);
    assert.deepEqual(d.attempts.map((a) => [a.workerId, a.state]), [['busy', 'succeeded']]);
    await c.api.req('POST', '/v1/workers/other/drain');
  });

  it('a worker with a free slot takes back what another holds queued: returned unstarted, run there, no retry or loss used', async () => {
    const { long, queued } = await busyWithQueue('busy2', '6');
    const t0 = Date.now();
    await c.startWorker({ id: 'free', slots: 2 });
    for (const id of queued) {
      const d = await c.api.waitDone(id);
      assert.equal(d.task.state, 'succeeded');
      assert.deepEqual(d.attempts.map((a) => [a.workerId, a.state]), [['busy2', 'lost'], ['free', 'succeeded']]);
      assert.match(d.attempts[0].error, /^given back unstarted: another worker has a free slot/);
      assert.deepEqual([d.task.retriesUsed, d.task.lostCount], [0, 0]);
      const back = d.events.find((e) => e.reason === 'returned');
      assert.deepEqual([back?.from, back?.to, back?.actor], ['running', 'waiting', 'worker:busy2']);
      assert.equal(d.logs, '', 'nothing ran on busy2');
    }
    assert.ok(Date.now() - t0 < 4_500, 'run on the free worker without waiting for the long task');
    const d = await c.api.waitDone(long);
    assert.deepEqual(d.attempts.map((a) => [a.workerId, a.state]), [['busy2', 'succeeded']]);
  });

  it('refuses a bad --prefetch before connecting, naming the flag', async () => {
    const w = c.startWorker({ id: 'bad', slots: 1, extra: ['--prefetch', '-3'] });
    await assert.rejects(w, /invalid --prefetch "-3": expected auto or an integer 0\.\.1024/);
  });
});
