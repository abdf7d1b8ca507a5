/**
 * The change feed's fan-out and catch-up (src/server/change-feed.ts) over an
 * in-memory feed that keeps the store's contract (store/feed.ts): changes in
 * cursor order, opaque cursors, expiry after a prune, a malformed cursor
 * refused. Cursors here are random strings with no order at all, and every
 * head() is a new string, so the feed cannot rely on comparing them (it must
 * only test equality). Source calls take a random number of event-loop turns,
 * so catch-up reads interleave with tail reads in many orders. Nothing waits
 * on the wall clock: the tail is driven by calling step().
 *
 * The exactness check (`checkExact`): for a subscriber, consecutive event ids
 * P → X (starting at its start cursor) must carry exactly the tasks (and, for
 * an admin, the workers) that have a change for it in (P, X]: nothing missed,
 * nothing repeated. At the end, nothing for it lies after its last id.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CursorExpiredError, InvalidInputError } from '../../src/core/errors.js';
import { ChangeFeed, StreamCapError, type FeedEvent, type FeedSource, type Subscription } from '../../src/server/change-feed.js';
import type { Change, ChangePage } from '../../src/store/feed.js';

interface T {
  id: string;
  owner: string;
  v: number;
}
interface W {
  id: string;
  v: number;
}
type Ev = FeedEvent<T, W>;

function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const turn = () => new Promise<void>((r) => setImmediate(r));

/** The store's side of the contract, in memory. */
class FakeFeed implements FeedSource<T, W> {
  readonly log: Change[] = [];
  /** Cursor → how many changes lie at or before it. */
  readonly at = new Map<string, number>();
  /** Changes with index <= prunedTo are deleted; a cursor before prunedTo is expired. */
  prunedTo = 0;
  readonly tasks = new Map<string, T>();
  readonly workers = new Map<string, W>();
  reads = 0;
  loads = 0;
  private n = 0;
  constructor(readonly rand: () => number = () => 0) {}

  private cursor(prefix: string): string {
    return `${prefix}${Math.floor(this.rand() * 1e9).toString(36)}-${++this.n}`;
  }
  private async delay(): Promise<void> {
    const k = Math.floor(this.rand() * 4);
    for (let i = 0; i < k; i++) await turn();
  }
  commitTask(id: string, owner: string): void {
    const t = this.tasks.get(id) ?? { id, owner, v: 0 };
    assert.equal(t.owner, owner, 'a task keeps its owner (test setup)');
    this.tasks.set(id, { ...t, v: t.v + 1 });
    this.push({ topic: 'task', ref: id, owner, state: 'waiting' });
  }
  commitWorker(id: string): void {
    const w = this.workers.get(id) ?? { id, v: 0 };
    this.workers.set(id, { ...w, v: w.v + 1 });
    this.push({ topic: 'worker', ref: id, owner: null, state: null });
  }
  private push(c: Omit<Change, 'cursor' | 'at'>): void {
    const cursor = this.cursor('c');
    this.log.push({ ...c, cursor, at: this.log.length });
    this.at.set(cursor, this.log.length);
  }
  /** The index of a cursor (test side). */
  index(c: string): number {
    const i = this.at.get(c);
    if (i === undefined) throw new Error(`unknown cursor ${c}`);
    return i;
  }
  prune(to: number): void {
    this.prunedTo = Math.max(this.prunedTo, to);
  }

  async head(): Promise<string> {
    await this.delay();
    const c = this.cursor('h');
    this.at.set(c, this.log.length);
    return c;
  }
  async read(after: string, limit: number, owner?: string): Promise<ChangePage> {
    this.reads++;
    await this.delay();
    const i = this.at.get(after);
    if (i === undefined) throw new InvalidInputError('cursor', 'malformed');
    if (i < this.prunedTo) throw new CursorExpiredError(after);
    const changes: Change[] = [];
    for (let k = i; k < this.log.length && changes.length < limit; k++) {
      const c = this.log[k]!;
      if (owner !== undefined && (c.topic !== 'task' || c.owner !== owner)) continue;
      changes.push(c);
    }
    return { changes, cursor: changes.length ? changes[changes.length - 1]!.cursor : after };
  }
  async load(taskIds: readonly string[], workerIds: readonly string[]): Promise<{ tasks: T[]; workers: W[] }> {
    this.loads++;
    await this.delay();
    return {
      tasks: taskIds.flatMap((id) => (this.tasks.has(id) ? [this.tasks.get(id)!] : [])),
      workers: workerIds.flatMap((id) => (this.workers.has(id) ? [this.workers.get(id)!] : [])),
    };
  }
}

