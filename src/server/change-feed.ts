/**
 * The server's one tail of the store's change feed (store/feed.ts), fanned
 * out to every live stream (routes/stream.ts), filtered per subscriber.
 *
 * Why one tail: N browsers each polling the store would cost N reads per
 * poll. Here the tail reads `readChanges` after its cursor when a store
 * signal arrives and at least every POLL_MS while anyone listens, loads the
 * task summaries (and worker views) of a batch once, and hands each
 * subscriber its share: a user only their own tasks and no workers, an admin
 * everything. The tail keeps the last RING_MAX_CHANGES changes (with what was
 * loaded for them) so that a subscriber a little behind is served from memory.
 *
 * Cursors are opaque (store/feed.ts): this file only ever compares them for
 * equality. What it relies on: a read returns changes in cursor order, every
 * change is returned exactly once to a reader that resumes from the cursor of
 * the last change it saw, and a change visible to one read is visible to every
 * later read.
 *
 * Subscriber modes:
 *   live       its position is the tail's: each batch is delivered as read;
 *   blocked    its socket is full: it is skipped (holds nothing here) until
 *              drained(), then resumes from its position, from the ring if the
 *              position is still there, else from the store;
 *   catch-up   its position is not in the ring (a resume from an older cursor,
 *              one from another server, a long block): it reads the store by
 *              itself, with its owner filter, page by page, then rejoins the
 *              tail where that is provably exact (alignment, below).
 * Every position a subscriber takes is one up to which it has been sent every
 * change meant for it, and none after: so any position it reports (the SSE
 * event id, the keepalive id) resumes without a gap or a repeat.
 *
 * Alignment of a catch-up subscriber at position P (not in the ring) after
 * a short page (it read everything visible then), with S0 = the tail's
 * position when that read started:
 *   1. P is in the ring, or is the tail's position: replay the ring after P.
 *   2. else wait for one tail read that started after the page was read and
 *      reached the end of the feed. Then, if P is the cursor of a change (one
 *      this subscriber read), P is in the ring unless it is older than the
 *      ring's start, so P < S0: every change of this subscriber in (P, S0]
 *      was visible before its read began and would have been returned; there
 *      is none, and it rejoins at S0, replaying the ring after S0.
 *   3. P is not known to be a change cursor (a head handed out by some
 *      server): rejoin at S0 only if that tail read started from S0 and found
 *      nothing (an idle feed: nothing lies between P and S0 either way). On a
 *      busy feed, the next catch-up page turns P into a change cursor: a user
 *      subscriber first reads one unfiltered page (a probe) before its own
 *      filtered page, and when its own page is empty it moves P to the probe's
 *      last change (none of its changes lie before it).
 *
 * No I/O and no timers in this class except through FeedSource and the
 * injected sleep: test/server/change-feed.test.ts drives it with an in-memory
 * feed.
 */
import { CursorExpiredError, UnavailableError } from '../core/errors.js';
import type { Change, ChangePage } from '../store/feed.js';

/** Changes one tail read (and one catch-up page) asks for; a batch's summaries are loaded in one call (the store takes up to 1,000 ids). */
export const FEED_BATCH = 500;
/** The tail reads at least this often while anyone listens. */
export const POLL_MS = 250;
/** The tail reads no more often than this (store signals come per change; this batches them). */
export const MIN_GAP_MS = 15;
/**
 * While store signals keep coming (one within the last POLL_MS), the tail also
 * reads this often without one: on PostgreSQL a change signalled at its commit
 * may not be readable yet (an older transaction still runs, store/feed.ts), and
 * the next signal may never come (the burst ended).
 */
export const ACTIVE_POLL_MS = 30;
/** Changes kept in memory with their summaries, for subscribers a little behind. */
export const RING_MAX_CHANGES = 5_000;
/** Pages one tail step reads at most before yielding (a backlog is read over several steps). */
const MAX_PAGES_PER_STEP = 8;
/** After a failed tail read, wait this long before the next. */
const ERROR_BACKOFF_MS = 1000;

export const MAX_STREAMS_PER_TOKEN = 16;
export const MAX_STREAMS_PER_SERVER = 1000;

export interface FeedItem {
  id: string;
}

