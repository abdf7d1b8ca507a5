/**
 * Contract for what a store tells the servers attached to it (onSignal) and
 * for the leases of singleton duties (acquireLeadership). Runs on every store,
 * like contract.ts. Signals may arrive after the write resolves (PostgreSQL
 * delivers NOTIFY asynchronously), so the tests await them instead of reading
 * them at once; nothing sleeps on the clock. That a change signals nothing is
 * checked by a marker write after it: signals arrive in commit order, so once
 * the marker's arrived, any signal of the earlier change would have too.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { newTaskId } from '../../src/core/ids.js';
import type { Store, StoreSignal } from '../../src/store/store.js';
import { endInput, EXPIRED, makeSpec, T0 } from './contract-harness.js';

/** Collects a store's signals; `waitFor` resolves when one matching arrived (at index >= `from`). */
export class Recorder {
  readonly seen: StoreSignal[] = [];
  private waiters: Array<() => void> = [];
  readonly stop: () => void;
  constructor(store: Store) {
    this.stop = store.onSignal((s) => {
      this.seen.push(s);
      for (const w of this.waiters.splice(0)) w();
    });
  }
  async waitFor(pred: (s: StoreSignal) => boolean, what: string, from = 0, timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.seen.slice(from).some(pred)) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no ${what} signal; saw ${JSON.stringify(this.seen)}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }
}

const isWake = (s: StoreSignal) => s.kind === 'wake';
const isTask = (id: string) => (s: StoreSignal) => s.kind === 'task' && s.taskId === id;
const worker = (id = 'w1') => ({ id, labels: {} });