/** A subscriber's socket: records what it took; `full` makes it refuse more until drained. */
class Sink {
  readonly events: Ev[] = [];
  full = false;
  failed: unknown = null;
  send(ev: Ev): boolean {
    this.events.push(ev);
    return !this.full;
  }
  fail(err: unknown): void {
    this.failed = err;
  }
}

interface Client {
  owner: string | null;
  start: string | null;
  sink: Sink;
  sub: Subscription;
}

async function open(feed: ChangeFeed<T, W>, owner: string | null, cursor: string | null, key = 'k'): Promise<Client> {
  const sink = new Sink();
  const sub = await feed.subscribe({ owner, key, cursor, sink });
  return { owner, start: cursor, sink, sub };
}

async function settle(n = 30): Promise<void> {
  for (let i = 0; i < n; i++) await turn();
}

/** Which refs of changes in (from, to] are meant for `owner` (null: admin). */
function expectedRefs(src: FakeFeed, from: number, to: number, owner: string | null): string[] {
  const out = new Set<string>();
  for (let k = from; k < to; k++) {
    const c = src.log[k]!;
    if (c.topic === 'task' && (owner === null || c.owner === owner)) out.add(`t:${c.ref}`);
    if (c.topic === 'worker' && owner === null) out.add(`w:${c.ref}`);
  }
  return [...out].sort();
}

/**
 * Exactness over a client's events; returns the index of its last position.
 * `atEnd`: also require that nothing for it lies after that (it is caught up).
 */
function checkExact(src: FakeFeed, c: Client, atEnd: boolean): number {
  const evs = c.sink.events;
  assert.equal(evs[0]?.type, 'hello', 'hello comes first');
  let prev = src.index(evs[0]!.cursor);
  if (c.start !== null) assert.equal(evs[0]!.cursor, c.start, 'hello carries the start cursor');
  for (const [n, ev] of evs.slice(1).entries()) {
    if (ev.type === 'hello') assert.fail('a second hello');
    const x = src.index(ev.cursor);
    if (ev.type === 'reset') {
      prev = x; // the client re-reads its state: nothing to check across a reset
      continue;
    }
    const got = [...ev.tasks.map((t) => `t:${t.id}`), ...ev.workers.map((w) => `w:${w.id}`)].sort();
    assert.equal(new Set(got).size, got.length, `event ${n + 1}: a task or worker twice in one batch`);
    assert.deepEqual(got, expectedRefs(src, prev, x, c.owner), `event ${n + 1} (${prev} → ${x}) for ${c.owner ?? 'admin'}: wrong set`);
    if (c.owner !== null) assert.ok(ev.tasks.every((t) => t.owner === c.owner) && ev.workers.length === 0, 'a user gets only their own tasks and no workers');
    prev = x;
  }
  // The position may be ahead of the last event, but only over changes not meant for it.
  const pos = src.index(c.sub.position);
  assert.deepEqual(expectedRefs(src, prev, Math.max(prev, pos), c.owner), [], 'the position skips nothing meant for the subscriber');
  if (atEnd) assert.deepEqual(expectedRefs(src, prev, src.log.length, c.owner), [], `${c.owner ?? 'admin'} is caught up`);
  return prev;
}

/** Runs the tail and lets catch-ups finish, until every client has taken everything. */
async function quiesce(feeds: ChangeFeed<T, W>[], clients: Client[]): Promise<void> {
  for (const c of clients) {
    if (c.sink.full) {
      c.sink.full = false;
      c.sub.drained();
    }
  }
  for (let i = 0; i < 12; i++) {
    for (const f of feeds) await f.step();
    await settle();
  }
}