/** What the feed needs from the store (and the worker views): three calls. */
export interface FeedSource<T extends FeedItem, W extends FeedItem> {
  head(): Promise<string>;
  read(after: string, limit: number, owner?: string): Promise<ChangePage>;
  /** The current summaries of these tasks and views of these workers (unknown ids left out). */
  load(taskIds: readonly string[], workerIds: readonly string[]): Promise<{ tasks: T[]; workers: W[] }>;
}

export type FeedEvent<T, W> =
  | { type: 'hello'; cursor: string }
  | { type: 'changes'; cursor: string; tasks: T[]; workers: W[] }
  | { type: 'reset'; cursor: string; reason: string };

export interface FeedSink<T, W> {
  /** Takes one event; false when the connection's buffer is full: call drained() once it has room. */
  send(ev: FeedEvent<T, W>): boolean;
  /** The subscriber cannot go on (its catch-up read failed): end the stream; the client resumes from its last id. */
  fail(err: unknown): void;
}

export interface SubscribeOptions<T, W> {
  /** null: an admin (every task and the workers); else only this owner's tasks, no workers. */
  owner: string | null;
  /** What the per-key cap counts (the token id). */
  key: string;
  /** Where to start: after this cursor, or (null) at the tail's position. */
  cursor: string | null;
  sink: FeedSink<T, W>;
}

export interface Subscription {
  /** The position up to which this subscriber has everything meant for it (see the file comment). */
  readonly position: string;
  /** The socket took what was buffered: go on. */
  drained(): void;
  close(): void;
}

/** Too many streams: `scope` says which cap (the route answers 429 for a token, 503 for the server). */
export class StreamCapError extends Error {
  constructor(
    readonly scope: 'token' | 'server',
    readonly max: number,
  ) {
    super(scope === 'token' ? `too many open streams for this token (at most ${max}); close one (another tab?) and retry` : `this server has its maximum of ${max} open streams; retry later or use another server`);
  }
}

export interface FeedOptions {
  batch?: number;
  ringMaxChanges?: number;
  maxPerKey?: number;
  maxTotal?: number;
  /** Resolves after `ms`, or earlier when `wake` is called (driver only; tests call step()). */
  sleep?: (ms: number, wake: AbortSignal) => Promise<void>;
  /** Failed tail reads (the driver retries). */
  onError?: (err: unknown) => void;
  /** false: no driver loop; the caller runs step() (tests). */
  autoRun?: boolean;
}

interface Batch<T, W> {
  seq: number;
  /** The tail's position before this batch. */
  after: string;
  /** The cursor of its last change. */
  cursor: string;
  changes: Change[];
  tasks: Map<string, T>;
  workers: Map<string, W>;
  /** Whole-batch events by filter key ('*' or the owner), built once; null: nothing for that filter. */
  events: Map<string, FeedEvent<T, W> | null>;
}

/** A position in the ring: before change 0 of `batch` (i = -1) or right after change i. */
interface Loc<T, W> {
  batch: Batch<T, W>;
  i: number;
  isChange: boolean;
}

interface TailRead {
  /** 1, 2, 3, ... in the order reads start. */
  no: number;
  from: string;
  empty: boolean;
  /** Fewer changes than asked: the read reached the end of what was visible. */
  short: boolean;
}

type Mode = 'live' | 'blocked' | 'catchup' | 'closed';

class Sub<T extends FeedItem, W extends FeedItem> implements Subscription {
  mode: Mode = 'catchup';
  pos = '';
  /** pos is the cursor of a change (not a head): see alignment, case 2. */
  posIsChange = false;
  /** Bumped when the feed resets this subscriber: a catch-up loop of an older generation stops. */
  gen = 0;
  constructor(
    readonly feed: ChangeFeed<T, W>,
    readonly owner: string | null,
    readonly key: string,
    readonly sink: FeedSink<T, W>,
  ) {}
  get position(): string {
    return this.pos;
  }
  drained(): void {
    this.feed.onDrained(this);
  }
  close(): void {
    this.feed.remove(this);
  }
}

export class ChangeFeed<T extends FeedItem, W extends FeedItem> {
  private readonly batchSize: number;
  private readonly ringMax: number;
  private readonly maxPerKey: number;
  private readonly maxTotal: number;
  private readonly subs = new Set<Sub<T, W>>();
  private readonly perKey = new Map<string, number>();
  /** Reserved by subscribe() calls still validating (they count against the caps). */
  private pending = 0;