export function runSignalContract(name: string, open: () => Promise<Store>): void {
  describe(`Store signals and leadership: ${name}`, () => {
    let store: Store;
    let rec: Recorder;

    beforeEach(async () => {
      store = await open();
      await store.migrate();
      rec = new Recorder(store);
    });
    afterEach(async () => {
      rec.stop();
      await store.close();
    });

    const create = async (now = T0, idem?: { key: string; requestHash: string }) =>
      (await store.createTask(newTaskId(now), 'u', makeSpec({ retry: { maxRetries: 1, baseDelayMs: 100, factor: 2, maxDelayMs: 1000 } }), 'user:u', now, idem)).task;

    /**
     * Asserts that the writes since `seen[from]` signalled nothing: a marker
     * write follows, and once its signals arrived, only its own (one wake, its
     * task) may be there.
     */
    const assertQuietSince = async (from: number) => {
      const marker = await create(T0 + 999);
      await rec.waitFor(isTask(marker.id), 'task of the marker', from);
      await rec.waitFor(isWake, 'wake of the marker', from);
      const since = rec.seen.slice(from);
      assert.equal(since.filter(isWake).length, 1, JSON.stringify(since));
      assert.ok(since.every((s) => s.kind === 'wake' || (s.kind === 'task' && s.taskId === marker.id)), JSON.stringify(since));
    };

    it('createTask signals wake and the task', async () => {
      const t = await create();
      await rec.waitFor(isWake, 'wake');
      await rec.waitFor(isTask(t.id), 'task');
    });

    it('a createTask that claims its own task (claimFor) signals the task but no wake: nothing is left waiting for a dispatch pass', async () => {
      const from = rec.seen.length;
      const r = await store.createTask(newTaskId(T0), 'u', makeSpec(), 'user:u', T0, undefined, { claimFor: { worker: worker(), leaseMs: 15_000 } });
      assert.ok(r.claim, 'expected the task to be claimed at submit');
      await rec.waitFor(isTask(r.task.id), 'task', from);
      // Signals arrive in commit order: once the marker's are here, a wake of the claimed submit would be too.
      const marker = await create(T0 + 999);
      await rec.waitFor(isTask(marker.id), 'task of the marker', from);
      await rec.waitFor(isWake, 'wake of the marker', from);
      const since = rec.seen.slice(from);
      assert.equal(since.filter(isWake).length, 1, JSON.stringify(since));
    });

    it('an idempotent repeat of createTask (created: false) signals nothing', async () => {
      const t = await create(T0, { key: 'k', requestHash: 'h' });
      await rec.waitFor(isTask(t.id), 'task');
      await rec.waitFor(isWake, 'wake');
      const from = rec.seen.length;
      const again = await store.createTask(newTaskId(T0 + 1), 'u', makeSpec(), 'user:u', T0 + 1, { key: 'k', requestHash: 'h' });
      assert.equal(again.created, false);
      await assertQuietSince(from);
    });

    it('claim, logs and a failed attempt signal the task; a requeue (lost) signals wake', async () => {
      const t = await create();
      await rec.waitFor(isWake, 'wake');
      const c = (await store.claimNext(worker(), T0 + 1, 15_000))!;
      await rec.waitFor(isTask(t.id), 'task after claim');
      rec.seen.length = 0;
      assert.equal(await store.appendLogs(c.attempt.id, c.attempt.fencingToken, 'w1', [{ seq: 0, stream: 'stdout', data: Buffer.from('x') }], T0 + 2), true);
      await rec.waitFor(isTask(t.id), 'task after logs');
      rec.seen.length = 0;
      await store.endAttempt(c.attempt.id, c.attempt.fencingToken, endInput('lost'), 'scheduler', T0 + 3);
      await rec.waitFor(isTask(t.id), 'task after end');
      await rec.waitFor(isWake, 'wake after requeue');
    });

    it('fenced reports (wrong worker, wrong token) signal nothing', async () => {
      const t = await create();
      const c = (await store.claimNext(worker(), T0 + 1, 15_000))!;
      await rec.waitFor(isWake, 'wake');
      await rec.waitFor((s) => isTask(t.id)(s) && rec.seen.filter(isTask(t.id)).length >= 2, 'task after claim');
      const from = rec.seen.length;
      assert.equal(await store.appendLogs(c.attempt.id, c.attempt.fencingToken, 'w2', [{ seq: 0, stream: 'stdout', data: Buffer.from('x') }], T0 + 2), false);
      assert.equal(await store.appendLogs(c.attempt.id, '0'.repeat(32), 'w1', [{ seq: 0, stream: 'stdout', data: Buffer.from('x') }], T0 + 2), false);
      assert.equal(await store.endAttempt(c.attempt.id, '0'.repeat(32), endInput('failed'), 'worker:w1', T0 + 3, { workerId: 'w1' }), null);
      assert.equal(await store.endAttempt(c.attempt.id, c.attempt.fencingToken, endInput('failed'), 'worker:w2', T0 + 3, { workerId: 'w2' }), null);
      await assertQuietSince(from);
    });

    it('cancel of a running task signals cancel with the attempt id', async () => {
      const t = await create();
      const c = (await store.claimNext(worker(), T0 + 1, 15_000))!;
      await store.cancelTask(t.id, 'user:u', T0 + 2);
      await rec.waitFor((s) => s.kind === 'cancel' && s.attemptId === c.attempt.id && s.taskId === t.id, 'cancel');
      await rec.waitFor(isTask(t.id), 'task after cancel');
    });

    it('promoteDue and retryTask signal wake', async () => {
      const t = await create();
      let c = (await store.claimNext(worker(), T0, 15_000))!;
      await store.endAttempt(c.attempt.id, c.attempt.fencingToken, endInput('failed'), 'worker:w1', T0 + 1, { workerId: 'w1' });
      rec.seen.length = 0;
      assert.deepEqual(await store.promoteDue(T0 + 1001, 10), [t.id]);
      await rec.waitFor(isWake, 'wake after promote');
      c = (await store.claimNext(worker(), T0 + 1002, 15_000))!;
      await store.endAttempt(c.attempt.id, c.attempt.fencingToken, endInput('failed'), 'worker:w1', T0 + 1003, { workerId: 'w1' });
      rec.seen.length = 0;
      await store.retryTask(t.id, 'user:u', T0 + 1004);
      await rec.waitFor(isWake, 'wake after retry');
      await rec.waitFor(isTask(t.id), 'task after retry');
    });

    it('a retried task whose old attempt was still running: that attempt’s end (exit or expiry) signals wake', async () => {
      for (const how of ['exit', 'expiry'] as const) {
        const t = await create();
        const old = (await store.claimNext(worker(), T0 + 1, how === 'expiry' ? EXPIRED : 15_000))!;
        await store.cancelTask(t.id, 'user:u', T0 + 2);
        await store.retryTask(t.id, 'user:u', T0 + 3);
        assert.equal(await store.claimNext(worker('w2'), T0 + 4, 15_000), null);
        await rec.waitFor(isTask(t.id), 'task after retry');
        rec.seen.length = 0;
        const ended =
          how === 'exit'
            ? await store.endAttempt(old.attempt.id, old.attempt.fencingToken, endInput('cancelled'), 'worker:w1', T0 + 5, { workerId: 'w1' })
            : await store.endAttempt(old.attempt.id, old.attempt.fencingToken, endInput('lost'), 'scheduler', T0 + 5, { leaseExpired: true });
        assert.equal(ended?.task.state, 'waiting', how);
        await rec.waitFor(isWake, `wake after the old attempt's ${how}`);
        await rec.waitFor(isTask(t.id), `task after the old attempt's ${how}`);
        assert.equal((await store.claimNext(worker('w2'), T0 + 6, 15_000))?.task.id, t.id);
      }
    });

    it('a failed write signals nothing', async () => {
      await assert.rejects(store.cancelTask(newTaskId(T0), 'user:u', T0));
      await assertQuietSince(0);
    });

    it('leadership: one holder at a time, renewable, taken over only after expiry', async () => {
      assert.equal(await store.acquireLeadership('sweeper', 'a', T0, 10_000), true);
      assert.equal(await store.acquireLeadership('sweeper', 'b', T0 + 1, 10_000), false);
      assert.equal(await store.acquireLeadership('sweeper', 'a', T0 + 2, 10_000), true, 'the holder renews');
      assert.equal(await store.acquireLeadership('sweeper', 'b', T0 + 3, 10_000), false, 'renewed lease still valid');
      assert.equal(await store.acquireLeadership('other-duty', 'b', T0 + 4, 10_000), true, 'leases are per name');
      // The holder renews with a lease that has already ended (the store's clock), so it has expired.
      assert.equal(await store.acquireLeadership('sweeper', 'a', T0 + 5, EXPIRED), true);
      assert.equal(await store.acquireLeadership('sweeper', 'b', T0 + 6, 10_000), true, 'expired: taken over');
      assert.equal(await store.acquireLeadership('sweeper', 'a', T0 + 7, 10_000), false);
      assert.equal(await store.acquireLeadership('other-duty', 'a', T0 + 8, 10_000), false);
    });

    it('leadership: concurrent contenders, exactly one wins', async () => {
      const wins = await Promise.all(Array.from({ length: 8 }, (_, i) => store.acquireLeadership('race', `h${i}`, T0, 10_000)));
      assert.equal(wins.filter(Boolean).length, 1);
    });
  });
}