const feedOf = (src: FakeFeed, opts: ConstructorParameters<typeof ChangeFeed<T, W>>[1] = {}) => new ChangeFeed<T, W>(src, { autoRun: false, batch: 5, ...opts });

describe('change feed: fan-out', { timeout: 20_000 }, () => {
  it('loads a batch once and gives admins everything, users only their own tasks and no workers', async () => {
    const src = new FakeFeed();
    const feed = feedOf(src, { batch: 100 });
    const admin = await open(feed, null, null);
    const alice = await open(feed, 'alice', null, 'a');
    const bob = await open(feed, 'bob', null, 'b');
    src.commitTask('t1', 'alice');
    src.commitTask('t2', 'bob');
    src.commitTask('t1', 'alice');
    src.commitWorker('w1');
    const loadsBefore = src.loads;
    await feed.step();
    assert.equal(src.loads - loadsBefore, 1, 'one load per batch, whoever listens');
    const last = (c: Client) => c.sink.events[c.sink.events.length - 1] as Extract<Ev, { type: 'changes' }>;
    assert.deepEqual(last(admin).tasks.map((t) => [t.id, t.v]), [['t1', 2], ['t2', 1]], 'each task once, with its current summary');
    assert.deepEqual(last(admin).workers.map((w) => w.id), ['w1']);
    assert.deepEqual(last(alice).tasks.map((t) => t.id), ['t1']);
    assert.deepEqual(last(alice).workers, []);
    assert.deepEqual(last(bob).tasks.map((t) => t.id), ['t2']);
    // A batch with nothing for bob sends bob nothing.
    src.commitTask('t1', 'alice');
    await feed.step();
    assert.equal(bob.sink.events.length, 2);
    for (const c of [admin, alice, bob]) checkExact(src, c, true);
    assert.equal(src.index(bob.sub.position), src.log.length, 'bob\'s position moved over alice\'s change');
  });

  it('a resume inside the ring is served from memory, from the exact change on', async () => {
    const src = new FakeFeed();
    const feed = feedOf(src, { batch: 3 });
    const first = await open(feed, null, null);
    for (let i = 0; i < 7; i++) src.commitTask(`t${i}`, 'alice');
    await feed.step();
    const mid = src.log[3]!.cursor; // inside the second batch
    const readsBefore = src.reads;
    const again = await open(feed, 'alice', mid, 'x');
    await settle();
    assert.equal(src.reads, readsBefore, 'no store read for a cursor the ring holds');
    checkExact(src, again, true);
    checkExact(src, first, true);
    assert.deepEqual((again.sink.events[1] as Extract<Ev, { type: 'changes' }>).tasks.map((t) => t.id), ['t4', 't5']);
  });
});

