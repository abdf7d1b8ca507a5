/**
 * Real agents speak the protocol the server validates: a frame the server
 * refuses only closes the session (and the agent reconnects), which other
 * tests would not notice. Here a process agent and a noop agent run tasks
 * that exercise every message (started, log on both streams, exit of each
 * kind, the largest exit with outputs, heartbeats, cancel) and the server must log no protocol error and
 * see each agent connect exactly once.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startCluster, type Cluster } from './harness.js';

describe('e2e: real agents conform to the validated protocol', () => {
  let c: Cluster;
  after(async () => c?.close());

  it('no frame of a process or a noop agent is refused', async () => {
    c = await startCluster({ workers: 0, serverArgs: ['--heartbeat', '200ms', '--lease', '3s'] });
    await c.startWorker({ id: 'proc', slots: 4, extra: ['--label', 'exec=process'] });
    await c.startWorker({ id: 'noop', slots: 4, extra: ['--executor', 'noop'] });
    const ids = [
      await c.api.submit({ script: 'echo out; echo err >&2; exit 0' }),
      await c.api.submit({ command: 'false', retry: { maxRetries: 1, baseDelay: '10ms' } }),
      await c.api.submit({ command: 'sleep', args: ['5'], timeout: '300ms', retry: { maxRetries: 0 } }),
      await c.api.submit({ command: 'no-such-command-xyz', retry: { maxRetries: 0 } }),
      ...(await Promise.all(Array.from({ length: 8 }, () => c.api.submit({ command: 'true' })))),
    ];
    // The largest exit: 16 outputs of 4,090 control characters (≈ 64 KiB of file, ≈ 390 KiB of JSON).
    const outputs = await c.api.submit({
      script: 'for i in $(seq 0 15); do printf "k%s=" "$i"; head -c 4090 /dev/zero | tr "\\000" "\\001"; echo; done > "$DROVER_OUTPUT"',
      requires: { exec: 'process' },
      retry: { maxRetries: 0 },
    });
    const long = await c.api.submit({ command: 'sleep', args: ['30'], requires: { exec: 'process' } });
    await c.api.waitState(long, ['running']);
    await new Promise((r) => setTimeout(r, 700)); // a few heartbeats (200 ms) go by with an attempt running
    assert.equal((await c.api.req('POST', `/v1/tasks/${long}/cancel`)).status, 200);
    for (const id of [...ids, outputs, long]) await c.api.waitDone(id);
    const big = (await c.api.task(outputs)).task;
    assert.equal(big.state, 'succeeded', JSON.stringify(big.result));
    assert.equal(Object.keys(big.outputs).length, 16);
    assert.ok(Object.values(big.outputs).every((v) => v === '\u0001'.repeat(4090)));
    const t = await c.api.task(long);
    assert.equal(t.task.state, 'cancelled');
    assert.equal(t.attempts[0].workerId, 'proc', 'placed by its requirement');
    assert.equal(t.attempts[0].state, 'cancelled');
    const log = c.server.output();
    assert.doesNotMatch(log, /protocol error/, log.split('\n').filter((l) => l.includes('protocol error')).join('\n'));
    assert.equal(log.match(/"msg":"worker connected"/g)?.length, 2, 'each agent connected once');
  });
});
