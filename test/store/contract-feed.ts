/**
 * Store contract, change feed (store/feed.ts): one change per task write and
 * per worker change other than a heartbeat, in commit order; resuming from
 * any cursor misses nothing and repeats nothing; owner filtering; pruning and
 * expired cursors; malformed cursors. (The PostgreSQL-only case of
 * transactions committing out of order is in postgres.test.ts.)
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CursorExpiredError, InvalidInputError } from '../../src/core/errors.js';
import type { Change, WorkerRecord } from '../../src/store/store.js';
import { chunk, EXPIRED, Harness, T0, type ContractHooks, type Opened } from './contract-harness.js';

/** A change without its cursor, for comparisons. */
const brief = (c: Change) => [c.topic, c.ref, c.owner, c.state, c.at] as const;

export function runFeedContract(name: string, open: Opened, hooks: ContractHooks = {}): void {
  describe(`Store contract, change feed: ${name}`, () => {
    const h = Harness.use(open, hooks);

    /** Everything after `after` (in pages of `page`), once every change committed so far is readable. */
    async function readAll(after: string, owner?: string, page = 1000): Promise<{ changes: Change[]; cursor: string }> {
      await h.settled();
      const changes: Change[] = [];
      let cursor = after;
      for (;;) {
        const p = await h.store.readChanges(cursor, page, owner);
        changes.push(...p.changes);
        cursor = p.cursor;
        if (p.changes.length < page) return { changes, cursor };
      }
    }

    const worker = (id: string, at: number): Omit<WorkerRecord, 'state' | 'drainingAt'> => ({ id, hostname: 'host', slots: 1, labels: {}, connectedAt: at, lastSeenAt: at });
    const workerToken = (id: string) => h.store.createToken({ id, name: id, user: 'ops', role: 'worker', secretHash: id.padEnd(64, 'x'), createdAt: T0 });

    it('every task write appends one change, in commit order, with owner, state and time', async () => {
      const head = await h.store.feedHead();
      const a = await h.submit({ owner: 'alice', now: T0 });
      const b = await h.submit({ owner: 'bob', now: T0 + 1 });
      const ca = await h.claim(T0 + 2);
      assert.equal(ca.task.id, a.id);
      // Output, heartbeats and refused reports change no task row: no change.
      await h.log(ca, [chunk(0, 'out')], T0 + 3);
      await h.store.renewLeases('w1', [ca.attempt.id], T0 + 3, 15_000);
      await h.store.recordFencedReport(ca.attempt.id, 'exit', 'worker:w9', T0 + 3);
      await h.end(ca, 'succeeded', T0 + 4);
      await h.store.cancelTask(b.id, 'user:bob', T0 + 5);
      await h.store.retryTask(b.id, 'user:bob', T0 + 6);
      const cb = await h.claim(T0 + 7, 'w1', { leaseMs: EXPIRED });
      await h.sweep(cb, T0 + 8); // lost: back to waiting
      assert.deepEqual((await readAll(head)).changes.map(brief), [
        ['task', a.id, 'alice', 'waiting', T0],
        ['task', b.id, 'bob', 'waiting', T0 + 1],
        ['task', a.id, 'alice', 'running', T0 + 2],
        ['task', a.id, 'alice', 'succeeded', T0 + 4],
        ['task', b.id, 'bob', 'cancelled', T0 + 5],
        ['task', b.id, 'bob', 'waiting', T0 + 6],
        ['task', b.id, 'bob', 'running', T0 + 7],
        ['task', b.id, 'bob', 'waiting', T0 + 8],
      ]);
    });

    it('a backoff, its promotion and a cancel of a running task are changes too', async () => {
      const head = await h.store.feedHead();
      const t = await h.submit({ now: T0, retry: { maxRetries: 1, baseDelayMs: 1000 } });
      await h.end(await h.claim(T0 + 1), 'failed', T0 + 2);
      assert.deepEqual(await h.store.promoteDue(T0 + 5000, 10), [t.id]);
      const c = await h.claim(T0 + 5001);
      await h.store.cancelTask(t.id, 'user:alice', T0 + 5002);
      // The attempt's end after the cancel records the result: the row changes, the state stays.
      await h.end(c, 'cancelled', T0 + 5003);
      assert.deepEqual(
        (await readAll(head)).changes.map((x) => [x.state, x.at]),
        [
          ['waiting', T0],
          ['running', T0 + 1],
          ['retrying', T0 + 2],
          ['waiting', T0 + 5000],
          ['running', T0 + 5001],
          ['cancelled', T0 + 5002],
          ['cancelled', T0 + 5003],
        ],
      );
    });

    it('resuming from any cursor returns exactly the changes after it, whatever the page size', async () => {
      const head = await h.store.feedHead();
      for (let i = 0; i < 5; i++) await h.submit({ owner: i % 2 ? 'bob' : 'alice', now: T0 + i });
      await h.end(await h.claim(T0 + 10), 'succeeded', T0 + 11);
      const all = (await readAll(head)).changes;
      assert.equal(all.length, 7);
      assert.equal(new Set(all.map((c) => c.cursor)).size, 7, 'cursors are distinct');
      for (const page of [1, 2, 3]) assert.deepEqual((await readAll(head, undefined, page)).changes, all, `page size ${page}`);
      for (let k = 0; k < all.length; k++) assert.deepEqual((await readAll(all[k]!.cursor)).changes, all.slice(k + 1), `after change ${k}`);
      // A full page ends at its last change.
      const p = await h.store.readChanges(head, 3);
      assert.deepEqual(p.changes, all.slice(0, 3));
      assert.equal(p.cursor, all[2]!.cursor);
      // The cursor after the last page resumes with nothing, then with what comes next.
      const end = (await readAll(head)).cursor;
      assert.deepEqual((await readAll(end)).changes, []);
      const next = await h.submit({ now: T0 + 20 });
      assert.deepEqual((await readAll(end)).changes.map((c) => c.ref), [next.id]);
    });

    it('feedHead: what is committed after it is read after it, nothing before it', async () => {
      const empty = await readAll(await h.store.feedHead());
      assert.deepEqual(empty.changes, []);
      await h.submit({ now: T0 });
      await h.settled();
      const head = await h.store.feedHead();
      const t = await h.submit({ now: T0 + 1 });
      assert.deepEqual((await readAll(head)).changes.map((c) => c.ref), [t.id]);
      assert.deepEqual((await readAll(empty.cursor)).changes.length, 2, 'an empty read’s cursor resumes where it was');
    });

    it('with an owner, only that owner’s task changes (no worker changes); the cursor still moves on', async () => {
      await workerToken('tok1');
      const head = await h.store.feedHead();
      const a = await h.submit({ owner: 'alice', now: T0 });
      await h.submit({ owner: 'bob', now: T0 + 1 });
      await h.store.registerWorker(worker('w1', T0 + 2), 'tok1');
      await h.end(await h.claim(T0 + 3), 'succeeded', T0 + 4);
      const mine = await readAll(head, 'alice');
      assert.deepEqual(mine.changes.map(brief), [
        ['task', a.id, 'alice', 'waiting', T0],
        ['task', a.id, 'alice', 'running', T0 + 3],
        ['task', a.id, 'alice', 'succeeded', T0 + 4],
      ]);
      assert.equal((await readAll(head, 'carol')).changes.length, 0);
      // Others' changes pass by an idle owner's reader, and pruning them does not expire its cursor.
      const idle = await readAll(mine.cursor, 'alice');
      for (let i = 0; i < 4; i++) await h.submit({ owner: 'bob', now: T0 + 10 + i });
      const moved = await readAll(idle.cursor, 'alice');
      assert.deepEqual(moved.changes, []);
      assert.ok((await h.store.pruneFeed(T0 + 1000, 1000)) >= 9);
      assert.deepEqual((await readAll(moved.cursor, 'alice')).changes, []);
      const later = await h.submit({ owner: 'alice', now: T0 + 2000 });
      assert.deepEqual((await readAll(moved.cursor, 'alice')).changes.map((c) => c.ref), [later.id]);
      await assert.rejects(h.store.readChanges(head, 10, 'alice'), CursorExpiredError);
    });

    it('worker changes: registration, drain, disconnect; never a bare heartbeat', async () => {
      await workerToken('tok1');
      await workerToken('tok2');
      const head = await h.store.feedHead();
      await h.store.registerWorker(worker('w1', T0), 'tok1');
      await h.store.touchWorker('w1', T0 + 1);
      await h.store.touchWorker('w1', T0 + 2);
      await h.store.requestDrain('w1', 'maintenance', T0 + 3);
      await h.store.requestDrain('w1', 'again', T0 + 4); // already draining: nothing changes
      await h.store.touchWorker('w1', T0 + 5);
      await h.store.markWorkerDisconnected('w1', T0 + 6);
      assert.equal(await h.store.registerWorker(worker('w1', T0 + 7), 'tok2'), false); // refused: nothing changes
      await h.store.registerWorker(worker('w1', T0 + 8), 'tok1');
      assert.deepEqual((await readAll(head)).changes.map(brief), [
        ['worker', 'w1', null, null, T0],
        ['worker', 'w1', null, null, T0 + 3],
        ['worker', 'w1', null, null, T0 + 6],
        ['worker', 'w1', null, null, T0 + 8],
      ]);
    });

    it('pruneFeed deletes the oldest changes, a prefix; a cursor before it is expired, at or after it is not', async () => {
      const head = await h.store.feedHead();
      for (const at of [T0, T0 + 10, T0 + 20, T0 + 30]) await h.submit({ now: at });
      const all = (await readAll(head)).changes;
      assert.equal(await h.store.pruneFeed(T0 + 15, 100), 2);
      await assert.rejects(h.store.readChanges(head, 10), (e: unknown) => e instanceof CursorExpiredError && e.cursor === head);
      await assert.rejects(h.store.readChanges(all[0]!.cursor, 10), CursorExpiredError);
      assert.deepEqual((await readAll(all[1]!.cursor)).changes, all.slice(2));
      // At most `limit`, oldest first.
      assert.equal(await h.store.pruneFeed(T0 + 1000, 1), 1);
      await assert.rejects(h.store.readChanges(all[1]!.cursor, 10), CursorExpiredError);
      assert.deepEqual((await readAll(all[2]!.cursor)).changes, all.slice(3));
      // Only a prefix: a change newer than `before` stops the prune, even if an older one follows it.
      const late = await h.submit({ now: T0 + 5000 });
      const early = await h.submit({ now: T0 + 40 });
      assert.equal(await h.store.pruneFeed(T0 + 1000, 100), 1);
      assert.deepEqual((await readAll(all[3]!.cursor)).changes.map((c) => c.ref), [late.id, early.id]);
      assert.equal(await h.store.pruneFeed(T0 + 1000, 100), 0);
      // The head is never expired.
      assert.deepEqual((await readAll(await h.store.feedHead())).changes, []);
    });

    it('a malformed cursor or limit is InvalidInputError naming it', async () => {
      for (const bad of ['', 'abc', '-1', ' 1', '1 ', '01', '1e3', '1.2.3', '.', 'x.y', '99999999999999999999999999.0', '<script>']) {
        await assert.rejects(
          h.store.readChanges(bad, 10),
          (e: unknown) => e instanceof InvalidInputError && e.field === 'cursor',
          JSON.stringify(bad),
        );
      }
      const head = await h.store.feedHead();
      for (const limit of [0, -1, 1.5]) {
        await assert.rejects(h.store.readChanges(head, limit), (e: unknown) => e instanceof InvalidInputError && e.field === 'limit');
        await assert.rejects(h.store.pruneFeed(T0, limit), (e: unknown) => e instanceof InvalidInputError && e.field === 'limit');
      }
    });
  });
}
