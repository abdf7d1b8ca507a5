/**
 * Hints only when someone else listens (src/store/postgres/signal-peers.ts), on
 * a real PostgreSQL: a store alone on its database NOTIFYs no hint; a second
 * store's arrival is known to the first within a round trip and the hints
 * flow to it; its close stops them at once. Presence periods are shortened;
 * nothing sleeps on the clock: each step awaits what it observes.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import pg from 'pg';
import { newTaskId } from '../../src/core/ids.js';
import { SIGNAL_CHANNEL } from '../../src/store/postgres/signals.js';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { createTestDatabase, dropAllTestDatabases, PG_SKIP_REASON, requirePostgres } from '../support/postgres.js';
import { makeSpec, T0 } from './contract-harness.js';
import { Recorder } from './contract-signals.js';

const PG = await requirePostgres();
const PRESENCE_MS = 100;
const PEER_TTL_MS = 2_000;

after(async () => {
  if (PG) await dropAllTestDatabases();
});

/** Everything NOTIFYed on the channel, as a plain LISTENer (not a store: it never says `here`) sees it. */
async function tap(url: string): Promise<{ payloads: string[]; until(pred: (p: string[]) => boolean, what: string): Promise<void>; close(): Promise<void> }> {
  const c = new pg.Client({ connectionString: url });
  const payloads: string[] = [];
  let wake: () => void = () => {};
  c.on('notification', (n) => {
    if (n.channel !== SIGNAL_CHANNEL) return;
    payloads.push(n.payload ?? '');
    wake();
  });
  await c.connect();
  await c.query(`LISTEN ${SIGNAL_CHANNEL}`);
  return {
    payloads,
    async until(pred, what) {
      const deadline = Date.now() + 10_000;
      while (!pred(payloads)) {
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`${what}: not seen; saw ${JSON.stringify(payloads)}`);
        await new Promise<void>((r) => {
          const t = setTimeout(r, left);
          wake = () => {
            clearTimeout(t);
            r();
          };
        });
      }
    },
    close: () => c.end(),
  };
}

async function until(cond: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within 10 s`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const isHere = (p: string) => p.includes('"kind":"peer"') && p.includes('"here"');
const isBye = (p: string) => p.includes('"kind":"peer"') && p.includes('"bye"');
const isHint = (p: string) => p.startsWith('{"kind":"wake"') || p.startsWith('{"kind":"task"');

function open(url: string, i: number): PostgresStore {
  return openPostgresStore(url, { poolSize: 2, applicationName: `drover-test-peers-${i}`, presenceMs: PRESENCE_MS, peerTtlMs: PEER_TTL_MS });
}

describe('PostgreSQL: hints go out only while another store listens', { skip: PG ? false : PG_SKIP_REASON }, () => {
  it('alone, a store sends no hint; with a second store, it does; after that one closes, it stops', async () => {
    const db = await createTestDatabase();
    const t = await tap(db.url);
    const a = open(db.url, 1);
    let b: PostgresStore | null = null;
    try {
      const recA = new Recorder(a);
      await a.whenListening();
      assert.equal(a.signalPeers(), 0);

      // Alone: its own listener hears its writes (at commit), the channel carries none of them.
      // A's presence comes every PRESENCE_MS on the same connection as its hints, after them:
      // two more `here`s after the write mean any hint of it would already be in.
      const { task: t1 } = await a.createTask(newTaskId(T0), 'alice', makeSpec(), 'user:alice', T0);
      await recA.waitFor((s) => s.kind === 'task' && s.taskId === t1.id, 'A hears its own task');
      const heres = t.payloads.filter(isHere).length;
      await t.until((p) => p.filter(isHere).length >= heres + 2, "two more of A's presence");
      assert.deepEqual(t.payloads.filter(isHint), [], 'a store alone sent hints');

      // A second store: A learns of it at once (its `here`), and B of A (A's answer).
      b = open(db.url, 2);
      const recB = new Recorder(b);
      await b.whenListening();
      await until(() => a.signalPeers() === 1 && b!.signalPeers() === 1, 'each store knows the other');
      const { task: t2 } = await a.createTask(newTaskId(T0 + 1), 'alice', makeSpec(), 'user:alice', T0 + 1);
      await recB.waitFor((s) => s.kind === 'task' && s.taskId === t2.id, "B hears A's task");
      await recB.waitFor((s) => s.kind === 'wake', "B hears A's wake");
      await t.until((p) => p.some((x) => isHint(x) && x.includes(t2.id)), 'the hint over the channel');

      // B closes: its `bye` reaches A before the TTL could have run out, and A stops again.
      const closedAt = Date.now();
      await b.close();
      b = null;
      await t.until((p) => p.some(isBye), "B's bye");
      await until(() => a.signalPeers() === 0, 'A forgets B');
      assert.ok(Date.now() - closedAt < PEER_TTL_MS, `A forgot B only after ${Date.now() - closedAt} ms: by the TTL, not the bye`);
      const hintsBefore = t.payloads.filter(isHint).length;
      const { task: t3 } = await a.createTask(newTaskId(T0 + 2), 'alice', makeSpec(), 'user:alice', T0 + 2);
      await recA.waitFor((s) => s.kind === 'task' && s.taskId === t3.id, 'A hears its own task');
      const heres3 = t.payloads.filter(isHere).length;
      await t.until((p) => p.filter(isHere).length >= heres3 + 2, "two more of A's presence");
      assert.equal(t.payloads.filter(isHint).length, hintsBefore, 'hints went on after the only peer left');
    } finally {
      await b?.close();
      await a.close();
      await t.close();
      await db.drop();
    }
  });

  it('a peer that stops saying `here` without a bye (killed) counts until the TTL only', async () => {
    const db = await createTestDatabase();
    const a = open(db.url, 1);
    const ghost = new pg.Client({ connectionString: db.url });
    try {
      new Recorder(a);
      await a.whenListening();
      // A peer that says `here` once, as a killed server's last words would be, and LISTENs (so it gets A's answer).
      await ghost.connect();
      await ghost.query(`LISTEN ${SIGNAL_CHANNEL}`);
      const answered = new Promise<void>((r) => ghost.on('notification', (n) => n.payload && isHere(n.payload) && r()));
      const saidAt = Date.now();
      await ghost.query('SELECT pg_notify($1, $2)', [SIGNAL_CHANNEL, '{"kind":"peer","state":"here"}']);
      await until(() => a.signalPeers() === 1, 'A counts the newcomer');
      await answered;
      await until(() => a.signalPeers() === 0, 'A drops the silent peer');
      assert.ok(Date.now() - saidAt >= PEER_TTL_MS - 50, `dropped after ${Date.now() - saidAt} ms, before the TTL`);
    } finally {
      await ghost.end();
      await a.close();
      await db.drop();
    }
  });

  it('a store that does not listen (no subscriber) sends every hint: it cannot know who listens', async () => {
    const db = await createTestDatabase();
    const t = await tap(db.url);
    const a = open(db.url, 1);
    try {
      const { task } = await a.createTask(newTaskId(T0), 'alice', makeSpec(), 'user:alice', T0);
      await t.until((p) => p.some((x) => isHint(x) && x.includes(task.id)), 'the task hint');
      assert.equal(a.signalPeers(), 0);
    } finally {
      await a.close();
      await t.close();
      await db.drop();
    }
  });
});
