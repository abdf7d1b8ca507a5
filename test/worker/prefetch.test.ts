/**
 * The agent's prefetch (`AgentOptions.prefetch`, worker/prefetch-queue.ts),
 * against the fake server with real processes: assignments beyond the slots
 * wait, leased and listed, and start in arrival order as slots free; a cancel
 * or a stop ends a queued one without starting it; a drain gives the queue
 * back as `lost`; self-fencing drops queued ones with the running ones.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { AgentMessage, AssignedAttempt } from '../../src/core/protocol.js';
import { startAgent } from '../../src/worker/agent.js';
import { PrefetchQueue } from '../../src/worker/prefetch-queue.js';
import { FakeServer, TOKEN } from './fake-server.js';
import { fencingToken, tempDir } from './helpers.js';
import { connectAgent } from './agent-harness.js';

let nextId = 1_500;
function attempt(over: Partial<AssignedAttempt> = {}): AssignedAttempt {
  const id = nextId++;
  return { attemptId: id, fencingToken: fencingToken(), taskId: `01PREF${id}`, number: 1, command: 'sleep', args: ['0.2'], script: null, interpreter: [], env: {}, timeoutMs: null, ...over };
}

const of = (conn: { messages: AgentMessage[] }, type: AgentMessage['type'], id: number) => conn.messages.findIndex((m) => m.type === type && 'attemptId' in m && m.attemptId === id);

describe('PrefetchQueue', () => {
  it('is first in, first out, up to its capacity; take, confirm and clear', () => {
    const q = new PrefetchQueue(2);
    const [a, b, c] = [attempt(), attempt(), attempt()];
    assert.equal(q.push(a, 1), true);
    assert.equal(q.push(b, 2), true);
    assert.equal(q.push(c, 3), false, 'full');
    assert.equal(q.size, 2);
    q.confirm(b.attemptId, 10);
    q.confirm(b.attemptId, 5); // never backwards
    assert.deepEqual(q.values().map((x) => [x.attempt.attemptId, x.leaseConfirmedAt]), [[a.attemptId, 1], [b.attemptId, 10]]);
    assert.equal(q.shift()?.attempt, a);
    assert.equal(q.push(c, 4), true);
    assert.equal(q.take(c.attemptId)?.attempt, c);
    assert.equal(q.take(c.attemptId), undefined);
    assert.deepEqual(q.clear().map((x) => x.attempt), [b]);
    assert.equal(q.shift(), undefined);
    assert.equal(new PrefetchQueue(0).push(a, 0), false, 'capacity 0 queues nothing');
    for (const bad of [-1, 1.5, Number.NaN]) assert.throws(() => new PrefetchQueue(bad), RangeError);
  });
});

describe('agent prefetch', { timeout: 30_000 }, () => {
  let tmp: ReturnType<typeof tempDir>;
  before(() => (tmp = tempDir('drover-prefetch-')));
  after(() => tmp.remove());

  type Connected = Awaited<ReturnType<typeof connectAgent>> & { server: FakeServer };
  /** A real agent (options `over`) connected to a fresh fake server; both are closed after `fn`, whatever it does. */
  async function withAgent(over: Parameters<typeof connectAgent>[2], fn: (c: Connected) => Promise<void>, welcome?: Parameters<typeof connectAgent>[3]): Promise<void> {
    const server = await FakeServer.start();
    try {
      const c = await connectAgent(server, tmp.dir, over, welcome);
      try {
        await fn({ ...c, server });
      } finally {
        await c.agent.close();
      }
    } finally {
      await server.close();
    }
  }

  it('refuses a prefetch that is not an integer from 0 to 1024', async () => {
    for (const prefetch of [-1, 1.5, 1025]) {
      await assert.rejects(startAgent({ servers: ['http://127.0.0.1:9'], token: TOKEN, slots: 1, prefetch, workDir: tmp.dir }), /prefetch must be an integer from 0 to 1024/);
    }
  });

  it('says its prefetch in the hello (none without one)', async () => {
    const server = await FakeServer.start();
    try {
      const a = await connectAgent(server, tmp.dir, { slots: 1, prefetch: 3 });
      assert.equal(a.hello.prefetch, 3);
      await a.agent.close();
      const b = await connectAgent(server, tmp.dir, { slots: 1 });
      assert.equal('prefetch' in b.hello, false);
      await b.agent.close();
    } finally {
      await server.close();
    }
  });

  it('slots 1, prefetch 2: three assignments run one at a time, in arrival order, all listed in heartbeats; a fourth runs anyway', async () => {
    await withAgent({ slots: 1, prefetch: 2 }, async ({ conn, endOf }) => {
      conn.autoAck = true;
      const [a1, a2, a3] = [attempt(), attempt(), attempt()];
      for (const a of [a1, a2, a3]) conn.send({ type: 'assign', attempt: a });
      await conn.next('started', (m) => m.attemptId === a1.attemptId);
      // All three are this worker's: their leases are renewed while two of them wait.
      await conn.next('heartbeat', (h) => [a1, a2, a3].every((a) => h.running.includes(a.attemptId)));
      assert.equal(of(conn, 'started', a2.attemptId), -1, 'a2 waits for the slot');
      // Beyond slots + prefetch: run at once rather than lost (the server's to respect; see agent.ts).
      const a4 = attempt();
      conn.send({ type: 'assign', attempt: a4 });
      await conn.next('started', (m) => m.attemptId === a4.attemptId);
      for (const a of [a1, a2, a3, a4]) assert.equal((await endOf(a.attemptId)).result.outcome, 'succeeded');
      // Each queued one started after the one before it had ended.
      assert.ok(of(conn, 'exit', a1.attemptId) < of(conn, 'started', a2.attemptId), 'a2 after a1');
      assert.ok(of(conn, 'exit', a2.attemptId) < of(conn, 'started', a3.attemptId), 'a3 after a2');
      assert.ok(of(conn, 'started', a4.attemptId) < of(conn, 'started', a2.attemptId), 'a4 ran beside a1');
    });
  });

  it('a cancel ends a queued attempt as cancelled without starting it; a report: false stop drops one, reporting nothing', async () => {
    await withAgent({ slots: 1, prefetch: 2 }, async ({ conn, endOf }) => {
      conn.autoAck = true;
      const running = attempt({ args: ['100'] });
      const [cancelled, dropped] = [attempt(), attempt()];
      for (const a of [running, cancelled, dropped]) conn.send({ type: 'assign', attempt: a });
      await conn.next('started', (m) => m.attemptId === running.attemptId);
      conn.send({ type: 'cancel', attemptId: cancelled.attemptId, reason: 'cancelled by alice' });
      const exit = await conn.next('exit', (m) => m.attemptId === cancelled.attemptId);
      assert.equal(exit.outcome, 'cancelled');
      assert.equal(exit.error, 'cancelled by alice');
      assert.equal(exit.exitCode, null);
      conn.stopOrders = [{ attemptId: dropped.attemptId, reason: 'attempt is no longer current', report: false }];
      await conn.next('heartbeat', (h) => !h.running.includes(dropped.attemptId) && h.running.includes(running.attemptId));
      conn.stopOrders = [];
      conn.send({ type: 'cancel', attemptId: running.attemptId, reason: 'done' });
      assert.equal((await endOf(running.attemptId)).result.outcome, 'cancelled');
      await conn.next('exit', (m) => m.attemptId === running.attemptId);
      // Neither queued one ever started, and the dropped one said nothing at all.
      for (const a of [cancelled, dropped]) assert.equal(of(conn, 'started', a.attemptId), -1);
      assert.equal(of(conn, 'exit', dropped.attemptId), -1);
    });
  });

  it('a drain gives the queue back at once, reported lost and never started; the running attempt finishes', async () => {
    await withAgent({ slots: 1, prefetch: 2 }, async ({ conn, endOf }) => {
      conn.autoAck = true;
      const running = attempt({ args: ['0.5'] });
      const queued = [attempt(), attempt()];
      for (const a of [running, ...queued]) conn.send({ type: 'assign', attempt: a });
      await conn.next('started', (m) => m.attemptId === running.attemptId);
      conn.send({ type: 'drain', reason: 'test' });
      for (const a of queued) {
        const exit = await conn.next('exit', (m) => m.attemptId === a.attemptId);
        assert.equal(exit.outcome, 'lost');
        assert.equal(exit.error, 'worker is draining');
      }
      assert.equal(of(conn, 'exit', running.attemptId), -1, 'given back while the running one still runs');
      assert.equal((await endOf(running.attemptId)).result.outcome, 'succeeded');
      for (const a of queued) assert.equal(of(conn, 'started', a.attemptId), -1);
    });
  });

  it('a give_back returns the named attempts still queued, as returned and never started; a running one and an unknown id are kept and ignored', async () => {
    await withAgent({ slots: 1, prefetch: 3 }, async ({ conn, endOf }) => {
      conn.autoAck = true;
      const running = attempt({ args: ['0.5'] });
      const [first, second, third] = [attempt(), attempt(), attempt()];
      for (const a of [running, first, second, third]) conn.send({ type: 'assign', attempt: a });
      await conn.next('started', (m) => m.attemptId === running.attemptId);
      conn.send({ type: 'give_back', attemptIds: [third.attemptId, running.attemptId, second.attemptId, 987_654], reason: 'another worker has a free slot' });
      for (const a of [third, second]) {
        const exit = await conn.next('exit', (m) => m.attemptId === a.attemptId);
        assert.deepEqual([exit.outcome, exit.exitCode, exit.signal, exit.error], ['returned', null, null, 'given back unstarted: another worker has a free slot']);
      }
      assert.equal(of(conn, 'exit', running.attemptId), -1, 'the running one is not given back');
      // The one left in the queue runs after the running one; the returned ones never start here.
      for (const a of [running, first]) assert.equal((await endOf(a.attemptId)).result.outcome, 'succeeded');
      for (const a of [second, third]) assert.equal(of(conn, 'started', a.attemptId), -1);
      assert.ok(of(conn, 'exit', running.attemptId) < of(conn, 'started', first.attemptId));
      // Asked again (or a malformed ask): nothing more is said about them. The assign after them is
      // handled after them (one socket, in order), so its end shows they were handled.
      conn.send({ type: 'give_back', attemptIds: [second.attemptId, 'x' as never], reason: '' });
      conn.send({ type: 'give_back', attemptIds: 'nope' as never, reason: 'x' });
      const last = attempt();
      conn.send({ type: 'assign', attempt: last });
      assert.equal((await endOf(last.attemptId)).result.outcome, 'succeeded');
      for (const a of [second, third]) assert.equal(conn.messages.filter((m) => m.type === 'exit' && m.attemptId === a.attemptId).length, 1);
    });
  });

  it('close() gives the queue back as lost (worker shutting down)', async () => {
    await withAgent({ slots: 1, prefetch: 1 }, async ({ agent, conn }) => {
      const running = attempt({ args: ['100'] });
      const queued = attempt();
      for (const a of [running, queued]) conn.send({ type: 'assign', attempt: a });
      await conn.next('started', (m) => m.attemptId === running.attemptId);
      await agent.close();
      const exit = await conn.next('exit', (m) => m.attemptId === queued.attemptId);
      assert.deepEqual([exit.outcome, exit.error], ['lost', 'worker shutting down']);
      assert.equal(of(conn, 'started', queued.attemptId), -1);
    });
  });

  it('self-fencing drops queued attempts too: none starts, each is in the next hello as killed', async () => {
    await withAgent({ slots: 1, prefetch: 2, killGraceMs: 300 }, async ({ conn, server }) => {
      const running = attempt({ args: ['100'] });
      const queued = [attempt(), attempt()];
      for (const a of [running, ...queued]) conn.send({ type: 'assign', attempt: a });
      await conn.next('started', (m) => m.attemptId === running.attemptId);
      conn.answerHeartbeats = false;
      const next = await server.nextConnection();
      const hello = await next.welcome();
      const killed = new Map((hello.killed ?? []).map((k) => [k.attemptId, k]));
      for (const a of queued) {
        assert.equal(killed.get(a.attemptId)?.fencingToken, a.fencingToken);
        assert.match(killed.get(a.attemptId)!.reason, /dropped by the agent before it started \(self-fencing\)/);
        assert.equal(of(conn, 'started', a.attemptId), -1);
        assert.equal(of(next, 'started', a.attemptId), -1);
      }
      assert.match(killed.get(running.attemptId)?.reason ?? '', /stopped by the agent/);
      assert.deepEqual(hello.running.filter((r) => queued.some((a) => a.attemptId === r.attemptId)), [], 'no longer listed as its own');
    }, { heartbeatMs: 200, leaseMs: 1_500 });
  });

  it('self-fencing drops queued attempts whose leases were confirmed later too: the slot the fenced one frees is not taken', async () => {
    await withAgent({ slots: 1, prefetch: 2, killGraceMs: 300 }, async ({ conn, server }) => {
      // No heartbeat is confirmed from here on: each lease stands from its assignment's arrival.
      conn.answerHeartbeats = false;
      const running = attempt({ args: ['100'] });
      conn.send({ type: 'assign', attempt: running });
      await conn.next('started', (m) => m.attemptId === running.attemptId);
      // The queued ones arrive later, so their own self-fencing times come after the running one's; the
      // gap is what is under test (the agent's clock is the wall clock), so it is made, not awaited.
      await new Promise((r) => setTimeout(r, 80));
      const queued = [attempt(), attempt()];
      for (const a of queued) conn.send({ type: 'assign', attempt: a });
      const next = await server.nextConnection();
      const hello = await next.welcome();
      const killed = new Map((hello.killed ?? []).map((k) => [k.attemptId, k]));
      assert.match(killed.get(running.attemptId)?.reason ?? '', /stopped by the agent before it could expire \(self-fencing\)/);
      for (const a of queued) {
        assert.match(killed.get(a.attemptId)?.reason ?? '', /dropped by the agent before it started \(self-fencing\)/, `queued attempt ${a.attemptId}`);
        assert.equal(of(conn, 'started', a.attemptId), -1, 'never started on the old connection');
        assert.equal(of(next, 'started', a.attemptId), -1, 'nor on the new one');
      }
    }, { heartbeatMs: 200, leaseMs: 1_500 });
  });
});
