/**
 * Self-fencing without overlap: when no server confirms the agent's
 * heartbeats, its attempts must be dead (SIGKILL included) before the lease
 * the server last renewed can expire, i.e. before confirmedSentAt + leaseMs;
 * a short outage ending in a welcome before the plan's stop time touches
 * nothing.
 *
 * Times are performance.now(): the agent runs in this process, so it is the
 * agent's own monotonic clock. The test sees a heartbeat only after the agent
 * sent it, so `seenAt` is later than the true send time; the assertions
 * leave SEND_MARGIN_MS for that loopback delivery.
 */
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { leaseSafetyMs } from '../../src/core/lease.js';
import type { AssignedAttempt } from '../../src/core/protocol.js';
import { FakeServer } from './fake-server.js';
import { exists, fencingToken, runningMembers, tempDir } from './helpers.js';
import { connectAgent } from './agent-harness.js';

const LEASE_MS = 1_500;
const HEARTBEAT_MS = 200;
const KILL_GRACE_MS = 300;
const SEND_MARGIN_MS = 50;

let nextId = 900;
function attempt(over: Partial<AssignedAttempt>): AssignedAttempt {
  const id = nextId++;
  return { attemptId: id, fencingToken: fencingToken(), taskId: `01FENCE${id}`, number: 1, command: null, args: [], script: null, interpreter: [], env: {}, timeoutMs: null, ...over };
}

/** Resolves with the performance.now() at which no member of the group was seen running any more (checked every few ms). */
type AgentConn = Awaited<ReturnType<typeof connectAgent>>['conn'];

/**
 * Assigns an attempt whose shell ignores SIGTERM, then answers one last
 * heartbeat that lists it and stops answering. `seenAt`: when that last
 * confirmed heartbeat was seen (its send time is at most this).
 */
async function runUntilAcksStop(conn: AgentConn): Promise<{ a: AssignedAttempt; pid: number; seenAt: number }> {
  conn.autoAck = true;
  const a = attempt({ command: 'sh', args: ['-c', 'trap "" TERM; sleep 100 & echo ready; wait'] });
  conn.send({ type: 'assign', attempt: a });
  const { pid } = await conn.next('started');
  await conn.next('log'); // "ready": the trap is set
  conn.answerHeartbeats = false;
  const last = await conn.next('heartbeat', (h) => h.running.includes(a.attemptId));
  const seenAt = performance.now();
  conn.send({ type: 'heartbeat_ack', seq: last.seq, stop: [] });
  return { a, pid, seenAt };
}

async function groupGoneAt(pgid: number, timeoutMs: number): Promise<number> {
  const deadline = performance.now() + timeoutMs;
  while (runningMembers(pgid).length > 0) {
    if (performance.now() > deadline) throw new Error(`process group ${pgid} still alive after ${timeoutMs} ms`);
    await sleep(2);
  }
  return performance.now();
}

