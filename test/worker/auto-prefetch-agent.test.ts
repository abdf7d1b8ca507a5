/**
 * The agent with `prefetch: 'auto'` (worker/auto-prefetch.ts) against the
 * fake server: the hello offers no queue; after a run of short attempts a
 * `prefetch` message offers twice the slots, only to a server whose welcome
 * said `prefetchChanges`; a queued attempt waiting behind a long one makes
 * the agent withdraw the offer, and the queued attempt, asked back, is
 * returned unstarted.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { AgentMessage, AssignedAttempt } from '../../src/core/protocol.js';
import { AUTO_WINDOW } from '../../src/worker/auto-prefetch.js';
import { FakeServer } from './fake-server.js';
import { fencingToken, tempDir } from './helpers.js';
import { connectAgent } from './agent-harness.js';

let nextId = 7_000;
function attempt(over: Partial<AssignedAttempt> = {}): AssignedAttempt {
  const id = nextId++;
  return { attemptId: id, fencingToken: fencingToken(), taskId: `01AUTO${id}`, number: 1, command: 'true', args: [], script: null, interpreter: [], env: {}, timeoutMs: null, ...over };
}

const offers = (messages: AgentMessage[]) => messages.filter((m): m is Extract<AgentMessage, { type: 'prefetch' }> => m.type === 'prefetch').map((m) => m.prefetch);

describe('agent: prefetch auto', { timeout: 60_000 }, () => {
  let tmp: ReturnType<typeof tempDir>;
  before(() => (tmp = tempDir('drover-auto-prefetch-')));
  after(() => tmp.remove());

  type Connected = Awaited<ReturnType<typeof connectAgent>>;
  /** A real agent (options `over`) connected to a fresh fake server (welcome `welcome`); both closed after `fn`. */
  async function withAgent(over: Parameters<typeof connectAgent>[2], welcome: Parameters<typeof connectAgent>[3], fn: (c: Connected) => Promise<void>): Promise<void> {
    const server = await FakeServer.start();
    try {
      const c = await connectAgent(server, tmp.dir, over, welcome);
      try {
        await fn(c);
      } finally {
        await c.agent.close();
      }
    } finally {
      await server.close();
    }
  }

  /** Runs `n` attempts one after another (each assigned once the one before was reported), as a server refills one slot. */
  async function runShort(conn: Connected['conn'], n: number): Promise<void> {
    for (let i = 0; i < n; i++) {
      const a = attempt();
      conn.send({ type: 'assign', attempt: a });
      await conn.next('exit', (m) => m.attemptId === a.attemptId);
      conn.send({ type: 'exit_ack', attemptId: a.attemptId });
    }
  }

  it('offers nothing in the hello, then twice the slots after a run of short attempts, to a server that takes it', async () => {
    await withAgent({ slots: 2, prefetch: 'auto', executor: 'noop' }, { prefetchChanges: true }, async ({ conn, hello }) => {
      assert.equal('prefetch' in hello, false);
      await runShort(conn, AUTO_WINDOW - 1);
      assert.deepEqual(offers(conn.messages), [], 'one short of the window');
      await runShort(conn, 1);
      await conn.next('prefetch', (m) => m.prefetch === 4);
      await runShort(conn, 5);
      assert.deepEqual(offers(conn.messages), [4], 'offered once');
    });
  });

  it('sends no prefetch message to a server whose welcome did not say prefetchChanges (an older server)', async () => {
    await withAgent({ slots: 1, prefetch: 'auto', executor: 'noop' }, {}, async ({ conn }) => {
      // Past the window, then one more round trip: an offer made at the window would have arrived before it.
      await runShort(conn, AUTO_WINDOW + 2);
      assert.deepEqual(offers(conn.messages), []);
      assert.equal(conn.messages.filter((m) => m.type === 'hello').length, 1, 'still connected: nothing the server refused');
    });
  });

  it('withdraws the offer when a queued attempt waits behind a long one; the queued one, asked back, is returned unstarted', async () => {
    await withAgent({ slots: 1, prefetch: 'auto' }, { prefetchChanges: true }, async ({ conn, endOf }) => {
      // Real `true` processes: on a loaded machine one may take over 50 ms and restart the count (or over 1 s
      // and withdraw the offer), so more rounds until the last word is an offer.
      for (let round = 0; round < 10 && offers(conn.messages).at(-1) !== 2; round++) await runShort(conn, AUTO_WINDOW);
      assert.equal(offers(conn.messages).at(-1), 2);
      const before = offers(conn.messages).length;
      const long = attempt({ command: 'sleep', args: ['30'] });
      conn.send({ type: 'assign', attempt: long });
      await conn.next('started', (m) => m.attemptId === long.attemptId);
      const queued = attempt();
      const t0 = performance.now();
      conn.send({ type: 'assign', attempt: queued });
      await conn.next('prefetch', (m) => m.prefetch === 0);
      assert.ok(performance.now() - t0 >= 200, 'not before the queue stalled for 200 ms');
      conn.send({ type: 'give_back', attemptIds: [queued.attemptId], reason: 'the worker turned its prefetch down' });
      const back = await conn.next('exit', (m) => m.attemptId === queued.attemptId);
      assert.equal(back.outcome, 'returned');
      assert.equal(back.error, 'given back unstarted: the worker turned its prefetch down');
      assert.equal(conn.messages.some((m) => m.type === 'started' && m.attemptId === queued.attemptId), false, 'never started');
      conn.send({ type: 'cancel', attemptId: long.attemptId, reason: 'test over' });
      assert.equal((await endOf(long.attemptId)).result.outcome, 'cancelled');
      assert.deepEqual(offers(conn.messages).slice(before), [0], 'withdrawn once; the long one ending after the withdrawal changes nothing');
    });
  });
});