  /** The tail's position; null while it is not running. */
  private pos: string | null = null;
  private posIsChange = false;
  private starting: Promise<void> | null = null;
  private ring: Batch<T, W>[] = [];
  private ringChanges = 0;
  private readonly index = new Map<string, Loc<T, W>>();
  private seq = 0;
  private readsStarted = 0;
  private readonly readWaiters = new Set<{ after: number; resolve: (r: TailRead | null) => void }>();
  private stepping: Promise<void> | null = null;

  private running = false;
  private stopped = false;
  private wake = new AbortController();
  private lastReadAt = -Infinity;
  private lastPokeAt = -Infinity;

  constructor(
    private readonly source: FeedSource<T, W>,
    private readonly opts: FeedOptions = {},
  ) {
    this.batchSize = opts.batch ?? FEED_BATCH;
    this.ringMax = opts.ringMaxChanges ?? RING_MAX_CHANGES;
    this.maxPerKey = opts.maxPerKey ?? MAX_STREAMS_PER_TOKEN;
    this.maxTotal = opts.maxTotal ?? MAX_STREAMS_PER_SERVER;
  }

  /** Streams open now (subscribed, or still validating their cursor). */
  get size(): number {
    return this.subs.size + this.pending;
  }

  /** Changes held in the ring now. */
  get held(): number {
    return this.ringChanges;
  }

  /**
   * Opens a subscription: checks the caps, validates a resume cursor (throws
   * the store's InvalidInputError for a malformed one, before anything is
   * sent), then sends `hello` and starts delivering. An expired cursor is not
   * an error: the subscriber gets `reset` after `hello`.
   */
  async subscribe(o: SubscribeOptions<T, W>): Promise<Subscription> {
    if (this.stopped) throw new UnavailableError('the server is shutting down');
    if (this.size >= this.maxTotal) throw new StreamCapError('server', this.maxTotal);
    const n = this.perKey.get(o.key) ?? 0;
    if (n >= this.maxPerKey) throw new StreamCapError('token', this.maxPerKey);
    this.perKey.set(o.key, n + 1);
    this.pending++;
    const sub = new Sub(this, o.owner, o.key, o.sink);
    let added = false;
    try {
      await this.ensureTail();
      let expired = false;
      if (o.cursor !== null && !this.replayable(o.cursor)) {
        try {
          await this.source.read(o.cursor, 1, o.owner ?? undefined);
        } catch (err) {
          if (!(err instanceof CursorExpiredError)) throw err;
          expired = true;
        }
      }
      if (this.stopped) throw new UnavailableError('the server is shutting down');
      await this.ensureTail(); // the tail may have stopped while the cursor was read (every other stream closed)
      this.pending--;
      this.subs.add(sub);
      added = true;
      this.ensureRunning();
      if (o.cursor === null) {
        this.setPos(sub, this.pos!, this.posIsChange);
        sub.mode = 'live';
        this.send(sub, { type: 'hello', cursor: sub.pos });
        return sub;
      }
      sub.pos = o.cursor;
      sub.posIsChange = this.index.get(o.cursor)?.isChange ?? (o.cursor === this.pos && this.posIsChange);
      this.send(sub, { type: 'hello', cursor: o.cursor });
      if (expired) this.resetSub(sub, 'the cursor is older than the changes the store keeps');
      else if (sub.mode !== 'blocked') this.resume(sub); // blocked already: drained() resumes
      return sub;
    } catch (err) {
      if (!added) {
        this.pending--;
        this.release(o.key);
      } else this.remove(sub);
      throw err;
    }
  }

  /** One tail round: reads until the feed's end (or MAX_PAGES_PER_STEP pages), fanning out each batch. Serialized. */
  async step(): Promise<void> {
    while (this.stepping) await this.stepping;
    this.stepping = this.doStep();
    try {
      await this.stepping;
    } finally {
      this.stepping = null;
    }
  }

  /** A store signal: read soon (the driver honours MIN_GAP_MS). */
  poke(): void {
    this.lastPokeAt = performance.now();
    // Guarded: abort() builds its default DOMException reason on every call, aborted or not (measured, issue 9:
    // 2-5 % of the server's CPU in a drain, one poke per committed write, with no stream open).
    if (!this.wake.signal.aborted) this.wake.abort();
  }

