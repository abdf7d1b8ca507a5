/**
 * Contract for what a store tells the servers attached to it (onSignal) and
 * for the leases of singleton duties (acquireLeadership). Runs on every store,
 * like contract.ts. Signals may arrive after the write resolves (PostgreSQL
 * delivers NOTIFY asynchronously), so the tests await them instead of reading
 * them at once; nothing sleeps on the clock.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { newTaskId } from '../../src/core/ids.js';
import type { Store, StoreSignal } from '../../src/store/store.js';
import { makeSpec } from './contract.js';

const T0 = 1_700_000_000_000;

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

    it('createTask signals wake and the task', async () => {
      const t = await store.createTask(newTaskId(T0), 'u', makeSpec(), 'user:u', T0);
      await rec.waitFor(isWake, 'wake');
      await rec.waitFor(isTask(t.id), 'task');
    });

    it('claim, logs and a failed attempt signal the task; a requeue (lost) signals wake', async () => {
      const t = await store.createTask(newTaskId(T0), 'u', makeSpec(), 'user:u', T0);
      await rec.waitFor(isWake, 'wake');
      const c = (await store.claimNext('w1', T0 + 1, 15_000))!;
      rec.seen.length = 0;
      assert.equal(await store.appendLogs(c.attempt.id, c.attempt.id, [{ seq: 0, stream: 'stdout', data: Buffer.from('x') }], T0 + 2), true);
      await rec.waitFor(isTask(t.id), 'task after logs');
      rec.seen.length = 0;
      await store.endAttempt(c.attempt.id, c.attempt.id, { outcome: 'lost', exitCode: null, signal: null, error: 'gone', durationMs: null }, 'scheduler', T0 + 3);
      await rec.waitFor(isTask(t.id), 'task after end');
      await rec.waitFor(isWake, 'wake after requeue');
    });

    it('cancel of a running task signals cancel with the attempt id', async () => {
      const t = await store.createTask(newTaskId(T0), 'u', makeSpec(), 'user:u', T0);
      const c = (await store.claimNext('w1', T0 + 1, 15_000))!;
      await store.cancelTask(t.id, 'user:u', T0 + 2);
      await rec.waitFor((s) => s.kind === 'cancel' && s.attemptId === c.attempt.id && s.taskId === t.id, 'cancel');
    });

    it('promoteDue and retryTask signal wake', async () => {
      const t = await store.createTask(newTaskId(T0), 'u', makeSpec({ retry: { maxRetries: 1, baseDelayMs: 100, factor: 2, maxDelayMs: 1000 } }), 'user:u', T0);
      let c = (await store.claimNext('w1', T0, 15_000))!;
      await store.endAttempt(c.attempt.id, c.attempt.id, { outcome: 'failed', exitCode: 1, signal: null, error: null, durationMs: 1 }, 'w', T0 + 1);
      rec.seen.length = 0;
      assert.deepEqual(await store.promoteDue(T0 + 101), [t.id]);
      await rec.waitFor(isWake, 'wake after promote');
      c = (await store.claimNext('w1', T0 + 102, 15_000))!;
      await store.endAttempt(c.attempt.id, c.attempt.id, { outcome: 'failed', exitCode: 1, signal: null, error: null, durationMs: 1 }, 'w', T0 + 103);
      rec.seen.length = 0;
      await store.retryTask(t.id, 'user:u', T0 + 104);
      await rec.waitFor(isWake, 'wake after retry');
    });

    it('a failed write signals nothing', async () => {
      await assert.rejects(store.cancelTask(newTaskId(T0), 'user:u', T0));
      const t = await store.createTask(newTaskId(T0), 'u', makeSpec(), 'user:u', T0);
      await rec.waitFor(isTask(t.id), 'task');
      // Everything seen belongs to the successful createTask.
      assert.ok(rec.seen.every((s) => s.kind === 'wake' || (s.kind === 'task' && s.taskId === t.id)), JSON.stringify(rec.seen));
    });

    it('leadership: one holder at a time, renewable, taken over only after expiry', async () => {
      assert.equal(await store.acquireLeadership('sweeper', 'a', T0, 10_000), true);
      assert.equal(await store.acquireLeadership('sweeper', 'b', T0 + 1, 10_000), false);
      assert.equal(await store.acquireLeadership('sweeper', 'a', T0 + 5_000, 10_000), true, 'the holder renews');
      assert.equal(await store.acquireLeadership('sweeper', 'b', T0 + 14_000, 10_000), false, 'renewed lease still valid');
      assert.equal(await store.acquireLeadership('other-duty', 'b', T0, 10_000), true, 'leases are per name');
      assert.equal(await store.acquireLeadership('sweeper', 'b', T0 + 15_001, 10_000), true, 'expired: taken over');
      assert.equal(await store.acquireLeadership('sweeper', 'a', T0 + 15_002, 10_000), false);
    });

    it('leadership: concurrent contenders, exactly one wins', async () => {
      const wins = await Promise.all(Array.from({ length: 8 }, (_, i) => store.acquireLeadership('race', `h${i}`, T0, 10_000)));
      assert.equal(wins.filter(Boolean).length, 1);
    });
  });
}
