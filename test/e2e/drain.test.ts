/** Draining a worker through the API: no new work; its running attempt is stopped after the drain timeout and runs elsewhere without using a retry. */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startCluster, type Cluster } from './harness.js';
import { FakeAgent } from './fake-agent.js';

describe('e2e: drain a worker', () => {
  let c: Cluster;
  before(async () => {
    c = await startCluster({ workers: 0 });
    await c.startWorker({ id: 'w1', slots: 2, extra: ['--drain-timeout', '1s'] });
  });
  after(async () => c?.close());

  it('moves a running attempt to another worker and sends the drained worker no more work', async () => {
    const id = await c.api.submit({ script: 'echo "on $DROVER_ATTEMPT"; sleep 30; echo done' });
    // Follow until the first attempt printed: it runs on w1, the only worker.
    const res = await fetch(`${c.url}/v1/tasks/${id}/logs?follow=1`, { headers: { authorization: `Bearer ${c.api.token}` } });
    const reader = res.body!.getReader();
    assert.equal(Buffer.from((await reader.read()).value!).toString(), 'on 1\n');
    await c.startWorker({ id: 'w2', slots: 2 });

    const r = await c.api.req('POST', '/v1/workers/w1/drain');
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body, { workerId: 'w1', draining: true });
    assert.equal((await c.api.req('POST', '/v1/workers/nobody/drain')).status, 404);
    assert.equal((await c.api.req('POST', '/v1/workers/bad%20id/drain')).status, 400);

    // After the 1 s drain timeout the attempt is given up (lost) and the task runs on w2.
    const second = await c.api.waitState(id, ['running'], 30_000).then(async () => {
      for (;;) {
        const d = await c.api.task(id);
        if (d.attempts.length === 2) return d;
        await new Promise((r) => setTimeout(r, 50));
      }
    });
    assert.equal(second.attempts[0].state, 'lost');
    assert.match(second.attempts[0].error, /drain/);
    assert.equal(second.attempts[1].workerId, 'w2');
    assert.equal(second.task.retriesUsed, 0, 'a drained attempt does not use a retry');
    const workers = (await c.api.req('GET', '/v1/workers')).body.workers;
    assert.equal(workers.find((w: any) => w.id === 'w1').state, 'draining');

    // New work goes to w2 only.
    for (let i = 0; i < 4; i++) {
      const t = await c.api.waitDone(await c.api.submit({ command: 'true' }));
      assert.equal(t.attempts[0].workerId, 'w2');
    }
    await c.api.req('POST', `/v1/tasks/${id}/cancel`);
    await reader.cancel();
  });
});

describe('e2e: a draining agent that reconnects', () => {
  let c: Cluster;
  before(async () => {
    c = await startCluster({ workers: 0 });
  });
  after(async () => c?.close());

  it('says so in its hello (it moved to this server) and gets no work from the first moment; the drain shows on every server', async () => {
    const moved = await FakeAgent.connect(c.url, c.workerToken);
    try {
      moved.hello('w-moved', { slots: 4, draining: true });
      await moved.next('welcome');
      const listed = (await c.api.req('GET', '/v1/workers')).body.workers.find((w: any) => w.id === 'w-moved');
      assert.equal(listed.state, 'draining', 'stored, so other servers show it too');
      // The only free slots are the draining agent's: had it been taken as connected, the task would be
      // assigned to it now and never run; instead it waits for the worker started next.
      const id = await c.api.submit({ command: 'true' });
      await c.startWorker({ id: 'w-fresh', slots: 1 });
      const done = await c.api.waitDone(id);
      assert.equal(done.attempts[0].workerId, 'w-fresh');
      assert.equal(done.attempts.length, 1);
      assert.deepEqual(moved.received.filter((m) => m.type === 'assign'), []);
    } finally {
      moved.close();
    }
  });
});
