/**
 * GET /v1/stream against a real server and worker on SQLite: who may open
 * it, what it carries for whom, how fast, and resuming after a disconnect
 * without a gap or a repeat (checked against the store's own change feed,
 * read from the same file by this process), limits, revocation, expiry.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { startCluster, type Cluster } from './harness.js';
import { checkExact, StreamReader } from './stream-client.js';

const TERMINAL = ['succeeded', 'failed', 'cancelled'];

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
}

describe('e2e: the live stream (SQLite)', () => {
  let c: Cluster;
  let store: SqliteStore;
  let alice: string;
  let bob: string;
  /** A cursor from before any stream opened (so not in the server's memory of recent changes). */
  let early: string;
  const readers: StreamReader[] = [];
  const open = async (token: string, cursor?: string) => {
    const r = await StreamReader.open(c.url, token, cursor);
    readers.push(r);
    return r;
  };
  const raw = (path: string, headers: Record<string, string> = {}) => fetch(c.url + path, { headers: { authorization: `Bearer ${c.api.token}`, ...headers } });

  before(async () => {
    c = await startCluster({ workers: 0 });
    // The store's feed, read directly from the server's file (no lock: a reader beside the server).
    store = openSqliteStore(join(c.dir, 'drover.db'));
    early = await store.feedHead();
    await c.startWorker({ id: 'w1', slots: 4 });
    alice = (await c.api.req('POST', '/v1/tokens', { name: 'alice', role: 'user' })).body.secret;
    bob = (await c.api.req('POST', '/v1/tokens', { name: 'bob', role: 'user' })).body.secret;
  });
  after(async () => {
    await Promise.all(readers.map((r) => r.close()));
    await store?.close();
    await c?.close();
  });

  it('is for people\'s tokens, answers as an event stream, and names a bad start position', async () => {
    assert.equal((await c.api.req('GET', '/v1/stream', undefined, null)).status, 401);
    const w = await c.api.req('GET', '/v1/stream', undefined, c.workerToken);
    assert.equal(w.status, 403);
    const ctl = new AbortController();
    const res = await fetch(`${c.url}/v1/stream`, { headers: { authorization: `Bearer ${alice}` }, signal: ctl.signal });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type')!, /^text\/event-stream/);
    assert.equal(res.headers.get('cache-control'), 'no-store');
    assert.equal(res.headers.get('x-accel-buffering'), 'no');
    ctl.abort();
    const bad: Array<[string, Record<string, string>, string]> = [
      ['/v1/stream?cursor=nope', {}, 'cursor'],
      ['/v1/stream?cursor=a%20b', {}, 'cursor'],
      ['/v1/stream?cursor=' + 'x'.repeat(201), {}, 'cursor'],
      ['/v1/stream', { 'last-event-id': 'nope' }, 'Last-Event-ID'],
      ['/v1/stream', { 'last-event-id': 'a b' }, 'Last-Event-ID'],
      ['/v1/stream?bogus=1', {}, 'bogus'],
    ];
    for (const [path, headers, field] of bad) {
      const r = await raw(path, headers);
      const body = (await r.json()) as { error: { code: string; field: string; reason: string } };
      assert.equal(r.status, 400, `${path} ${JSON.stringify(headers)}`);
      assert.equal(body.error.code, 'invalid_input');
      assert.equal(body.error.field, field, JSON.stringify(body));
      assert.ok(body.error.reason);
    }
  });

  it('pushes each state change within a second; a user gets only their own tasks, an admin also workers', async () => {
    const admin = await open(c.api.token);
    const a = await open(alice);
    const b = await open(bob);
    for (const r of [admin, a, b]) await r.until('hello', (x) => x.events.length > 0);
    const t0 = performance.now();
    const id = (await c.api.req('POST', '/v1/tasks', { script: 'sleep 0.5', name: 'visible' }, alice)).body.task.id as string;
    const submitted = performance.now();
    await a.until('running', (r) => r.latest().get(id)?.state === 'running');
    await a.until('succeeded', (r) => r.latest().get(id)?.state === 'succeeded');
    await admin.until('succeeded (admin)', (r) => r.latest().get(id)?.state === 'succeeded');
    const seen = a.tasks().filter((t) => t.id === id);
    assert.ok(seen[0]!.receivedAt - submitted < 1000, `first seen ${Math.round(seen[0]!.receivedAt - t0)} ms after the submit`);
    const done = seen.find((t) => t.state === 'succeeded')!;
    assert.equal(done.exitCode, 0);
    assert.equal(done.workerId, 'w1');
    assert.ok(done.durationMs !== null && done.startedAt !== null && done.endedAt !== null);
    assert.ok(!('env' in done) && !('script' in done), 'summaries only');
    // A worker joining is a change admins see.
    await c.startWorker({ id: 'w2', slots: 1 });
    await admin.until('worker w2', (r) => r.events.some((e) => e.type === 'changes' && e.workers.some((w) => w.id === 'w2' && w.state === 'connected')));
    assert.ok(a.events.every((e) => e.type !== 'changes' || e.workers.length === 0), 'no workers for a user');
    assert.deepEqual(b.tasks(), [], 'bob sees nothing of alice\'s');
    await checkExact(store, 'alice', [a], false);
    await checkExact(store, null, [admin], false);
  });

  it('delivers commits within a second (measured over 40 submits and their runs)', async () => {
    const s = await open(alice);
    await s.until('hello', (x) => x.events.length > 0);
    const firstSeen: number[] = [];
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) {
      const sent = performance.now();
      const r = await c.api.req('POST', '/v1/tasks', { command: 'true', name: `lat-${i}` }, alice);
      const acked = performance.now();
      const id = r.body.task.id as string;
      ids.push(id);
      await s.until(`task ${i}`, (x) => x.latest().has(id));
      // The commit happened between sending and the answer: the delivery took at most this long.
      firstSeen.push(s.tasks().find((t) => t.id === id)!.receivedAt - Math.min(acked, sent + (acked - sent) / 2));
    }
    await s.until('all done', (x) => ids.every((id) => x.latest().get(id)?.state === 'succeeded'), 30_000);
    const p50 = pct(firstSeen, 50);
    const p99 = pct(firstSeen, 99);
    process.stdout.write(`# stream delivery (SQLite, submit answered → event): p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, max ${Math.max(...firstSeen).toFixed(1)} ms\n`);
    assert.ok(p99 < 1000, `p99 ${p99} ms`);
  });

  it('resumes with Last-Event-ID after a disconnect: nothing missed, nothing repeated', async () => {
    const admin1 = await open(c.api.token);
    const a1 = await open(alice);
    for (const r of [admin1, a1]) await r.until('hello', (x) => x.events.length > 0);
    const submit = (token: string, i: number) => c.api.req('POST', '/v1/tasks', { script: `sleep 0.0${i % 5}`, name: `resume-${i}` }, token);
    const first = await Promise.all(Array.from({ length: 12 }, (_, i) => submit(i % 3 ? alice : bob, i)));
    await a1.until('some of alice\'s', (r) => r.tasks().length >= 3);
    // Disconnect while work goes on, and submit more while away.
    await Promise.all([a1.close(), admin1.close()]);
    const second = await Promise.all(Array.from({ length: 12 }, (_, i) => submit(i % 3 ? alice : bob, i + 12)));
    const a2 = await open(alice, a1.lastEventId);
    const admin2 = await open(c.api.token, admin1.lastEventId);
    const mine = [...first, ...second].filter((r) => r.body.task.owner === 'alice').map((r) => r.body.task.id as string);
    const all = [...first, ...second].map((r) => r.body.task.id as string);
    const final = (rs: StreamReader[]) => {
      const m = new Map<string, string>();
      for (const r of rs) for (const [id, t] of r.latest()) m.set(id, t.state);
      return m;
    };
    await a2.until('alice\'s tasks all ended', () => mine.every((id) => TERMINAL.includes(final([a1, a2]).get(id) ?? '')), 30_000);
    await admin2.until('every task ended', () => all.every((id) => TERMINAL.includes(final([admin1, admin2]).get(id) ?? '')), 30_000);
    assert.ok(a2.events[0]!.type === 'hello' && a2.events[0]!.cursor === a1.lastEventId);
    const n = await checkExact(store, 'alice', [a1, a2], true);
    const m = await checkExact(store, null, [admin1, admin2], false);
    assert.ok(n >= 4 && m >= 4, `${n} and ${m} events checked`);
  });

  it('revoking the token ends its streams; at most 16 streams per token', async () => {
    const t = (await c.api.req('POST', '/v1/tokens', { name: 'carol', role: 'user' })).body;
    const streams = await Promise.all(Array.from({ length: 16 }, () => open(t.secret)));
    const over = await fetch(`${c.url}/v1/stream`, { headers: { authorization: `Bearer ${t.secret}` } });
    assert.equal(over.status, 429);
    assert.equal(((await over.json()) as { error: { code: string } }).error.code, 'too_many_streams');
    await streams[0]!.close();
    const again = await open(t.secret);
    await again.until('hello', (x) => x.events.length > 0);
    const revokedAt = performance.now();
    assert.equal((await c.api.req('DELETE', `/v1/tokens/${t.token.id}`)).status, 200);
    for (const s of [again, ...streams.slice(1)]) await s.until('the end', (x) => x.ended, 2000).catch((e) => assert.ok(s.ended, String(e)));
    assert.ok(performance.now() - revokedAt < 2000);
    assert.equal((await fetch(`${c.url}/v1/stream`, { headers: { authorization: `Bearer ${t.secret}` } })).status, 401);
  });

  it('an expired cursor opens with hello, then reset, then goes on live', async () => {
    // What the sweeper does after 15 minutes, done now through the store.
    assert.ok((await store.pruneFeed(Date.now() + 3600_000, 1_000_000)) > 0);
    const r = await open(alice, early);
    await r.until('reset', (x) => x.events.length >= 2);
    assert.deepEqual(r.events.slice(0, 2).map((e) => e.type), ['hello', 'reset']);
    const next = (await c.api.req('POST', '/v1/tasks', { command: 'true' }, alice)).body.task.id as string;
    await r.until('live after the reset', (x) => x.latest().get(next)?.state === 'succeeded');
    await checkExact(store, 'alice', [r], true);
  });
});
