/** Nothing acknowledged is lost across a server kill -9 and restart. */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startCluster, type Cluster } from './harness.js';

describe('e2e: server restart', () => {
  let c: Cluster;
  after(async () => c?.close());

  it('keeps queued tasks through kill -9 of the server and runs them after the restart', async () => {
    c = await startCluster({ workers: 0 });
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) ids.push(await c.api.submit({ command: 'sh', args: ['-c', `echo task ${i}`] }));
    await c.server.stop('SIGKILL');
    await c.startServer();
    const listed = (await c.api.req('GET', '/v1/tasks?limit=100')).body.tasks;
    assert.equal(listed.length, 20);
    assert.ok(listed.every((t: any) => t.state === 'waiting'));
    await c.startWorker({ slots: 4 });
    for (const [i, id] of ids.entries()) {
      const done = await c.api.waitDone(id);
      assert.equal(done.task.state, 'succeeded');
      assert.equal(done.logs, `task ${i}\n`);
      assert.equal(done.attempts.length, 1);
    }
  });
});