  /** Ends the driver; subscriptions are left to their owners to close. */
  stop(): void {
    this.stopped = true;
    this.wake.abort();
    for (const w of this.readWaiters) w.resolve(null);
    this.readWaiters.clear();
  }

  // ---- the tail

  private async ensureTail(): Promise<void> {
    while (this.pos === null) {
      this.starting ??= (async () => {
        try {
          const head = await this.source.head();
          if (this.pos === null) {
            this.pos = head;
            this.posIsChange = false;
          }
        } finally {
          this.starting = null;
        }
      })();
      await this.starting;
    }
  }

  private ensureRunning(): void {
    if (this.running || this.stopped || this.opts.autoRun === false) return;
    this.running = true;
    void this.drive();
  }

  private async drive(): Promise<void> {
    const sleep = this.opts.sleep ?? defaultSleep;
    let failing = false;
    try {
      while (!this.stopped && this.subs.size + this.pending > 0) {
        const gap = MIN_GAP_MS - (performance.now() - this.lastReadAt);
        if (gap > 0) await sleep(gap, new AbortController().signal);
        this.wake = new AbortController();
        this.lastReadAt = performance.now();
        try {
          await this.step();
          failing = false;
        } catch (err) {
          if (!failing) this.opts.onError?.(err);
          failing = true;
        }
        if (this.stopped || this.subs.size + this.pending === 0) break;
        if (failing) await sleep(ERROR_BACKOFF_MS, new AbortController().signal);
        else if (!this.wake.signal.aborted) await sleep(performance.now() - this.lastPokeAt < POLL_MS ? ACTIVE_POLL_MS : POLL_MS, this.wake.signal);
      }
    } finally {
      this.running = false;
      // Nobody listens: forget the position and the ring (a later first subscriber starts at the head).
      if (this.subs.size + this.pending === 0 && !this.stepping) this.clearTail();
      else if (!this.stopped && this.subs.size + this.pending > 0) this.ensureRunning();
    }
  }

  private clearTail(): void {
    this.pos = null;
    this.ring = [];
    this.ringChanges = 0;
    this.index.clear();
  }

  private async doStep(): Promise<void> {
    await this.ensureTail();
    for (let pages = 0; pages < MAX_PAGES_PER_STEP; pages++) {
      const no = ++this.readsStarted;
      const from = this.pos!;
      let page: ChangePage;
      try {
        page = await this.source.read(from, this.batchSize);
      } catch (err) {
        if (err instanceof CursorExpiredError) return this.resetTail();
        throw err;
      }
      const empty = page.changes.length === 0;
      if (!empty) {
        const loaded = await this.loadFor(page.changes, true);
        if (this.pos !== from) return; // cleared meanwhile (nobody listens any more)
        this.append(from, page.changes, loaded);
      }
      this.readDone({ no, from, empty, short: page.changes.length < this.batchSize });
      if (page.changes.length < this.batchSize) return;
    }
  }

  private async loadFor(changes: readonly Change[], workers: boolean): Promise<{ tasks: Map<string, T>; workers: Map<string, W> }> {
    const taskIds = new Set<string>();
    const workerIds = new Set<string>();
    for (const c of changes) (c.topic === 'task' ? taskIds : workerIds).add(c.ref);
    const got = await this.source.load([...taskIds], workers ? [...workerIds] : []);
    return { tasks: new Map(got.tasks.map((t) => [t.id, t])), workers: new Map(got.workers.map((w) => [w.id, w])) };
  }

  private append(from: string, changes: Change[], loaded: { tasks: Map<string, T>; workers: Map<string, W> }): void {
    const batch: Batch<T, W> = { seq: ++this.seq, after: from, cursor: changes[changes.length - 1]!.cursor, changes, ...loaded, events: new Map() };
    this.ring.push(batch);
    this.ringChanges += changes.length;
    if (!this.index.has(from)) this.index.set(from, { batch, i: -1, isChange: this.posIsChange });
    changes.forEach((c, i) => this.index.set(c.cursor, { batch, i, isChange: true }));
    while (this.ringChanges > this.ringMax && this.ring.length > 1) this.evict();
    this.pos = batch.cursor;
    this.posIsChange = true;
    for (const sub of this.subs) if (sub.mode === 'live' && sub.pos === from) this.deliver(sub, batch, -1);
  }

