/**
 * The agent with `executor: 'noop'` against the fake server: every assignment
 * is reported `started` (pid 0) then `exit` succeeded, through the same
 * reporting path as real attempts (exit re-sent after a reconnect until
 * exit_ack), and nothing runs and no work directory is made.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { AgentMessage, AssignedAttempt } from '../../src/core/protocol.js';
import { startAgent, type AgentOptions } from '../../src/worker/agent.js';
import { FakeServer, TOKEN } from './fake-server.js';
import { tempDir, fencingToken } from './helpers.js';

let nextId = 500;
function attempt(over: Partial<AssignedAttempt> = {}): AssignedAttempt {
  const id = nextId++;
  // A command that would fail if it ran: the noop executor must not run it.
  return { attemptId: id, fencingToken: fencingToken(), taskId: `01NOOP${id}`, number: 1, command: 'false', args: [], script: null, interpreter: [], env: {}, timeoutMs: null, ...over };
}

describe('worker agent, noop executor', { timeout: 30_000 }, () => {
  let tmp: ReturnType<typeof tempDir>;
  before(() => (tmp = tempDir('drover-noop-')));
  after(() => tmp.remove());

  async function connect(server: FakeServer, over: Partial<AgentOptions> = {}) {
    const connP = server.nextConnection();
    const agentP = startAgent({
      servers: [server.url],
      token: TOKEN,
      slots: 2,
      workDir: path.join(tmp.dir, 'never-made'),
      executor: 'noop',
      backoff: { baseMs: 20, maxMs: 200 },
      ...over,
    });
    const conn = await connP;
    await conn.welcome();
    return { agent: await agentP, conn };
  }

  it('completes every assignment at once: started (pid 0), then exit succeeded', async () => {
    const server = await FakeServer.start();
    const ended: number[] = [];
    const { agent, conn } = await connect(server, { onAttemptEnd: (a, r, reported) => reported && r.outcome === 'succeeded' && ended.push(a.attemptId) });
    try {
      // More than the slots, and a script too: each is done before it could hold a slot.
      const as = [attempt(), attempt(), attempt({ command: null, script: 'exit 7' }), attempt(), attempt()];
      for (const a of as) conn.send({ type: 'assign', attempt: a });
      for (const a of as) {
        const started = await conn.next('started', (m) => m.attemptId === a.attemptId);
        assert.deepEqual(started, { type: 'started', attemptId: a.attemptId, fencingToken: a.fencingToken, pid: 0 });
      }
      for (const a of as) {
        const exit = await conn.next('exit', (m) => m.attemptId === a.attemptId, 10_000);
        assert.deepEqual(exit, { type: 'exit', attemptId: a.attemptId, fencingToken: a.fencingToken, outcome: 'succeeded', exitCode: 0, signal: null, error: null, durationMs: 0 });
      }
      // Per attempt: started before exit, and no output at all.
      for (const a of as) {
        const mine = conn.messages.filter((m): m is Extract<AgentMessage, { attemptId: number }> => 'attemptId' in m && m.attemptId === a.attemptId);
        assert.deepEqual(mine.map((m) => m.type), ['started', 'exit']);
      }
      assert.deepEqual(ended.sort(), as.map((a) => a.attemptId).sort());
      assert.equal(existsSync(path.join(tmp.dir, 'never-made')), false, 'no work dir');
      // Held (lease renewed) until exit_ack, like a real attempt.
      await conn.next('heartbeat', (h) => as.every((a) => h.running.includes(a.attemptId)));
      for (const a of as) conn.send({ type: 'exit_ack', attemptId: a.attemptId });
      await conn.next('heartbeat', (h) => h.running.length === 0);
    } finally {
      await agent.close();
      await server.close();
    }
  });

  it('re-sends an unacked exit after a reconnect, and stops after exit_ack', async () => {
    const server = await FakeServer.start();
    const { agent, conn: c1 } = await connect(server);
    try {
      const a = attempt();
      c1.send({ type: 'assign', attempt: a });
      const exit1 = await c1.next('exit');
      c1.ws.terminate();

      const c2 = await server.nextConnection();
      const hello = await c2.welcome();
      assert.deepEqual(hello.running, [{ attemptId: a.attemptId, fencingToken: a.fencingToken }]);
      const exit2 = await c2.next('exit');
      assert.deepEqual(exit2, exit1);
      c2.send({ type: 'exit_ack', attemptId: a.attemptId });
      await c2.next('heartbeat', (h) => h.running.length === 0);
    } finally {
      await agent.close();
      await server.close();
    }
  });

  it('rejects an unknown executor', async () => {
    await assert.rejects(
      startAgent({ servers: ['http://127.0.0.1:1'], token: TOKEN, slots: 1, workDir: tmp.dir, executor: 'docker' as unknown as 'noop' }),
      /executor must be one of process, noop/,
    );
  });
});