describe('change feed: catch-up and rejoin', { timeout: 60_000 }, () => {
  it('an old cursor catches up from the store with its filter, then rejoins the tail without a gap or a repeat', async () => {
    const src = new FakeFeed(rng(1));
    const feed = feedOf(src, { batch: 4, ringMaxChanges: 8 });
    const live = await open(feed, null, null);
    for (let i = 0; i < 30; i++) src.commitTask(`t${i % 7}`, i % 7 < 4 ? 'alice' : 'bob');
    await quiesce([feed], [live]);
    const old = src.log[2]!.cursor; // long evicted from the ring
    const alice = await open(feed, 'alice', old, 'a');
    const admin = await open(feed, null, old, 'b');
    // Commits keep coming while they catch up.
    for (let i = 0; i < 20; i++) {
      src.commitTask(`t${i % 5}`, i % 5 < 4 ? 'alice' : 'bob');
      if (i % 3 === 0) await feed.step();
      await settle(3);
    }
    await quiesce([feed], [live, alice, admin]);
    for (const c of [live, alice, admin]) checkExact(src, c, true);
  });

  it('a head cursor from another server joins on an idle feed (no change to turn it into a change cursor)', async () => {
    const src = new FakeFeed();
    const a = feedOf(src);
    const b = feedOf(src);
    const onA = await open(a, 'alice', null);
    await open(b, null, null); // b's tail runs
    const foreignHead = onA.sink.events[0]!.cursor;
    const onB = await open(b, 'alice', foreignHead);
    await quiesce([a, b], [onB]);
    src.commitTask('t1', 'alice');
    await quiesce([a, b], [onB]);
    checkExact(src, onB, true);
    assert.equal(onB.sink.events.length, 2, 'hello, then the one change');
  });

  it('a head cursor from another server joins on a busy feed through the probe (a user with no change of their own)', async () => {
    const src = new FakeFeed(rng(7));
    const a = feedOf(src, { batch: 4 });
    const b = feedOf(src, { batch: 4 });
    const onA = await open(a, 'carol', null);
    await open(b, null, null);
    for (let i = 0; i < 12; i++) src.commitTask(`t${i}`, 'bob');
    const onB = await open(b, 'carol', onA.sink.events[0]!.cursor);
    for (let round = 0; round < 6; round++) {
      src.commitTask(`u${round}`, 'bob');
      await b.step();
      await settle();
    }
    // Joined although no change of carol's came: the feed is busy, so only the probe could align her.
    const readsBefore = src.reads;
    src.commitTask('more', 'bob');
    await b.step();
    await settle();
    assert.equal(src.reads - readsBefore, 1, 'once joined, the subscriber costs no reads of its own (only the tail read)');
    src.commitTask('mine', 'carol');
    await quiesce([a, b], [onB]);
    checkExact(src, onB, true);
    assert.deepEqual(onB.sink.events.slice(1).flatMap((e) => (e.type === 'changes' ? e.tasks.map((t) => t.id) : [])), ['mine']);
  });

  it('a head cursor from a server that is ahead: what lies before it is not sent again', async () => {
    const src = new FakeFeed();
    const a = feedOf(src);
    const b = feedOf(src);
    await open(b, null, null); // b's tail starts at the head, then lags
    src.commitTask('t1', 'alice');
    const onA = await open(a, 'alice', null); // a's head is after t1
    const onB = await open(b, 'alice', onA.sink.events[0]!.cursor);
    await quiesce([a, b], [onB]);
    assert.deepEqual(onB.sink.events.map((e) => e.type), ['hello'], 't1 lies before the cursor: not sent');
    src.commitTask('t1', 'alice');
    await quiesce([a, b], [onB]);
    checkExact(src, onB, true);
    assert.equal(onB.sink.events.length, 2);
  });

  it('an expired cursor: hello, then reset to a live position', async () => {
    const src = new FakeFeed();
    const feed = feedOf(src);
    for (let i = 0; i < 5; i++) src.commitTask(`t${i}`, 'alice');
    const old = src.log[1]!.cursor;
    src.prune(3);
    const c = await open(feed, 'alice', old);
    assert.deepEqual(c.sink.events.map((e) => e.type), ['hello', 'reset']);
    src.commitTask('t9', 'alice');
    await feed.step();
    assert.deepEqual(c.sink.events.map((e) => e.type), ['hello', 'reset', 'changes']);
    checkExact(src, c, true);
  });

  it('a malformed cursor is refused before anything is sent, and frees its slot', async () => {
    const src = new FakeFeed();
    const feed = feedOf(src, { maxPerKey: 1 });
    const sink = new Sink();
    await assert.rejects(feed.subscribe({ owner: null, key: 'k', cursor: 'nonsense', sink }), (e: unknown) => e instanceof InvalidInputError && e.field === 'cursor');
    assert.equal(sink.events.length, 0);
    assert.equal(feed.size, 0);
    await open(feed, null, null, 'k'); // the slot was released
  });

  it('the tail\'s own cursor expiring resets every subscriber', async () => {
    const src = new FakeFeed();
    const feed = feedOf(src);
    const c = await open(feed, null, null);
    src.commitTask('t1', 'a');
    await feed.step();
    for (let i = 0; i < 3; i++) src.commitTask(`t${i}`, 'a');
    src.prune(src.log.length); // the tail stalled past the retention
    await feed.step();
    assert.equal(c.sink.events[c.sink.events.length - 1]!.type, 'reset');
    src.commitTask('t9', 'a');
    await feed.step();
    checkExact(src, c, true);
  });
});

