/**
 * Store contract, batch submit (TaskStore.createTasks): every task as createTask
 * stores it (row, two events, one feed change, counters), in order; all or
 * nothing; the batch size rule; idempotent batches (store/batch.ts: per-item
 * keys derived from the batch key) including concurrent repeats; one `wake`.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConflictError, InvalidInputError } from '../../src/core/errors.js';
import { newTaskId } from '../../src/core/ids.js';
import { MAX_BATCH, type NewTask } from '../../src/store/batch.js';
import type { Change, StoreSignal } from '../../src/store/store.js';
import { Harness, makeSpec, T0, type ContractHooks, type Opened } from './contract-harness.js';

const items = (n: number, now = T0, name = (i: number) => `job-${i}`): NewTask[] =>
  Array.from({ length: n }, (_, i) => ({ id: newTaskId(now), spec: makeSpec({ name: name(i), priority: i % 3, env: { I: String(i) } }) }));

export function runBatchContract(name: string, open: Opened, hooks: ContractHooks = {}): void {
  describe(`Store contract, batch submit: ${name}`, () => {
    const h = Harness.use(open, hooks);
    const idem = (key: string, requestHash = 'batch-hash-1') => ({ key, requestHash });

    async function allChanges(after: string): Promise<Change[]> {
      await h.settled();
      const out: Change[] = [];
      let cursor = after;
      for (;;) {
        const p = await h.store.readChanges(cursor, 1000);
        out.push(...p.changes);
        cursor = p.cursor;
        if (p.changes.length < 1000) return out;
      }
    }

    it('stores every task as createTask does: the same row, both events, in input order', async () => {
      const batch = items(5);
      const single = await h.store.createTask(newTaskId(T0), 'bob', batch[0]!.spec, 'user:bob', T0);
      const r = await h.store.createTasks('bob', batch, 'user:bob', T0);
      assert.equal(r.created, true);
      assert.deepEqual(r.tasks.map((t) => t.id), batch.map((b) => b.id));
      for (const [i, t] of r.tasks.entries()) {
        // The same fields a single submit of the same spec stores, only the id differs.
        assert.deepEqual({ ...t, id: '' }, { ...single.task, id: '', name: `job-${i}`, priority: i % 3, env: { I: String(i) } });
        assert.deepEqual(await h.store.getTask(t.id), t);
        const events = await h.store.listEvents(t.id);
        assert.deepEqual(
          events.map((e) => [e.taskId, e.from, e.to, e.reason, e.actor, e.at, e.detail]),
          [
            [t.id, null, 'ready', 'submitted', 'user:bob', T0, null],
            [t.id, 'ready', 'waiting', 'released', 'user:bob', T0, null],
          ],
        );
      }
      // Events are written in item order (ids grow along the batch).
      const firstEvents = await Promise.all(r.tasks.map(async (t) => (await h.store.listEvents(t.id))[0]!.id));
      assert.deepEqual([...firstEvents].sort((a, b) => a - b), firstEvents);
      // The single submit's id was made after the batch's (newest first).
      assert.deepEqual((await h.store.listTasks({ limit: 10, owner: 'bob' })).tasks.map((t) => t.id), [single.task.id, ...[...batch.map((b) => b.id)].reverse()]);
    });

    it('appends one feed change per task and keeps the counters, like createTask', async () => {
      await h.settled();
      const head = await h.store.feedHead();
      await h.submit({ owner: 'alice' });
      const r = await h.store.createTasks('bob', items(300), 'user:bob', T0 + 1);
      const changes = await allChanges(head);
      assert.equal(changes.length, 301);
      assert.deepEqual(
        changes.slice(1).map((c) => [c.topic, c.ref, c.owner, c.state, c.at]).sort(),
        r.tasks.map((t) => ['task', t.id, 'bob', 'waiting', T0 + 1]).sort(),
      );
      assert.equal((await h.store.countTasksByState('bob')).waiting, 300);
      assert.equal((await h.store.countTasksByState()).waiting, 301);
      // Claiming one moves a counter exactly as for a single submit.
      await h.claim(T0 + 2);
      const all = await h.store.countTasksByState();
      assert.deepEqual([all.waiting, all.running], [300, 1]);
    });

    it('takes MAX_BATCH tasks; an empty or larger batch is InvalidInputError naming tasks and stores nothing', async () => {
      for (const n of [0, MAX_BATCH + 1]) {
        await assert.rejects(h.store.createTasks('alice', items(n), 'user:alice', T0), (e: unknown) => {
          assert.ok(e instanceof InvalidInputError);
          assert.equal(e.field, 'tasks');
          assert.match(e.reason, new RegExp(`1\\.\\.${MAX_BATCH}`));
          return true;
        });
      }
      assert.equal((await h.store.listTasks({ limit: 10 })).tasks.length, 0);
      const r = await h.store.createTasks('alice', items(MAX_BATCH), 'user:alice', T0);
      assert.equal(r.tasks.length, MAX_BATCH);
      assert.equal((await h.store.countTasksByState('alice')).waiting, MAX_BATCH);
    });

    it('all or nothing: a taken id in the middle is a ConflictError and no task, event or change of the batch is stored', async () => {
      const taken = await h.submit();
      await h.settled();
      const head = await h.store.feedHead();
      const batch = items(10);
      batch[6] = { id: taken.id, spec: makeSpec({ name: 'dup' }) };
      await assert.rejects(h.store.createTasks('alice', batch, 'user:alice', T0 + 1), ConflictError);
      for (const b of batch.filter((_, i) => i !== 6)) {
        assert.equal(await h.store.getTask(b.id), null);
        assert.deepEqual(await h.store.listEvents(b.id), []);
      }
      assert.equal((await h.store.getTask(taken.id))?.name, 'echo');
      assert.equal((await h.store.listEvents(taken.id)).length, 2);
      assert.deepEqual(await allChanges(head), []);
      assert.equal((await h.store.countTasksByState()).waiting, 1);
    });

    // SQLite inserts a batch in statements of up to 128 rows (sqlite/chunked-insert.ts): 300 = 128 + 128 + 32 + 8 + 4.
    it('all or nothing across a large batch: an id taken, or given twice, late in the batch stores none of it', async () => {
      const taken = await h.submit();
      await h.settled();
      const head = await h.store.feedHead();
      const late = items(300);
      late[297] = { id: taken.id, spec: makeSpec({ name: 'dup' }) };
      const twice = items(300);
      twice[290] = { ...twice[5]!, spec: makeSpec({ name: 'again' }) };
      for (const batch of [late, twice]) {
        await assert.rejects(h.store.createTasks('alice', batch, 'user:alice', T0 + 1), ConflictError);
        for (const b of [batch[0]!, batch[130]!, batch[260]!, batch[299]!]) {
          assert.equal(await h.store.getTask(b.id), null);
          assert.deepEqual(await h.store.listEvents(b.id), []);
        }
      }
      assert.deepEqual(await allChanges(head), []);
      const counts = await h.store.countTasksByState();
      assert.equal(Object.values(counts).reduce((a, b) => a + b, 0), 1);
      assert.equal(counts.waiting, 1);
      assert.equal((await h.store.listTasks({ limit: 10 })).tasks.length, 1);
    });

    it('a large idempotent batch keeps item order, run-later items and every item key across its whole length', async () => {
      const batch = items(300).map((b, i) => (i % 97 === 3 ? { ...b, runAfter: T0 + 60_000 } : b));
      const r = await h.store.createTasks('carol', batch, 'user:carol', T0, idem('big'));
      assert.deepEqual(r.tasks.map((t) => [t.id, t.state, t.runAfter]), batch.map((b) => [b.id, b.runAfter ? 'ready' : 'waiting', b.runAfter ?? null]));
      for (const i of [0, 3, 127, 128, 255, 256, 290, 299]) {
        const stored = await h.store.getTask(batch[i]!.id);
        assert.deepEqual(stored, r.tasks[i]);
        assert.equal(stored?.name, `job-${i}`);
        const events = await h.store.listEvents(batch[i]!.id);
        assert.deepEqual(events.map((e) => e.reason), batch[i]!.runAfter ? ['submitted'] : ['submitted', 'released']);
      }
      const again = await h.store.createTasks('carol', batch, 'user:carol', T0 + 5, idem('big'));
      assert.equal(again.created, false);
      assert.deepEqual(again.tasks.map((t) => t.id), batch.map((b) => b.id));
      const counts = await h.store.countTasksByState('carol');
      assert.deepEqual([counts.waiting, counts.ready], [296, 4]);
    });

    it('an idempotent repeat returns the first tasks in order (created: false) and writes nothing', async () => {
      const first = await h.store.createTasks('alice', items(4), 'user:alice', T0, idem('b1'));
      assert.equal(first.created, true);
      // Progress on one task: the repeat returns the tasks as they are now.
      await h.claim(T0 + 1);
      await h.settled();
      const head = await h.store.feedHead();
      const retry = items(4, T0 + 5);
      const again = await h.store.createTasks('alice', retry, 'user:alice', T0 + 5, idem('b1'));
      assert.equal(again.created, false);
      assert.deepEqual(again.tasks.map((t) => t.id), first.tasks.map((t) => t.id));
      assert.deepEqual(again.tasks[0], await h.store.getTask(first.tasks[0]!.id));
      for (const r of retry) assert.equal(await h.store.getTask(r.id), null);
      assert.deepEqual(await allChanges(head), []);
      assert.equal((await h.store.listTasks({ limit: 100 })).tasks.length, 4);
    });

    it('the key with another body or another number of tasks is a ConflictError naming the key; nothing is written', async () => {
      await h.store.createTasks('alice', items(3), 'user:alice', T0, idem('deploy', 'h1'));
      const cases = [
        items(3, T0 + 1).map((x) => ({ ...x })), // another hash
        items(2, T0 + 1),
        items(5, T0 + 1),
      ];
      const hashes = ['h2', 'h1', 'h1'];
      for (const [i, c] of cases.entries()) {
        await assert.rejects(h.store.createTasks('alice', c, 'user:alice', T0 + 1, idem('deploy', hashes[i])), (e: unknown) => {
          assert.ok(e instanceof ConflictError);
          assert.match(e.message, /Idempotency-Key "deploy"/);
          return true;
        });
        for (const x of c) assert.equal(await h.store.getTask(x.id), null);
      }
      assert.equal((await h.store.listTasks({ limit: 100 })).tasks.length, 3);
    });

    it('batch keys are per owner and never meet a single submit\'s key', async () => {
      const single = await h.submit({ owner: 'alice', idem: { key: 'k', requestHash: 'single' } });
      const a = await h.store.createTasks('alice', items(2), 'user:alice', T0, idem('k'));
      const b = await h.store.createTasks('bob', items(2), 'user:bob', T0, idem('k', 'other'));
      assert.deepEqual([a.created, b.created], [true, true]);
      const again = await h.store.createTask(newTaskId(T0 + 1), 'alice', makeSpec(), 'user:alice', T0 + 1, { key: 'k', requestHash: 'single' });
      assert.deepEqual([again.created, again.task.id], [false, single.id]);
      // A key that extends another ("k" and "k2") names another batch.
      const c = await h.store.createTasks('alice', items(1), 'user:alice', T0, idem('k2'));
      assert.equal(c.created, true);
      assert.equal((await h.store.createTasks('alice', items(2), 'user:alice', T0, idem('k'))).created, false);
    });

    it('concurrent batches with one key make exactly one set of tasks', async () => {
      const results = await Promise.all(Array.from({ length: 6 }, (_, i) => h.store.createTasks('alice', items(20, T0 + i), 'user:alice', T0 + i, idem('race'))));
      assert.equal(results.filter((r) => r.created).length, 1);
      const ids = results[0]!.tasks.map((t) => t.id);
      for (const r of results) assert.deepEqual(r.tasks.map((t) => t.id), ids);
      assert.equal((await h.store.listTasks({ limit: 100 })).tasks.length, 20);
      assert.equal((await h.store.countTasksByState()).waiting, 20);
    });

    it('concurrent batches of one owner all commit, with every counter right', async () => {
      await Promise.all(Array.from({ length: 6 }, (_, i) => h.store.createTasks('alice', items(200, T0 + i), 'user:alice', T0 + i)));
      assert.equal((await h.store.countTasksByState('alice')).waiting, 1200);
    });

    it('signals one wake per created batch, nothing for a repeat', async () => {
      const seen: StoreSignal[] = [];
      const off = h.store.onSignal((s) => seen.push(s));
      try {
        await h.store.createTasks('alice', items(50), 'user:alice', T0, idem('sig'));
        await waitFor(() => seen.some((s) => s.kind === 'wake'));
        assert.deepEqual([...new Set(seen.map((s) => s.kind as string))], ['wake']);
        seen.length = 0;
        await h.store.createTasks('alice', items(50), 'user:alice', T0, idem('sig'));
        // A later signal proves the repeat's would have arrived by now.
        await h.submit();
        await waitFor(() => seen.some((s) => s.kind === 'task'));
        assert.equal(seen.filter((s) => s.kind === 'wake').length, 1);
      } finally {
        off();
      }
    });
  });
}

/** Resolves when `cond` holds (signals arrive after the commit, on PostgreSQL through LISTEN). */
async function waitFor(cond: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}
