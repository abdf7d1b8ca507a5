/**
 * For the stream end-to-end tests: a reader of GET /v1/stream through the
 * typed client (src/client), and the exactness check against the store's own
 * change feed. Not a test file itself.
 */
import assert from 'node:assert/strict';
import { DroverClient, type EventStream } from '../../src/client/client.js';
import type { StreamEvent, TaskSummary } from '../../src/client/types.js';
import type { FeedStore } from '../../src/store/feed.js';

export class StreamReader {
  readonly events: Array<StreamEvent & { receivedAt: number }> = [];
  ended = false;
  private waiters = new Set<() => void>();
  private readonly done: Promise<void>;

  private constructor(
    readonly stream: EventStream,
    readonly start: string | null,
  ) {
    this.done = (async () => {
      try {
        for await (const ev of stream) {
          this.events.push({ ...ev, receivedAt: performance.now() });
          this.wakeAll();
        }
      } finally {
        this.ended = true;
        this.wakeAll();
      }
    })();
  }

  static async open(url: string, token: string, cursor?: string): Promise<StreamReader> {
    const s = await new DroverClient({ url, token }).stream(cursor !== undefined ? { cursor } : {});
    return new StreamReader(s, cursor ?? null);
  }

  private wakeAll(): void {
    for (const w of this.waiters) w();
  }

  /** Where a new stream resumes (the last id, keepalives included). */
  get lastEventId(): string {
    return this.stream.lastEventId!;
  }

  /** Every task summary received, in order. */
  tasks(): Array<TaskSummary & { receivedAt: number }> {
    return this.events.flatMap((e) => (e.type === 'changes' ? e.tasks.map((t) => ({ ...t, receivedAt: e.receivedAt })) : []));
  }

  /** The latest summary received of each task. */
  latest(): Map<string, TaskSummary> {
    return new Map(this.tasks().map((t) => [t.id, t]));
  }

  /** Resolves once `pred` holds (checked on every event), or rejects after `timeoutMs`. */
  async until(what: string, pred: (r: StreamReader) => boolean, timeoutMs = 15_000): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    while (!pred(this)) {
      if (this.ended) throw new Error(`stream ended before ${what}`);
      const left = deadline - performance.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what}; got ${JSON.stringify(this.events.map((e) => [e.type, e.type === 'changes' ? e.tasks.map((t) => `${t.id.slice(-4)}:${t.state}`) : e.cursor]))}`);
      await new Promise<void>((resolve) => {
        const w = () => {
          clearTimeout(t);
          this.waiters.delete(w);
          resolve();
        };
        const t = setTimeout(w, left);
        this.waiters.add(w);
      });
    }
  }

  async close(): Promise<void> {
    await this.stream.close();
    await this.done;
  }
}

const forSubscriber = (owner: string | null) => (c: { topic: string; owner: string | null }) => owner === null || (c.topic === 'task' && c.owner === owner);

/**
 * Refs (`t:<id>`, `w:<id>`) of the changes in (from, to] meant for the
 * subscriber. Read unfiltered (a user's event id may be another user's change:
 * the end of the batch it came in), filtered here.
 */
async function refsBetween(feed: FeedStore, from: string, to: string, owner: string | null): Promise<string[]> {
  const refs = new Set<string>();
  const mine = forSubscriber(owner);
  let at = from;
  for (;;) {
    const page = await feed.readChanges(at, 1000);
    assert.ok(page.changes.length > 0, `the store has no change ${to} after ${from}`);
    for (const c of page.changes) {
      if (mine(c)) refs.add(`${c.topic === 'task' ? 't' : 'w'}:${c.ref}`);
      if (c.cursor === to) return [...refs].sort();
    }
    at = page.changes[page.changes.length - 1]!.cursor;
  }
}

/**
 * The events of consecutive connections of one subscriber (each resumed from
 * the previous one's last id) carry, between consecutive ids P → X, exactly
 * the tasks and workers (admins) with a change for it in (P, X]: nothing
 * missed, nothing repeated. With `caughtUp`, nothing for it lies after the
 * last id either. Returns how many changes events were checked.
 */
export async function checkExact(feed: FeedStore, owner: string | null, connections: StreamReader[], caughtUp: boolean): Promise<number> {
  if (caughtUp && connections.length > 0) {
    // An event carries each task's current summary, so a state can show (what the caller waited for)
    // before the change that made it has been delivered: wait, bounded, until the stream's position is
    // past every change for this subscriber. A stream that never gets there still fails below.
    const last = connections[connections.length - 1]!;
    const deadline = Date.now() + 5_000;
    while (Date.now() < deadline && (await feed.readChanges(last.lastEventId, 1000, owner ?? undefined)).changes.length > 0) {
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  let prev: string | null = null;
  let checked = 0;
  for (const [k, r] of connections.entries()) {
    assert.equal(r.events[0]?.type, 'hello', 'hello first');
    if (k > 0) assert.equal(r.start, prev, 'each connection resumes where the previous one stopped');
    prev = r.events[0]!.cursor;
    for (const ev of r.events.slice(1)) {
      if (ev.type === 'reset') {
        prev = ev.cursor;
        continue;
      }
      assert.equal(ev.type, 'changes');
      if (ev.type !== 'changes') continue;
      assert.equal(ev.id, ev.cursor);
      const got = [...ev.tasks.map((t) => `t:${t.id}`), ...ev.workers.map((w) => `w:${w.id}`)].sort();
      assert.equal(new Set(got).size, got.length, 'each task at most once per event');
      assert.deepEqual(got, await refsBetween(feed, prev, ev.cursor, owner), `changes after ${prev} up to ${ev.cursor}`);
      if (owner !== null) assert.ok(ev.tasks.every((t) => t.owner === owner) && ev.workers.length === 0, 'a user gets only their own tasks, no workers');
      checked++;
      prev = ev.cursor;
    }
    // The resume position (keepalives move it) skips nothing meant for the subscriber.
    const resume = r.lastEventId;
    if (resume !== prev) {
      assert.deepEqual(await refsBetween(feed, prev, resume, owner), [], 'the keepalive position skips nothing for the subscriber');
      prev = resume;
    }
  }
  if (caughtUp && prev !== null) assert.deepEqual((await feed.readChanges(prev, 1000, owner ?? undefined)).changes, [], 'nothing for the subscriber after its last id');
  return checked;
}
