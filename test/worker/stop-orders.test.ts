/**
 * Stop orders (protocol v2): `welcome.stop` and `heartbeat_ack.stop`, repeated
 * by the server on every answer until the attempt ends. report: true → kill,
 * outcome cancelled, exit reported as usual; report: false → kill, nothing
 * reported. Handling the same order again must change nothing.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { AgentMessage, AssignedAttempt, StopOrder } from '../../src/core/protocol.js';
import { FakeServer, type FakeConn } from './fake-server.js';
import { exists, fencingToken, tempDir } from './helpers.js';
import { connectAgent } from './agent-harness.js';

let nextId = 700;
function attempt(over: Partial<AssignedAttempt>): AssignedAttempt {
  const id = nextId++;
  return { attemptId: id, fencingToken: fencingToken(), taskId: `01STOP${id}`, number: 1, command: null, args: [], script: null, interpreter: [], env: {}, timeoutMs: null, ...over };
}

/** Waits until `n` more heartbeat_acks (with the repeated orders) have been answered by further heartbeats. */
async function heartbeats(conn: FakeConn, n: number, pred: (h: Extract<AgentMessage, { type: 'heartbeat' }>) => boolean = () => true): Promise<void> {
  for (let i = 0; i < n; i++) await conn.next('heartbeat', pred);
}

const exits = (conn: FakeConn, id: number) => conn.messages.filter((m) => m.type === 'exit' && m.attemptId === id);

describe('stop orders', { timeout: 30_000 }, () => {
  let tmp: ReturnType<typeof tempDir>;
  before(() => (tmp = tempDir('drover-stop-')));
  after(() => tmp.remove());

  it('welcome.stop report: true (cancel made while disconnected): killed, exit reported cancelled, repeats harmless', async () => {
    const server = await FakeServer.start();
    const { agent, conn: c1, endOf } = await connectAgent(server, tmp.dir);
    try {
      // Ignores SIGTERM: the kill takes the whole grace, during which the orders keep coming.
      const a = attempt({ command: 'sh', args: ['-c', 'trap "" TERM; sleep 100 & echo ready; wait'] });
      c1.send({ type: 'assign', attempt: a });
      const { pid } = await c1.next('started');
      await c1.next('log'); // "ready": the trap is set
      c1.ws.terminate();
      const c2 = await server.nextConnection();
      c2.autoAck = true;
      const stop: StopOrder[] = [{ attemptId: a.attemptId, reason: 'cancelled by alice', report: true }];
      c2.stopOrders = stop;
      const hello = await c2.welcome({ stop });
      assert.deepEqual(hello.running, [{ attemptId: a.attemptId, fencingToken: a.fencingToken }]);
      // Still running through the grace: the repeated orders do not restart or shorten the kill.
      await heartbeats(c2, 2, (h) => h.running.includes(a.attemptId));
      const exit = await c2.next('exit', (m) => m.attemptId === a.attemptId);
      assert.equal(exit.outcome, 'cancelled');
      assert.equal(exit.error, 'cancelled by alice');
      assert.equal(exit.signal, 'SIGKILL');
      assert.equal(exists(-pid), false);
      assert.equal((await endOf(a.attemptId)).reported, true);
      // Not acked yet: still listed, the orders still come, nothing more is sent for it.
      await heartbeats(c2, 3, (h) => h.running.includes(a.attemptId));
      assert.equal(exits(c2, a.attemptId).length, 1);
      c2.send({ type: 'exit_ack', attemptId: a.attemptId });
      await heartbeats(c2, 3, (h) => h.running.length === 0);
      assert.equal(exits(c2, a.attemptId).length, 1);
    } finally {
      await agent.close();
      await server.close();
    }
  });

  it('heartbeat_ack.stop report: true: killed and reported cancelled once', async () => {
    const server = await FakeServer.start();
    const { agent, conn } = await connectAgent(server, tmp.dir);
    try {
      conn.autoAck = true;
      const a = attempt({ command: 'sleep', args: ['100'] });
      const b = attempt({ command: 'sleep', args: ['100'] });
      conn.send({ type: 'assign', attempt: a });
      conn.send({ type: 'assign', attempt: b });
      const { pid } = await conn.next('started', (m) => m.attemptId === a.attemptId);
      conn.stopOrders = [{ attemptId: a.attemptId, reason: 'task cancelled', report: true }];
      const exit = await conn.next('exit', (m) => m.attemptId === a.attemptId);
      assert.deepEqual({ ...exit, durationMs: 0 }, { type: 'exit', attemptId: a.attemptId, fencingToken: a.fencingToken, outcome: 'cancelled', exitCode: null, signal: 'SIGTERM', error: 'task cancelled', durationMs: 0 });
      assert.equal(exists(-pid), false);
      conn.send({ type: 'exit_ack', attemptId: a.attemptId });
      await heartbeats(conn, 3, (h) => !h.running.includes(a.attemptId));
      assert.equal(exits(conn, a.attemptId).length, 1);
      // The other attempt is untouched.
      const last = await conn.next('heartbeat');
      assert.deepEqual(last.running, [b.attemptId]);
      assert.equal(exits(conn, b.attemptId).length, 0);
    } finally {
      await agent.close();
      await server.close();
    }
  });

  it('heartbeat_ack.stop report: false: killed, nothing reported, no longer listed; repeats harmless', async () => {
    const server = await FakeServer.start();
    const { agent, conn, endOf } = await connectAgent(server, tmp.dir);
    try {
      conn.autoAck = true;
      const a = attempt({ command: 'sh', args: ['-c', 'echo up; exec sleep 100'] });
      conn.send({ type: 'assign', attempt: a });
      const { pid } = await conn.next('started');
      await conn.next('log');
      conn.stopOrders = [{ attemptId: a.attemptId, reason: 'superseded', report: false }];
      const end = await endOf(a.attemptId);
      assert.equal(end.reported, false);
      assert.equal(exists(-pid), false);
      await heartbeats(conn, 3, (h) => h.running.length === 0);
      assert.equal(exits(conn, a.attemptId).length, 0);
    } finally {
      await agent.close();
      await server.close();
    }
  });

  it('a stop order for an attempt the agent does not hold, or malformed, is ignored', async () => {
    const server = await FakeServer.start();
    const { agent, conn } = await connectAgent(server, tmp.dir);
    try {
      conn.stopOrders = [
        { attemptId: 999_999, reason: 'x', report: true },
        { attemptId: 999_998, reason: 'y', report: false },
        null as unknown as StopOrder, // malformed entries are skipped, not fatal
        { attemptId: 'a', report: 'yes' } as unknown as StopOrder,
      ];
      await heartbeats(conn, 3);
      const a = attempt({ command: 'true' });
      conn.autoAck = true;
      conn.send({ type: 'assign', attempt: a });
      assert.equal((await conn.next('exit')).outcome, 'succeeded');
    } finally {
      await agent.close();
      await server.close();
    }
  });
});