describe('self-fencing', { timeout: 30_000 }, () => {
  let tmp: ReturnType<typeof tempDir>;
  before(() => (tmp = tempDir('drover-fence-')));
  after(() => tmp.remove());

  it('a server that stops answering heartbeats: the group (ignoring SIGTERM) is dead before confirmedSentAt + lease', async (t) => {
    const server = await FakeServer.start();
    const { agent, conn, endOf } = await connectAgent(server, tmp.dir, { killGraceMs: KILL_GRACE_MS }, { heartbeatMs: HEARTBEAT_MS, leaseMs: LEASE_MS });
    try {
      const { a, pid, seenAt } = await runUntilAcksStop(conn);
      // The connection stays up (pongs keep it alive); only the acks stop.
      const goneAt = await groupGoneAt(pid, LEASE_MS + 2_000);
      const sinceSeen = goneAt - seenAt;
      t.diagnostic(`group dead ${Math.round(sinceSeen)} ms after the last confirmed heartbeat was seen; lease ${LEASE_MS} ms`);
      assert.ok(sinceSeen < LEASE_MS - SEND_MARGIN_MS, `group gone ${Math.round(sinceSeen)} ms after the last confirmed heartbeat was seen (lease ${LEASE_MS} ms)`);
      // It ignored SIGTERM, so it died of the SIGKILL at the end of the plan: not before sentAt + lease - safety - a little.
      assert.ok(sinceSeen > LEASE_MS - leaseSafetyMs(LEASE_MS) - SEND_MARGIN_MS - 100, `group gone too early: ${Math.round(sinceSeen)} ms`);
      const end = await endOf(a.attemptId);
      assert.equal(end.reported, false);
      assert.equal(end.result.signal, 'SIGKILL');
      assert.ok(!conn.messages.some((m) => m.type === 'exit'), 'a self-fenced attempt reports no exit');
      // The agent dropped the useless connection; the next hello reports the kill.
      await conn.closed;
      const c2 = await server.nextConnection();
      const hello = await c2.welcome({ heartbeatMs: HEARTBEAT_MS, leaseMs: LEASE_MS });
      assert.deepEqual(hello.running, []);
      assert.equal(hello.killed?.length, 1);
      assert.equal(hello.killed![0]!.attemptId, a.attemptId);
      assert.equal(hello.killed![0]!.fencingToken, a.fencingToken);
      assert.match(hello.killed![0]!.reason, /self-fencing/);
    } finally {
      await agent.close();
      await server.close();
    }
  });

  it('a cancel already in its long grace is cut short so SIGKILL still lands before the lease ends', async () => {
    const server = await FakeServer.start();
    // A kill grace longer than the lease: only the self-fencing plan's grace can keep SIGKILL in time.
    const { agent, conn } = await connectAgent(server, tmp.dir, { killGraceMs: 10_000 }, { heartbeatMs: HEARTBEAT_MS, leaseMs: LEASE_MS });
    try {
      const { a, pid, seenAt } = await runUntilAcksStop(conn);
      conn.send({ type: 'cancel', attemptId: a.attemptId, reason: 'user' }); // SIGTERM now, SIGKILL in 10 s
      const goneAt = await groupGoneAt(pid, LEASE_MS + 2_000);
      assert.ok(goneAt - seenAt < LEASE_MS - SEND_MARGIN_MS, `group gone ${Math.round(goneAt - seenAt)} ms after the last confirmed heartbeat was seen`);
    } finally {
      await agent.close();
      await server.close();
    }
  });

  it('a short outage (welcome again before the stop time) touches nothing', async () => {
    const server = await FakeServer.start();
    const { agent, conn: c1, endOf } = await connectAgent(server, tmp.dir, { killGraceMs: KILL_GRACE_MS }, { heartbeatMs: HEARTBEAT_MS, leaseMs: LEASE_MS });
    let ended = false;
    try {
      const a = attempt({ command: 'sleep', args: ['100'] });
      c1.send({ type: 'assign', attempt: a });
      const { pid } = await c1.next('started');
      void endOf(a.attemptId).then(() => (ended = true));
      await c1.next('heartbeat', (h) => h.running.includes(a.attemptId)); // answered: confirmed
      const cut = performance.now();
      server.refuseConnections = true;
      c1.ws.terminate();
      await sleep(300); // the outage
      server.refuseConnections = false;
      const c2 = await server.nextConnection();
      const hello = await c2.welcome({ heartbeatMs: HEARTBEAT_MS, leaseMs: LEASE_MS });
      assert.deepEqual(hello.running, [{ attemptId: a.attemptId, fencingToken: a.fencingToken }]);
      assert.equal(hello.killed, undefined);
      // Well past the lease counted from the cut, heartbeats still list it and it still runs.
      await c2.next('heartbeat', (h) => h.running.includes(a.attemptId) && performance.now() > cut + LEASE_MS + 500);
      assert.equal(ended, false);
      assert.equal(exists(-pid), true);
      assert.equal(server.conns.length, 2, 'no further reconnect');
    } finally {
      await agent.close();
      await server.close();
    }
  });
});