describe('change feed: slow sockets', { timeout: 60_000 }, () => {
  it('a full socket gets nothing more (bounded memory) and catches up after drain', async () => {
    const src = new FakeFeed();
    const feed = feedOf(src, { batch: 3, ringMaxChanges: 6 });
    const slow = await open(feed, null, null);
    const fast = await open(feed, null, null, 'f');
    slow.sink.full = true;
    src.commitTask('t0', 'a');
    await feed.step();
    const taken = slow.sink.events.length; // the event that filled it was taken
    for (let i = 0; i < 40; i++) {
      src.commitTask(`t${i % 9}`, 'a');
      if (i % 2) await feed.step();
    }
    await feed.step();
    assert.equal(slow.sink.events.length, taken, 'nothing is sent or queued for a blocked subscriber');
    assert.ok(feed.held <= 6 + 3, `the ring stays bounded (${feed.held})`);
    slow.sink.full = false;
    slow.sub.drained(); // evicted from the ring by now: from the store
    await quiesce([feed], [slow, fast]);
    checkExact(src, slow, true);
    checkExact(src, fast, true);
  });
});

describe('change feed: limits', { timeout: 60_000 }, () => {
  it('at most N streams per token and M per server', async () => {
    const src = new FakeFeed();
    const feed = feedOf(src, { maxPerKey: 2, maxTotal: 3 });
    const a1 = await open(feed, null, null, 'a');
    await open(feed, null, null, 'a');
    await assert.rejects(open(feed, null, null, 'a'), (e: unknown) => e instanceof StreamCapError && e.scope === 'token');
    await open(feed, null, null, 'b');
    await assert.rejects(open(feed, null, null, 'c'), (e: unknown) => e instanceof StreamCapError && e.scope === 'server');
    a1.sub.close();
    await open(feed, null, null, 'c');
    assert.equal(feed.size, 3);
  });
});

describe('change feed: random interleavings (two servers, one store)', { timeout: 60_000 }, () => {
  for (const seed of Array.from({ length: Number(process.env.SEEDS ?? 0) || 8 }, (_, i) => 11 + i)) {
    it(`seed ${seed}: every subscriber gets exactly its changes, across blocks, resumes, evictions and servers`, async () => {
      const rand = rng(seed);
      const src = new FakeFeed(rand);
      const feeds = [feedOf(src, { batch: 4, ringMaxChanges: 10 }), feedOf(src, { batch: 6, ringMaxChanges: 20 })];
      const owners = ['alice', 'bob', 'carol', null] as const;
      const clients: Client[] = [];
      const closed: Client[] = [];
      const pick = <X>(xs: readonly X[]) => xs[Math.floor(rand() * xs.length)]!;
      for (let i = 0; i < 4; i++) clients.push(await open(pick(feeds), pick(owners), null, `k${i}`));
      for (let step = 0; step < 300; step++) {
        const r = rand();
        if (r < 0.35) {
          const n = Math.floor(rand() * 12);
          src.commitTask(`t${n}`, ['alice', 'bob', 'carol'][n % 3]!);
        }
        else if (r < 0.4) src.commitWorker(`w${Math.floor(rand() * 3)}`);
        else if (r < 0.6) void pick(feeds).step();
        else if (r < 0.68) {
          const c = pick(clients);
          c.sink.full = !c.sink.full;
          if (!c.sink.full) c.sub.drained();
        } else if (r < 0.74 && clients.length) {
          // Disconnect and resume (on either server) from the last id the client saw, or its keepalive position.
          const i = Math.floor(rand() * clients.length);
          const c = clients[i]!;
          checkExact(src, c, false);
          c.sub.close();
          closed.push(c);
          const evs = c.sink.events;
          const resumeAt = rand() < 0.5 ? evs[evs.length - 1]!.cursor : c.sub.position;
          clients[i] = await open(pick(feeds), c.owner, resumeAt, `r${step}`);
        } else if (r < 0.76) {
          clients.push(await open(pick(feeds), pick(owners), null, `n${step}`));
        }
        await settle(Math.floor(rand() * 4));
      }
      await quiesce(feeds, clients);
      for (const c of closed) checkExact(src, c, false);
      for (const c of clients) {
        assert.equal(c.sink.failed, null);
        checkExact(src, c, true);
      }
    });
  }
});
