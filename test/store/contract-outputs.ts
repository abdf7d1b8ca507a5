/**
 * Store contract, task outputs (schema v10): what a succeeding attempt wrote to
 * DROVER_OUTPUT is recorded on its task once, by the end that makes the task
 * succeeded, and by no other end (core/attempt-end.ts plans it; both stores
 * write it in the fenced end's own statement).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AttemptOutcome } from '../../src/core/task.js';
import type { TaskOutputs } from '../../src/core/task-outputs.js';
import type { Claim } from '../../src/store/store.js';
import { endInput, Harness, T0, type Opened } from './contract-harness.js';

export function runOutputsContract(name: string, open: Opened): void {
  describe(`Store contract, task outputs: ${name}`, () => {
    const h = Harness.use(open);
    const endWith = (c: Claim, outcome: AttemptOutcome, outputs: TaskOutputs | null, now: number) =>
      h.store.endAttempt(c.attempt.id, c.attempt.fencingToken, { ...endInput(outcome), outputs }, `worker:${c.attempt.workerId}`, now, { workerId: c.attempt.workerId });

    it('a new task has none; a success records them on the task, apart from its result', async () => {
      const t = await h.submit();
      assert.equal(t.outputs, null);
      const c = await h.claim(T0 + 1);
      assert.equal(c.task.outputs, null);
      const r = await endWith(c, 'succeeded', { rows: '42', url: 'http://x/?a=b' }, T0 + 5);
      assert.ok(r);
      assert.deepEqual(r.task.outputs, { rows: '42', url: 'http://x/?a=b' });
      assert.deepEqual(r.task.result, { outcome: 'succeeded', attempt: 1, exitCode: 0, signal: null, error: null, durationMs: 25 });
      assert.deepEqual(await h.store.getTask(t.id), r.task);
      assert.deepEqual((await h.store.listTasks({ limit: 10 })).tasks.find((x) => x.id === t.id)?.outputs, { rows: '42', url: 'http://x/?a=b' });
    });

    it('a success without outputs (none or an empty object) leaves them null', async () => {
      for (const outputs of [null, {}]) {
        const t = await h.submit();
        const r = await endWith(await h.claim(T0 + 1), 'succeeded', outputs, T0 + 5);
        assert.equal(r?.task.state, 'succeeded');
        assert.equal((await h.store.getTask(t.id))?.outputs, null);
      }
    });

    it('values come back byte for byte: UTF-8, quotes, =, \\r, controls, Object.prototype names, 64 KiB', async () => {
      const outputs: TaskOutputs = Object.fromEntries([
        ['__proto__', 'p'],
        ['constructor', 'c'],
        ['quote', `'"\\ ; DROP TABLE tasks; --`],
        ['eq', 'a=b=c'],
        ['ctl', 'x\r\t\x01\x1b[2J\u202e'],
        ['text', '日本 ✓ 🚀'],
        ['empty', ''],
        ['big', 'z'.repeat(60_000)],
      ]);
      const t = await h.submit();
      await endWith(await h.claim(T0 + 1), 'succeeded', outputs, T0 + 5);
      const stored = (await h.store.getTask(t.id))!.outputs!;
      assert.deepEqual(Object.keys(stored), Object.keys(outputs));
      assert.equal(JSON.stringify(stored), JSON.stringify(outputs));
      assert.equal(Object.getPrototypeOf(stored), Object.prototype);
    });

    it('an end that does not succeed records none, even if it carries some; the retry that succeeds does', async () => {
      const t = await h.submit({ retry: { maxRetries: 2, baseDelayMs: 10 } });
      const first = await endWith(await h.claim(T0 + 1), 'failed', { from: 'failed' }, T0 + 5);
      assert.equal(first?.task.state, 'retrying');
      assert.equal(first?.task.outputs, null);
      await h.store.promoteDue(T0 + 100, 10);
      const lost = await endWith(await h.claim(T0 + 101), 'lost', { from: 'lost' }, T0 + 105);
      assert.equal(lost?.task.state, 'waiting');
      assert.equal(lost?.task.outputs, null);
      const ok = await endWith(await h.claim(T0 + 110), 'succeeded', { from: 'third' }, T0 + 120);
      assert.equal(ok?.task.state, 'succeeded');
      assert.deepEqual((await h.store.getTask(t.id))?.outputs, { from: 'third' });
    });

    it('a task that ends failed records none', async () => {
      const t = await h.submit({ retry: { maxRetries: 0 } });
      const r = await endWith(await h.claim(T0 + 1), 'failed', { a: '1' }, T0 + 5);
      assert.equal(r?.task.state, 'failed');
      assert.equal((await h.store.getTask(t.id))?.outputs, null);
    });

    it('an attempt that succeeds after its task was cancelled records none (the task did not succeed)', async () => {
      const t = await h.submit();
      const c = await h.claim(T0 + 1);
      await h.store.cancelTask(t.id, 'user:alice', T0 + 2);
      const r = await endWith(c, 'succeeded', { rows: '1' }, T0 + 5);
      assert.equal(r?.task.state, 'cancelled');
      assert.equal(r?.task.result?.outcome, 'succeeded');
      assert.equal((await h.store.getTask(t.id))?.outputs, null);
    });

    it('a later report changes nothing: a repeated end, a fenced old attempt', async () => {
      const t = await h.submit();
      const c = await h.claim(T0 + 1);
      await endWith(c, 'succeeded', { rows: '42' }, T0 + 5);
      const before = await h.snapshot(t.id);
      assert.equal(await endWith(c, 'succeeded', { rows: '43', extra: 'x' }, T0 + 6), null, 'a resend after the end');
      assert.equal(await endWith(c, 'failed', { rows: '44' }, T0 + 7), null);
      assert.deepEqual(await h.snapshot(t.id), before);
      assert.deepEqual((await h.store.getTask(t.id))?.outputs, { rows: '42' });
    });

    it('ends of one batch (endAndClaim) record each task\'s own outputs, only for those that succeed', async () => {
      const a = await h.submit({ now: T0 });
      const b = await h.submit({ now: T0 + 1 });
      const f = await h.submit({ now: T0 + 2, retry: { maxRetries: 0 } });
      const n = await h.submit({ now: T0 + 3 });
      const claims = await h.store.claimMany({ id: 'w1', labels: {} }, 4, T0 + 10, 60_000);
      const by = new Map(claims.map((c) => [c.task.id, c]));
      const req = (id: string, outcome: AttemptOutcome, outputs: TaskOutputs | null) => {
        const c = by.get(id)!;
        return { attemptId: c.attempt.id, fencingToken: c.attempt.fencingToken, end: { ...endInput(outcome), outputs }, actor: 'worker:w1', guard: { workerId: 'w1' } };
      };
      const res = await h.store.endAndClaim([req(a.id, 'succeeded', { who: 'a' }), req(b.id, 'succeeded', { who: 'b', more: '2' }), req(f.id, 'failed', { who: 'f' }), req(n.id, 'succeeded', null)], null, T0 + 20);
      assert.deepEqual(res.ended.map((e) => e?.task.outputs), [{ who: 'a' }, { who: 'b', more: '2' }, null, null]);
      assert.deepEqual((await h.store.getTask(a.id))?.outputs, { who: 'a' });
      assert.deepEqual((await h.store.getTask(b.id))?.outputs, { who: 'b', more: '2' });
      assert.equal((await h.store.getTask(f.id))?.state, 'failed');
      assert.equal((await h.store.getTask(f.id))?.outputs, null);
      assert.equal((await h.store.getTask(n.id))?.outputs, null);
    });
  });
}