  private evict(): void {
    const old = this.ring.shift()!;
    this.ringChanges -= old.changes.length;
    const a = this.index.get(old.after);
    if (a?.batch === old) this.index.delete(old.after);
    for (const c of old.changes) if (this.index.get(c.cursor)?.batch === old) this.index.delete(c.cursor);
    // The new first batch starts where the old one ended (a change cursor): still a position the ring serves.
    const first = this.ring[0]!;
    if (!this.index.has(first.after)) this.index.set(first.after, { batch: first, i: -1, isChange: true });
  }

  private readDone(r: TailRead): void {
    if (!r.short) return;
    for (const w of [...this.readWaiters]) {
      if (r.no > w.after) {
        this.readWaiters.delete(w);
        w.resolve(r);
      }
    }
  }

  /** The next tail read that starts after read number `after` began and reaches the feed's end (null: the feed stopped or reset). */
  private nextFullRead(after: number): Promise<TailRead | null> {
    return new Promise((resolve) => this.readWaiters.add({ after, resolve }));
  }

  /** The tail's own cursor expired (it stalled longer than the store keeps changes): everyone starts over at the head. */
  private async resetTail(): Promise<void> {
    const head = await this.source.head();
    this.clearTail();
    this.pos = head;
    this.posIsChange = false;
    for (const w of [...this.readWaiters]) w.resolve(null);
    this.readWaiters.clear();
    for (const sub of this.subs) this.resetSub(sub, 'this server fell behind the changes the store keeps');
  }

  // ---- subscribers

  /** After this position the subscriber can be served from memory. */
  private replayable(c: string): boolean {
    return c === this.pos || this.index.has(c);
  }

  private setPos(sub: Sub<T, W>, pos: string, isChange: boolean): void {
    sub.pos = pos;
    sub.posIsChange = isChange;
  }

  /** Sends; false (and the subscriber blocked) when its socket is full. */
  private send(sub: Sub<T, W>, ev: FeedEvent<T, W>): boolean {
    if (sub.mode === 'closed') return false;
    if (sub.sink.send(ev)) return true;
    // (The sink may have closed the subscriber while sending.)
    if ((sub.mode as Mode) !== 'closed') sub.mode = 'blocked';
    return false;
  }

  private resetSub(sub: Sub<T, W>, reason: string): void {
    sub.gen++;
    this.setPos(sub, this.pos!, this.posIsChange);
    sub.mode = 'live';
    this.send(sub, { type: 'reset', cursor: sub.pos, reason });
  }

  /** Continue from sub.pos: from the ring if it is there, else from the store. */
  private resume(sub: Sub<T, W>): void {
    if (this.replayable(sub.pos)) this.replay(sub);
    else void this.catchUp(sub, sub.gen);
  }

  onDrained(sub: Sub<T, W>): void {
    if (sub.mode !== 'blocked') return;
    sub.mode = 'catchup';
    this.resume(sub);
  }

  remove(sub: Sub<T, W>): void {
    if (sub.mode === 'closed') return;
    sub.mode = 'closed';
    sub.gen++;
    if (this.subs.delete(sub)) this.release(sub.key);
    if (this.subs.size + this.pending === 0) this.wake.abort(); // let the driver see it may stop
  }

  private release(key: string): void {
    const n = (this.perKey.get(key) ?? 1) - 1;
    if (n <= 0) this.perKey.delete(key);
    else this.perKey.set(key, n);
  }

  /** Serves the ring after sub.pos, then makes the subscriber live; stops early when its socket fills. Synchronous. */
  private replay(sub: Sub<T, W>): void {
    if (sub.pos !== this.pos) {
      const loc = this.index.get(sub.pos)!;
      const start = loc.batch.seq - this.ring[0]!.seq;
      for (let k = start; k < this.ring.length; k++) {
        if (!this.deliver(sub, this.ring[k]!, k === start ? loc.i : -1)) return;
      }
    }
    sub.mode = 'live';
  }

