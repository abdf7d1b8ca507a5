/**
 * A cancel made while the task's agent is connected to no server is not lost:
 * it is stored on the attempt and delivered when the agent says hello again
 * (issue 7, item 4). The server is killed (-9), a second server on the same
 * database but another port takes the cancel while the agent keeps retrying
 * the old address, then the server comes back where the agent looks for it.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { alive, Api, startCluster, startProc, type Cluster } from './harness.js';

const HEARTBEAT_MS = 500;
const GRACE_MS = 5_000;


async function until(pred: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('e2e: cancel during a reconnect', () => {
  let c: Cluster;
  after(async () => c?.close());

  it('reaches the agent when it reconnects; the process group is gone within heartbeat + grace', async () => {
    c = await startCluster({ workers: 1, serverArgs: ['--heartbeat', `${HEARTBEAT_MS}ms`, '--lease', '20s'] });
    const pidFile = join(c.dir, 'pid');
    const id = await c.api.submit({ script: `echo $$ > ${pidFile}; trap '' TERM; while :; do sleep 0.1; done` });
    await until(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8').endsWith('\n'), 10_000, 'the task to start');
    const pid = Number(readFileSync(pidFile, 'utf8'));
    const adminToken = c.api.token;
    await c.server.stop('SIGKILL');

    // Another server on the same database, at an address the agent does not know.
    const { proc: other, match } = await startProc(
      ['server', '--db', `sqlite:${join(c.dir, 'drover.db')}`, '--port', '0', '--heartbeat', `${HEARTBEAT_MS}ms`, '--lease', '20s'],
      { DROVER_ADMIN_TOKEN: adminToken },
      /listening on (http:\/\/127\.0\.0\.1:\d+)/,
    );
    const api = new Api(match![1]!, adminToken);
    const cancelled = await api.req('POST', `/v1/tasks/${id}/cancel`);
    assert.equal(cancelled.status, 200, cancelled.text);
    assert.equal(cancelled.body.task.state, 'cancelled');
    assert.ok(alive(pid), 'nobody could tell the agent yet');
    await other.stop('SIGTERM');

    const server = await c.startServer();
    // The restarted server logs the agent's hello (the stored `connected` row alone says nothing yet).
    await until(() => server.output().includes('"msg":"worker connected"'), 15_000, 'the agent to reconnect');
    const reconnectedAt = Date.now();
    await until(() => !alive(pid), HEARTBEAT_MS + GRACE_MS + 2_000, 'the cancelled process to be gone');
    const tookMs = Date.now() - reconnectedAt;
    assert.ok(tookMs <= HEARTBEAT_MS + GRACE_MS + 1_000, `gone ${tookMs} ms after the reconnect`);

    await until(async () => (await c.api.task(id)).attempts[0].state !== 'running', 10_000, 'the attempt to end');
    const t = await c.api.task(id);
    assert.equal(t.task.state, 'cancelled');
    assert.equal(t.attempts.length, 1);
    assert.equal(t.attempts[0].state, 'cancelled');
    assert.equal(t.task.result?.outcome, 'cancelled');
  });
});
