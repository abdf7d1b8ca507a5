/** Store contract, batched attempt writes: claimMany and endAttempts (the drain's hot path). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Claim } from '../../src/store/store.js';
import { endInput, EXPIRED, GUESSED_TOKEN, Harness, LEASE, T0, type ContractHooks, type Opened } from './contract-harness.js';

export function runAttemptBatchContract(name: string, open: Opened, hooks: ContractHooks = {}): void {
  describe(`Store contract, batched attempt writes: ${name}`, () => {
    const h = Harness.use(open, hooks);
    const worker = (id = 'w1', labels: Record<string, string> = {}) => ({ id, labels });

    describe('claimMany', () => {
      it('claims up to max in priority then age order, each with its own attempt, token and event', async () => {
        const low = await h.submit({ priority: 0, now: T0 });
        const hi = await h.submit({ priority: 5, now: T0 + 1 });
        const mid = await h.submit({ priority: 1, now: T0 + 2 });
        const low2 = await h.submit({ priority: 0, now: T0 + 3 });
        const claims = await h.store.claimMany(worker('w3'), 3, T0 + 100, LEASE);
        assert.deepEqual(
          claims.map((c) => c.task.id),
          [hi.id, mid.id, low.id],
        );
        assert.equal(new Set(claims.map((c) => c.attempt.fencingToken)).size, 3);
        for (const c of claims) {
          assert.equal(c.task.state, 'running');
          assert.equal(c.task.currentAttemptId, c.attempt.id);
          assert.equal(c.attempt.workerId, 'w3');
          assert.equal(c.attempt.number, 1);
          assert.deepEqual(await h.store.getTask(c.task.id), c.task);
          assert.deepEqual(await h.store.getAttempt(c.attempt.id), c.attempt);
          const ev = (await h.store.listEvents(c.task.id)).at(-1)!;
          assert.deepEqual([ev.reason, ev.detail], ['claimed', { attemptId: c.attempt.id, attempt: 1, workerId: 'w3' }]);
        }
        // Fewer left than asked for: what is there, then nothing.
        assert.deepEqual((await h.store.claimMany(worker(), 10, T0 + 101, LEASE)).map((c) => c.task.id), [low2.id]);
        assert.deepEqual(await h.store.claimMany(worker(), 10, T0 + 102, LEASE), []);
      });

      it('takes only tasks whose requirements the worker satisfies', async () => {
        const gpu = await h.submit({ requires: { gpu: 'yes' }, now: T0 });
        const any = await h.submit({ now: T0 + 1 });
        const arm = await h.submit({ requires: { arch: 'arm' }, now: T0 + 2 });
        const claims = await h.store.claimMany(worker('w1', { gpu: 'yes' }), 5, T0 + 10, LEASE);
        assert.deepEqual(
          claims.map((c) => c.task.id),
          [gpu.id, any.id],
        );
        assert.equal((await h.store.getTask(arm.id))?.state, 'waiting');
      });

      it('never gives one task to two concurrent batches', async () => {
        const ids = new Set<string>();
        for (let i = 0; i < 30; i++) ids.add((await h.submit({ now: T0 + i })).id);
        const batches = await Promise.all(Array.from({ length: 6 }, (_, i) => h.store.claimMany(worker(`w${i}`), 8, T0 + 100, LEASE)));
        const all = batches.flat();
        assert.equal(all.length, 30);
        assert.deepEqual(new Set(all.map((c) => c.task.id)), ids);
        for (const id of ids) assert.equal((await h.store.listAttempts(id)).length, 1);
      });

      it('refuses a max that is not a positive integer, changing nothing', async () => {
        const t = await h.submit();
        for (const bad of [0, -1, 1.5, Number.NaN]) {
          await assert.rejects(h.store.claimMany(worker(), bad, T0 + 1, LEASE), (e: Error & { field?: string }) => e.field === 'max');
        }
        assert.equal((await h.store.getTask(t.id))?.state, 'waiting');
      });
    });

    describe('endAttempts', () => {
      const claimAll = async (n: number): Promise<Claim[]> => {
        for (let i = 0; i < n; i++) await h.submit({ now: T0 + i, retry: { maxRetries: 1 } });
        const c = await h.store.claimMany(worker(), n, T0 + 50, LEASE);
        assert.equal(c.length, n);
        return c;
      };
      const req = (c: Claim, outcome: Parameters<typeof endInput>[0], over: Partial<{ token: string; workerId: string }> = {}) => ({
        attemptId: c.attempt.id,
        fencingToken: over.token ?? c.attempt.fencingToken,
        end: endInput(outcome),
        actor: `worker:${over.workerId ?? 'w1'}`,
        guard: { workerId: over.workerId ?? 'w1' },
      });

      it('ends each accepted request as endAttempt would, in one call, and refuses the others', async () => {
        const [ok, bad, wrongWorker, failed] = await claimAll(4);
        const before = await h.snapshot(bad!.task.id);
        const res = await h.store.endAttempts(
          [req(ok!, 'succeeded'), req(bad!, 'succeeded', { token: GUESSED_TOKEN }), req(wrongWorker!, 'succeeded', { workerId: 'w2' }), req(failed!, 'failed')],
          T0 + 60,
        );
        assert.equal(res.length, 4);
        assert.equal(res[0]?.task.state, 'succeeded');
        assert.equal(res[0]?.attempt.state, 'succeeded');
        assert.equal(res[1], null);
        assert.equal(res[2], null);
        assert.equal(res[3]?.task.state, 'retrying');
        assert.equal(res[3]?.task.retriesUsed, 1);
        assert.deepEqual(await h.snapshot(bad!.task.id), before);
        assert.deepEqual(await h.store.getTask(ok!.task.id), res[0]!.task);
        assert.deepEqual(await h.store.getAttempt(failed!.attempt.id), res[3]!.attempt);
        const ev = (await h.store.listEvents(ok!.task.id)).at(-1)!;
        assert.deepEqual([ev.from, ev.to, ev.reason, ev.actor, ev.at], ['running', 'succeeded', 'attempt_succeeded', 'worker:w1', T0 + 60]);
        assert.equal((await h.store.getTask(wrongWorker!.task.id))?.state, 'running');
      });

      it('refuses a repeat of the same attempt inside one batch, and an unknown or absurd id', async () => {
        const [c] = await claimAll(1);
        const res = await h.store.endAttempts(
          [req(c!, 'succeeded'), req(c!, 'failed'), { ...req(c!, 'failed'), attemptId: c!.attempt.id + 10_000 }, { ...req(c!, 'failed'), attemptId: 2 ** 60 }],
          T0 + 60,
        );
        assert.deepEqual(
          res.map((r) => r?.task.state ?? null),
          ['succeeded', null, null, null],
        );
        assert.equal((await h.store.listEvents(c!.task.id)).filter((e) => e.to === 'succeeded' || e.to === 'retrying').length, 1);
      });

      it('applies the sweeper guard per request: only expired leases end', async () => {
        await h.submit({ now: T0 });
        await h.submit({ now: T0 + 1 });
        const [expired] = await h.store.claimMany(worker(), 1, T0 + 10, EXPIRED);
        const [live] = await h.store.claimMany(worker(), 1, T0 + 10, LEASE);
        const sweep = (c: Claim) => ({ attemptId: c.attempt.id, fencingToken: c.attempt.fencingToken, end: endInput('lost'), actor: 'scheduler', guard: { leaseExpired: true } });
        const res = await h.store.endAttempts([sweep(expired!), sweep(live!)], T0 + 20);
        assert.equal(res[0]?.task.state, 'waiting');
        assert.equal(res[1], null);
        assert.equal((await h.store.getTask(live!.task.id))?.state, 'running');
      });

      it('an empty batch is a no-op', async () => {
        assert.deepEqual(await h.store.endAttempts([], T0), []);
      });
    });

    describe('endAndClaim', () => {
      const refill = (max: number, id = 'w1') => ({ worker: worker(id), max, leaseMs: LEASE });

      it('ends the exits and claims for the freed slots in one call; the claims see a task the ends requeued', async () => {
        const a = await h.submit({ now: T0 });
        const b = await h.submit({ now: T0 + 1 });
        const c = await h.submit({ now: T0 + 2 });
        const [ca, cb] = await h.store.claimMany(worker(), 2, T0 + 10, LEASE);
        assert.deepEqual([ca!.task.id, cb!.task.id], [a.id, b.id]);
        const res = await h.store.endAndClaim(
          [
            { attemptId: ca!.attempt.id, fencingToken: ca!.attempt.fencingToken, end: endInput('succeeded'), actor: 'worker:w1', guard: { workerId: 'w1' } },
            // Lost: requeued (waiting) without using a retry, and claimable by the same call.
            { attemptId: cb!.attempt.id, fencingToken: cb!.attempt.fencingToken, end: endInput('lost'), actor: 'scheduler', guard: {} },
          ],
          refill(3),
          T0 + 20,
        );
        assert.deepEqual(res.ended.map((r) => r?.task.state), ['succeeded', 'waiting']);
        assert.deepEqual(new Set(res.claims.map((x) => x.task.id)), new Set([b.id, c.id]));
        const again = res.claims.find((x) => x.task.id === b.id)!;
        assert.equal(again.attempt.number, 2);
        assert.equal((await h.store.getTask(b.id))?.state, 'running');
        assert.equal((await h.store.getTask(a.id))?.state, 'succeeded');
      });

      it('a refused end changes nothing and the claim still runs; no claim without a refill', async () => {
        const a = await h.submit({ now: T0 });
        const b = await h.submit({ now: T0 + 1 });
        const [ca] = await h.store.claimMany(worker(), 1, T0 + 10, LEASE);
        const before = await h.snapshot(a.id);
        const forged = { attemptId: ca!.attempt.id, fencingToken: GUESSED_TOKEN, end: endInput('failed'), actor: 'worker:w1', guard: { workerId: 'w1' } };
        const none = await h.store.endAndClaim([forged], null, T0 + 20);
        assert.deepEqual(none, { ended: [null], claims: [] });
        const res = await h.store.endAndClaim([forged], refill(1, 'w2'), T0 + 21);
        assert.deepEqual(res.ended, [null]);
        assert.deepEqual(res.claims.map((x) => [x.task.id, x.attempt.workerId]), [[b.id, 'w2']]);
        assert.deepEqual(await h.snapshot(a.id), before);
      });

      // The worker session's path: each end carries its task as the claim left it (EndRequest.claimed).
      const claimedOf = (c: Claim) => ({ id: c.task.id, retry: c.task.retry, retriesUsed: c.task.retriesUsed, lostCount: c.task.lostCount, dagRunId: c.task.dagRunId, attempt: c.attempt.number });
      const exit = (c: Claim, outcome: Parameters<typeof endInput>[0], over: Partial<{ token: string; claimed: ReturnType<typeof claimedOf> }> = {}) => ({
        attemptId: c.attempt.id,
        fencingToken: over.token ?? c.attempt.fencingToken,
        end: endInput(outcome),
        actor: 'worker:w1',
        guard: { workerId: 'w1' },
        claimed: over.claimed ?? claimedOf(c),
      });

      it('with the claimed tasks: the same ends, events, feed and counters as without, and the refill', async () => {
        for (let i = 0; i < 5; i++) await h.submit({ now: T0 + i, retry: { maxRetries: 1, baseDelayMs: 1000 } });
        const [ok, failed, timedOut] = await h.store.claimMany(worker(), 3, T0 + 10, LEASE);
        // PostgreSQL's feed shows a change once no older transaction runs in the cluster (other test files share it):
        // the head is taken past the claims' changes, and the read below waits for the ends' (ContractHooks.settled).
        await h.settled();
        const head = await h.store.feedHead();
        const res = await h.store.endAndClaim([exit(ok!, 'succeeded'), exit(failed!, 'failed'), exit(timedOut!, 'timed_out')], refill(3), T0 + 20);
        assert.deepEqual(
          res.ended.map((r) => [r?.task.state, r?.task.retriesUsed, r?.task.runAfter, r?.attempt.state, r?.attempt.endedAt, r?.attempt.exitCode]),
          [
            ['succeeded', 0, null, 'succeeded', T0 + 20, 0],
            ['retrying', 1, T0 + 20 + 1000, 'failed', T0 + 20, 1],
            ['retrying', 1, T0 + 20 + 1000, 'timed_out', T0 + 20, null],
          ],
        );
        assert.deepEqual(res.ended[0]!.task.result, { outcome: 'succeeded', attempt: 1, exitCode: 0, signal: null, error: null, durationMs: 25 });
        for (const r of res.ended) {
          assert.deepEqual(await h.store.getTask(r!.task.id), r!.task);
          assert.deepEqual(await h.store.getAttempt(r!.attempt.id), r!.attempt);
        }
        const ev = (await h.store.listEvents(failed!.task.id)).at(-1)!;
        assert.deepEqual([ev.from, ev.to, ev.reason, ev.actor, ev.at], ['running', 'retrying', 'attempt_failed', 'worker:w1', T0 + 20]);
        assert.deepEqual(ev.detail, { attemptId: failed!.attempt.id, attempt: 1, outcome: 'failed', exitCode: 1, signal: null, retry: 1, delayMs: 1000 });
        // The two tasks left waiting, claimed for the freed slots.
        assert.equal(res.claims.length, 2);
        for (const c of res.claims) assert.deepEqual(await h.store.getTask(c.task.id), c.task);
        await h.settled();
        const changed = (await h.store.readChanges(head, 100)).changes.filter((c) => c.topic === 'task').map((c) => c.ref);
        assert.deepEqual(new Set(changed), new Set([...res.ended.map((r) => r!.task.id), ...res.claims.map((c) => c.task.id)]));
        assert.equal(changed.length, 5, 'one feed row per task written');
        const counts = await h.store.countTasksByState();
        assert.deepEqual([counts.waiting, counts.running, counts.succeeded, counts.retrying], [0, 2, 1, 2]);
      });

      it('with the claimed tasks: a returned attempt (given back unstarted) waits again, no retry or loss counted, and a refill may take it', async () => {
        const t = await h.submit({ now: T0 });
        const [c] = await h.store.claimMany(worker(), 1, T0 + 10, LEASE);
        const res = await h.store.endAndClaim([exit(c!, 'returned')], refill(1, 'w2'), T0 + 20);
        const r = res.ended[0]!;
        assert.deepEqual([r.task.state, r.task.retriesUsed, r.task.lostCount, r.attempt.state, r.attempt.endedAt], ['waiting', 0, 0, 'lost', T0 + 20]);
        assert.deepEqual(await h.store.getAttempt(c!.attempt.id), r.attempt);
        const ev = (await h.store.listEvents(t.id)).find((e) => e.reason === 'returned');
        assert.deepEqual([ev?.from, ev?.to, ev?.actor], ['running', 'waiting', 'worker:w1']);
        // The same transaction's refill (another worker's here) claims it again: attempt 2.
        assert.deepEqual(res.claims.map((x) => [x.task.id, x.attempt.workerId, x.attempt.number]), [[t.id, 'w2', 2]]);
        assert.deepEqual(await h.store.getTask(t.id), res.claims[0]!.task);
      });

      it('with a claimed task the rows no longer match (cancelled, or other retries): ends as the rows say', async () => {
        for (let i = 0; i < 2; i++) await h.submit({ now: T0 + i, retry: { maxRetries: 1 } });
        const [cancelled, stale] = await h.store.claimMany(worker(), 2, T0 + 10, LEASE);
        await h.store.cancelTask(cancelled!.task.id, 'user:alice', T0 + 15);
        const res = await h.store.endAndClaim(
          // The stale claim believes its one retry is used up: the rows (none used) retry it.
          [exit(cancelled!, 'cancelled'), exit(stale!, 'failed', { claimed: { ...claimedOf(stale!), retriesUsed: 1 } })],
          null,
          T0 + 20,
        );
        assert.deepEqual(
          res.ended.map((r) => [r?.task.state, r?.attempt.state, r?.task.retriesUsed]),
          [
            ['cancelled', 'cancelled', 0],
            ['retrying', 'failed', 1],
          ],
        );
        assert.deepEqual(await h.store.getTask(stale!.task.id), res.ended[1]!.task);
        assert.equal((await h.store.listEvents(stale!.task.id)).filter((e) => e.to === 'retrying').length, 1);
      });

      it('with claimed tasks, a forged token or another worker\'s attempt is refused and changes nothing; the refill still runs', async () => {
        await h.submit({ now: T0 });
        await h.submit({ now: T0 + 1 });
        const waiting = await h.submit({ now: T0 + 2 });
        const [a] = await h.store.claimMany(worker(), 1, T0 + 10, LEASE);
        const [b] = await h.store.claimMany(worker('w2'), 1, T0 + 10, LEASE);
        const before = [await h.snapshot(a!.task.id), await h.snapshot(b!.task.id)];
        const res = await h.store.endAndClaim([exit(a!, 'succeeded', { token: GUESSED_TOKEN }), exit(b!, 'succeeded')], refill(1), T0 + 20);
        assert.deepEqual(res.ended, [null, null]);
        assert.deepEqual(res.claims.map((c) => c.task.id), [waiting.id]);
        assert.deepEqual([await h.snapshot(a!.task.id), await h.snapshot(b!.task.id)], before);
      });

      it('with claimed tasks, an end that requeues its task (lost) is claimable by the same call', async () => {
        const a = await h.submit({ now: T0 });
        const [ca] = await h.store.claimMany(worker(), 1, T0 + 10, LEASE);
        const res = await h.store.endAndClaim([exit(ca!, 'lost')], refill(1), T0 + 20);
        assert.equal(res.ended[0]?.task.state, 'waiting');
        assert.deepEqual(res.claims.map((c) => [c.task.id, c.attempt.number]), [[a.id, 2]]);
      });

      it('refuses a refill max that is not a positive integer, changing nothing', async () => {
        const t = await h.submit();
        const [c] = await h.store.claimMany(worker(), 1, T0 + 1, LEASE);
        const end = { attemptId: c!.attempt.id, fencingToken: c!.attempt.fencingToken, end: endInput('succeeded'), actor: 'worker:w1', guard: { workerId: 'w1' } };
        await assert.rejects(h.store.endAndClaim([end], refill(0), T0 + 2), (e: Error & { field?: string }) => e.field === 'max');
        assert.equal((await h.store.getTask(t.id))?.state, 'running');
      });
    });
  });
}