  /**
   * Sends the subscriber its share of `batch` after change `i` (-1: all of
   * it) and moves it to the batch's end. False when its socket filled (it is
   * blocked at the batch's end, the event having been taken).
   */
  private deliver(sub: Sub<T, W>, batch: Batch<T, W>, i: number): boolean {
    const ev = i === -1 ? this.wholeEvent(batch, sub.owner) : this.eventOf(batch.cursor, batch.changes.slice(i + 1), batch, sub.owner);
    this.setPos(sub, batch.cursor, true);
    return ev === null || this.send(sub, ev);
  }

  private wholeEvent(batch: Batch<T, W>, owner: string | null): FeedEvent<T, W> | null {
    const k = owner ?? '*';
    if (!batch.events.has(k)) batch.events.set(k, this.eventOf(batch.cursor, batch.changes, batch, owner));
    return batch.events.get(k)!;
  }

  /** The event for `owner` (null: admin) of these changes: each task once, in first-change order; workers only for admins. */
  private eventOf(cursor: string, changes: readonly Change[], items: { tasks: Map<string, T>; workers: Map<string, W> }, owner: string | null): FeedEvent<T, W> | null {
    const tasks: T[] = [];
    const workers: W[] = [];
    const seen = new Set<string>();
    for (const c of changes) {
      if (c.topic === 'task') {
        if (owner !== null && c.owner !== owner) continue;
        const key = `t${c.ref}`;
        const t = items.tasks.get(c.ref);
        if (t && !seen.has(key)) tasks.push(t);
        seen.add(key);
      } else if (owner === null) {
        const key = `w${c.ref}`;
        const w = items.workers.get(c.ref);
        if (w && !seen.has(key)) workers.push(w);
        seen.add(key);
      }
    }
    if (tasks.length === 0 && workers.length === 0) return null;
    return { type: 'changes', cursor, tasks, workers };
  }

  /** Reads the store from sub.pos with the subscriber's filter until it can rejoin the tail (file comment: alignment). */
  private async catchUp(sub: Sub<T, W>, gen: number): Promise<void> {
    const stale = () => sub.gen !== gen || sub.mode === 'closed' || this.stopped;
    sub.mode = 'catchup';
    try {
      for (;;) {
        if (stale()) return;
        if (this.replayable(sub.pos)) return this.replay(sub);
        await this.ensureTail();
        const s0 = this.pos!;
        const from = sub.pos;
        const owner = sub.owner ?? undefined;
        // A probe: the last change after `from` whoever it is for (case 3 of the alignment).
        const probe = owner !== undefined && !sub.posIsChange ? await this.source.read(from, this.batchSize) : null;
        const page = await this.source.read(from, this.batchSize, owner);
        const readNo = this.readsStarted;
        if (stale()) return;
        if (page.changes.length > 0) {
          const loaded = await this.loadFor(page.changes, sub.owner === null);
          if (stale()) return;
          const last = page.changes[page.changes.length - 1]!.cursor;
          const ev = this.eventOf(last, page.changes, loaded, sub.owner);
          this.setPos(sub, last, true);
          if (ev && !this.send(sub, ev)) return; // blocked: drained() resumes
          if (page.changes.length === this.batchSize) continue;
        } else if (probe && probe.changes.length > 0) {
          this.setPos(sub, probe.changes[probe.changes.length - 1]!.cursor, true);
        }
        if (this.replayable(sub.pos)) return this.replay(sub);
        const r = await this.nextFullRead(readNo);
        if (stale() || r === null) return;
        if (this.replayable(sub.pos)) return this.replay(sub);
        if (sub.posIsChange ? this.replayable(s0) : r.from === s0 && r.empty && s0 === this.pos) {
          this.setPos(sub, s0, this.index.get(s0)?.isChange ?? this.posIsChange);
          return this.replay(sub);
        }
      }
    } catch (err) {
      if (stale()) return;
      if (err instanceof CursorExpiredError) return this.resetSub(sub, 'the cursor is older than the changes the store keeps');
      sub.sink.fail(err);
    }
  }
}

function defaultSleep(ms: number, wake: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (wake.aborted) return resolve();
    const done = () => {
      clearTimeout(t);
      wake.removeEventListener('abort', done);
      resolve();
    };
    const t = setTimeout(done, ms);
    wake.addEventListener('abort', done, { once: true });
  });
}
