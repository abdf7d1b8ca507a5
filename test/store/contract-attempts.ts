/** Store contract, attempts: claims (placement), ends, the fence on reports, leases and stop orders. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CANCEL_STOP_REASON } from '../../src/core/cancel-plan.js';
import { FENCING_TOKEN_PATTERN } from '../../src/core/ids.js';
import { satisfies } from '../../src/core/placement.js';
import { DEFAULT_MAX_LOST } from '../../src/core/retry-policy.js';
import type { Claim } from '../../src/store/store.js';
import { chunk, endInput, EXPIRED, GUESSED_TOKEN, Harness, LEASE, T0, type Opened } from './contract-harness.js';

export function runAttemptContract(name: string, open: Opened): void {
  describe(`Store contract, attempts: ${name}`, () => {
    const h = Harness.use(open);
    const anyWorker = (id = 'w1') => ({ id, labels: {} });

    describe('claimNext', () => {
      it('returns null when nothing is waiting', async () => {
        assert.equal(await h.store.claimNext(anyWorker(), T0, LEASE), null);
      });

      it('claims highest priority first, then oldest, and records the attempt and event', async () => {
        const low = await h.submit({ priority: 0, now: T0 });
        const hi1 = await h.submit({ priority: 5, now: T0 + 1 });
        const hi2 = await h.submit({ priority: 5, now: T0 + 2 });
        const neg = await h.submit({ priority: -1, now: T0 + 3 });
        const mid = await h.submit({ priority: 1, now: T0 + 4 });

        const now = T0 + 100;
        const first = await h.claim(now, 'w7');
        assert.equal(first.task.id, hi1.id);
        assert.equal(first.task.state, 'running');
        assert.equal(first.task.attempts, 1);
        assert.equal(first.task.currentAttemptId, first.attempt.id);
        assert.equal(first.task.updatedAt, now);
        assert.match(first.attempt.fencingToken, new RegExp(FENCING_TOKEN_PATTERN));
        assert.deepEqual(first.attempt, {
          id: first.attempt.id,
          fencingToken: first.attempt.fencingToken,
          stopReason: null,
          taskId: hi1.id,
          number: 1,
          workerId: 'w7',
          state: 'running',
          startedAt: now,
          endedAt: null,
          leaseExpiresAt: first.attempt.leaseExpiresAt,
          exitCode: null,
          signal: null,
          error: null,
          durationMs: null,
        });
        if (h.callerClock) assert.equal(first.attempt.leaseExpiresAt, now + LEASE);
        assert.deepEqual(await h.store.getTask(hi1.id), first.task);
        assert.deepEqual(await h.store.getAttempt(first.attempt.id), first.attempt);
        assert.deepEqual(await h.store.listAttempts(hi1.id), [first.attempt]);
        const ev = (await h.store.listEvents(hi1.id)).at(-1)!;
        assert.deepEqual([ev.from, ev.to, ev.reason, ev.at, ev.detail], ['waiting', 'running', 'claimed', now, { attemptId: first.attempt.id, attempt: 1, workerId: 'w7' }]);
        // The token is a secret of the attempt: no event carries it.
        assert.ok(!JSON.stringify(await h.store.listEvents(hi1.id)).includes(first.attempt.fencingToken));

        const order = [first.task.id];
        for (let i = 0; i < 4; i++) order.push((await h.claim(now)).task.id);
        assert.deepEqual(order, [hi1.id, hi2.id, mid.id, low.id, neg.id]);
        assert.equal(await h.store.claimNext(anyWorker(), now, LEASE), null);
      });

      it('claims each task exactly once under concurrent callers', async () => {
        const ids = new Set<string>();
        for (let i = 0; i < 12; i++) ids.add((await h.submit({ priority: i % 3, now: T0 + i })).id);
        const results = await Promise.all(Array.from({ length: 40 }, (_, i) => h.store.claimNext(anyWorker(`w${i % 4}`), T0 + 100, LEASE)));
        const claims = results.filter((c): c is Claim => c !== null);
        assert.equal(claims.length, 12);
        assert.deepEqual(new Set(claims.map((c) => c.task.id)), ids);
        assert.equal(new Set(claims.map((c) => c.attempt.id)).size, 12);
        for (const id of ids) {
          const t = await h.store.getTask(id);
          assert.equal(t?.state, 'running');
          assert.equal(t?.attempts, 1);
          assert.equal((await h.store.listAttempts(id)).length, 1);
          assert.equal((await h.store.listEvents(id)).filter((e) => e.reason === 'claimed').length, 1);
        }
      });

      it('gives every attempt its own random fencing token', async () => {
        await h.submit({ retry: { maxRetries: 5 } });
        await h.submit({ retry: { maxRetries: 5 } });
        const tokens = new Set<string>();
        let now = T0;
        for (let i = 0; i < 6; i++) {
          const c = await h.claim(now);
          assert.match(c.attempt.fencingToken, new RegExp(FENCING_TOKEN_PATTERN));
          assert.notEqual(c.attempt.fencingToken, String(c.attempt.id));
          tokens.add(c.attempt.fencingToken);
          await h.end(c, 'lost', now + 1);
          now += 10;
        }
        assert.equal(tokens.size, 6);
      });
    });

    describe('claimNext placement (requires ⊆ labels)', () => {
      const claimAs = (labels: Record<string, string>, id = 'w1') => h.store.claimNext({ id, labels }, T0 + 10, LEASE);

      it('a task runs only on a worker whose labels hold every required pair with the same value', async () => {
        const t = await h.submit({ requires: { os: 'linux', gpu: 'a100' } });
        assert.equal(await claimAs({}), null);
        assert.equal(await claimAs({ os: 'linux' }), null, 'a missing key');
        assert.equal(await claimAs({ os: 'linux', gpu: 'h100' }), null, 'the same key with another value');
        assert.equal(await claimAs({ os: 'Linux', gpu: 'a100' }), null, 'values compare exactly');
        assert.equal(await claimAs({ OS: 'linux', gpu: 'a100' }), null, 'keys compare exactly');
        assert.equal((await h.store.getTask(t.id))?.state, 'waiting');
        const c = await claimAs({ os: 'linux', gpu: 'a100', zone: 'b' }, 'w9');
        assert.equal(c?.task.id, t.id);
        assert.equal(c?.attempt.workerId, 'w9');
      });

      it('a task with no requirement runs anywhere', async () => {
        const t = await h.submit({ requires: {} });
        assert.equal((await claimAs({ any: 'thing' }))?.task.id, t.id);
        const u = await h.submit({ requires: {} });
        assert.equal((await claimAs({}))?.task.id, u.id);
      });

      it('a worker skips tasks it cannot run and takes the best one it can, leaving the rest for others', async () => {
        const gpu = await h.submit({ priority: 9, requires: { gpu: 'yes' }, now: T0 });
        const arm = await h.submit({ priority: 5, requires: { arch: 'arm64' }, now: T0 + 1 });
        const plain = await h.submit({ priority: 1, now: T0 + 2 });
        assert.equal((await claimAs({ arch: 'arm64' }))?.task.id, arm.id);
        assert.equal((await claimAs({ arch: 'arm64' }))?.task.id, plain.id);
        assert.equal(await claimAs({ arch: 'arm64' }), null);
        assert.equal((await claimAs({ gpu: 'yes' }))?.task.id, gpu.id);
      });

      it('keys and values with JSON-path and SQL characters are matched literally', async () => {
        const odd = { 'a.b': 'x"y', "it's": '%_*', '$[0]': '' };
        const t = await h.submit({ requires: odd });
        assert.equal(await claimAs({ a: 'x"y', "it's": '%_*', '$[0]': '' }), null);
        assert.equal(await claimAs({ 'a.b': 'x"y', "it's": '%', '$[0]': '' }), null);
        assert.equal((await claimAs({ ...odd }))?.task.id, t.id);
      });

      it('agrees with core/placement.ts satisfies() on a grid of cases', async () => {
        const requirements: Record<string, string>[] = [{}, { os: 'linux' }, { os: 'mac' }, { os: 'linux', gpu: '1' }, { gpu: '1' }];
        const workers: Record<string, string>[] = [{}, { os: 'linux' }, { os: 'linux', gpu: '1' }, { os: 'mac', gpu: '1' }, { gpu: '0' }];
        for (const labels of workers) {
          const ids = new Map<string, Record<string, string>>();
          for (const requires of requirements) ids.set((await h.submit({ requires })).id, requires);
          const claimed = new Set<string>();
          for (;;) {
            const c = await claimAs(labels);
            if (!c) break;
            claimed.add(c.task.id);
          }
          for (const [id, requires] of ids) {
            assert.equal(claimed.has(id), satisfies(labels, requires), `labels ${JSON.stringify(labels)} requires ${JSON.stringify(requires)}`);
            if (!claimed.has(id)) await h.store.cancelTask(id, 'user:alice', T0 + 20);
          }
        }
      });
    });

    describe('endAttempt', () => {
      it('success: task succeeded, result recorded, attempt closed, one event', async () => {
        const t = await h.submit();
        const c = await h.claim(T0 + 1);
        const r = await h.end(c, 'succeeded', T0 + 50);
        assert.ok(r);
        assert.equal(r.task.state, 'succeeded');
        assert.deepEqual(r.task.result, { outcome: 'succeeded', attempt: 1, exitCode: 0, signal: null, error: null, durationMs: 25 });
        assert.equal(r.task.updatedAt, T0 + 50);
        assert.equal(r.task.retriesUsed, 0);
        assert.deepEqual(r.attempt, { ...c.attempt, state: 'succeeded', endedAt: T0 + 50, exitCode: 0, durationMs: 25 });
        assert.deepEqual(await h.store.getTask(t.id), r.task);
        assert.deepEqual(await h.store.getAttempt(c.attempt.id), r.attempt);
        const events = await h.store.listEvents(t.id);
        assert.deepEqual(
          events.map((e) => e.reason),
          ['submitted', 'released', 'claimed', 'attempt_succeeded'],
        );
        const last = events.at(-1)!;
        assert.deepEqual([last.from, last.to, last.actor, last.at], ['running', 'succeeded', 'worker:w1', T0 + 50]);
        assert.equal(last.detail?.attemptId, c.attempt.id);
      });

      it('failures under the default policy: retrying after 1 s, 2 s, 4 s, then failed', async () => {
        const t = await h.submit();
        let now = T0;
        const delays = [1000, 2000, 4000];
        for (let i = 0; i < 3; i++) {
          const c = await h.claim(now);
          assert.equal(c.attempt.number, i + 1);
          now += 100;
          const r = await h.end(c, 'failed', now);
          assert.ok(r);
          assert.equal(r.task.state, 'retrying');
          assert.equal(r.task.retriesUsed, i + 1);
          assert.equal(r.task.runAfter, now + delays[i]!);
          assert.equal(r.task.result, null);
          assert.equal(r.attempt.state, 'failed');
          assert.equal(r.attempt.exitCode, 1);
          // What the end returns is what it stored (the SQLite store builds these rows rather than reading them back).
          assert.deepEqual(await h.store.getTask(t.id), r.task);
          assert.deepEqual(await h.store.getAttempt(c.attempt.id), r.attempt);
          // Not claimable during the backoff.
          assert.equal(await h.store.claimNext(anyWorker(), now, LEASE), null);
          assert.deepEqual(await h.store.promoteDue(now + delays[i]! - 1, 100), []);
          now += delays[i]!;
          assert.deepEqual(await h.store.promoteDue(now, 100), [t.id]);
        }
        const c = await h.claim(now);
        assert.equal(c.attempt.number, 4);
        const r = await h.end(c, 'failed', now + 5);
        assert.ok(r);
        assert.equal(r.task.state, 'failed');
        assert.equal(r.task.runAfter, null);
        assert.equal(r.task.attempts, 4);
        assert.deepEqual(r.task.result, { outcome: 'failed', attempt: 4, exitCode: 1, signal: null, error: null, durationMs: 25 });
        assert.deepEqual(await h.store.getTask(t.id), r.task);
        assert.deepEqual(
          (await h.store.listEvents(t.id)).map((e) => `${e.from}>${e.to}:${e.reason}`),
          [
            'null>ready:submitted',
            'ready>waiting:released',
            ...Array(3).fill(['waiting>running:claimed', 'running>retrying:attempt_failed', 'retrying>waiting:backoff_elapsed']).flat(),
            'waiting>running:claimed',
            'running>failed:retries_exhausted',
          ],
        );
        assert.deepEqual(
          (await h.store.listAttempts(t.id)).map((a) => [a.number, a.state]),
          [
            [1, 'failed'],
            [2, 'failed'],
            [3, 'failed'],
            [4, 'failed'],
          ],
        );
      });

      it('maxRetries 0: the first failure is final', async () => {
        await h.submit({ retry: { maxRetries: 0 } });
        const r = await h.end(await h.claim(), 'failed', T0 + 1);
        assert.equal(r?.task.state, 'failed');
        assert.equal(r?.task.result?.outcome, 'failed');
      });

      it('timed_out counts as a failed attempt', async () => {
        const t = await h.submit();
        const r = await h.end(await h.claim(), 'timed_out', T0 + 10);
        assert.ok(r);
        assert.equal(r.task.state, 'retrying');
        assert.equal(r.task.retriesUsed, 1);
        assert.equal(r.task.runAfter, T0 + 10 + 1000);
        assert.equal(r.attempt.state, 'timed_out');
        assert.equal(r.attempt.signal, 'SIGTERM');
        assert.equal((await h.store.listEvents(t.id)).at(-1)?.reason, 'attempt_timed_out');
      });

      it('a worker that stops the attempt itself (cancelled while the task runs) uses a retry', async () => {
        await h.submit();
        const r = await h.end(await h.claim(), 'cancelled', T0 + 10);
        assert.equal(r?.task.state, 'retrying');
        assert.equal(r?.task.retriesUsed, 1);
        assert.equal(r?.attempt.state, 'cancelled');
      });

      it('lost: back to waiting at once without using a retry', async () => {
        const t = await h.submit();
        const c = await h.claim(T0);
        const r = await h.end(c, 'lost', T0 + LEASE + 1);
        assert.ok(r);
        assert.equal(r.task.state, 'waiting');
        assert.equal(r.task.lostCount, 1);
        assert.equal(r.task.retriesUsed, 0);
        assert.equal(r.task.runAfter, null);
        assert.equal(r.task.result, null);
        assert.equal(r.attempt.state, 'lost');
        assert.deepEqual(await h.store.getTask(t.id), r.task);
        assert.deepEqual(await h.store.getAttempt(c.attempt.id), r.attempt);
        assert.equal((await h.store.listEvents(t.id)).at(-1)?.reason, 'worker_lost');
        const again = await h.claim(T0 + LEASE + 2);
        assert.equal(again.task.id, t.id);
        assert.equal(again.attempt.number, 2);
        assert.deepEqual(await h.store.getTask(t.id), again.task);
        assert.deepEqual(await h.store.getAttempt(again.attempt.id), again.attempt);
      });

      it('returned (a queued attempt given back unstarted): back to waiting, neither a retry nor the lost count used', async () => {
        const t = await h.submit();
        const c = await h.claim(T0);
        const r = await h.end(c, 'returned', T0 + 5);
        assert.ok(r);
        assert.deepEqual([r.task.state, r.task.lostCount, r.task.retriesUsed, r.task.runAfter, r.task.result], ['waiting', 0, 0, null, null]);
        // The attempts table keeps its six states: a returned attempt is stored lost.
        assert.equal(r.attempt.state, 'lost');
        assert.deepEqual(await h.store.getTask(t.id), r.task);
        assert.deepEqual(await h.store.getAttempt(c.attempt.id), r.attempt);
        const ev = (await h.store.listEvents(t.id)).at(-1)!;
        assert.deepEqual([ev.from, ev.to, ev.reason], ['running', 'waiting', 'returned']);
        assert.equal((ev.detail as { outcome?: string }).outcome, 'returned');
        const again = await h.claim(T0 + 6);
        assert.deepEqual([again.task.id, again.attempt.number], [t.id, 2]);
        // Returned more often than the lost cap allows losses: still never failed by it.
        let now = T0 + 10;
        let last = again;
        for (let i = 0; i < DEFAULT_MAX_LOST + 2; i++) {
          assert.equal((await h.end(last, 'returned', now))?.task.state, 'waiting');
          last = await h.claim(now + 1);
          now += 10;
        }
        assert.equal((await h.store.getTask(t.id))?.lostCount, 0);
      });

      it(`lost more than the cap (${DEFAULT_MAX_LOST}) times: failed`, async () => {
        const t = await h.submit();
        let now = T0;
        for (let i = 1; i <= DEFAULT_MAX_LOST; i++) {
          const r = await h.end(await h.claim(now), 'lost', now + 1);
          assert.equal(r?.task.state, 'waiting');
          assert.equal(r?.task.lostCount, i);
          now += 10;
        }
        const r = await h.end(await h.claim(now), 'lost', now + 1);
        assert.ok(r);
        assert.equal(r.task.state, 'failed');
        assert.equal(r.task.lostCount, DEFAULT_MAX_LOST + 1);
        assert.equal(r.task.retriesUsed, 0);
        assert.equal(r.task.result?.outcome, 'lost');
        assert.match(r.task.result?.error ?? '', /lost/);
        assert.equal((await h.store.listEvents(t.id)).at(-1)?.reason, 'lost_cap_exceeded');
      });
    });

    describe('fencing', () => {
      /** Two running attempts on two workers, so each has a real token the other's reports could carry. */
      const twoRunning = async () => {
        const t = await h.submit({ now: T0 });
        const u = await h.submit({ now: T0 + 1 });
        const mine = await h.claim(T0 + 2, 'w1');
        const other = await h.claim(T0 + 2, 'w2');
        assert.deepEqual([mine.task.id, other.task.id], [t.id, u.id]);
        return { mine, other };
      };
      /** Presented (token, worker) pairs that must all be refused for `mine`. */
      const forgeries = (mine: Claim, other: Claim) => [
        { what: 'wrong worker (right token)', token: mine.attempt.fencingToken, worker: 'w2', reason: 'wrong_worker' },
        { what: 'wrong worker and its own token', token: other.attempt.fencingToken, worker: 'w2', reason: 'wrong_worker' },
        { what: 'another attempt’s token', token: other.attempt.fencingToken, worker: 'w1', reason: 'stale_token' },
        { what: 'a guessed well-formed token', token: GUESSED_TOKEN, worker: 'w1', reason: 'stale_token' },
        { what: 'the attempt id as token (protocol v1)', token: String(mine.attempt.id), worker: 'w1', reason: 'stale_token' },
        { what: 'an empty token', token: '', worker: 'w1', reason: 'stale_token' },
        { what: 'the token in upper case', token: mine.attempt.fencingToken.toUpperCase(), worker: 'w1', reason: 'stale_token' },
      ];

      it('checkReport accepts only the current running attempt, from its worker, with its own token', async () => {
        const { mine, other } = await twoRunning();
        const ok = await h.check(mine);
        assert.ok(ok.ok);
        assert.deepEqual(ok.attempt, mine.attempt);
        assert.deepEqual(ok.task, mine.task);
        for (const f of forgeries(mine, other)) {
          assert.deepEqual(await h.store.checkReport(mine.attempt.id, f.token, f.worker), { ok: false, reason: f.reason }, f.what);
        }
        assert.deepEqual(await h.store.checkReport(other.attempt.id + 1000, GUESSED_TOKEN, 'w1'), { ok: false, reason: 'unknown_attempt' });
        await h.end(mine, 'succeeded', T0 + 5);
        assert.deepEqual(await h.check(mine), { ok: false, reason: 'attempt_ended' });
        // A wrong worker is named before anything about the token or the attempt's state.
        assert.deepEqual(await h.store.checkReport(mine.attempt.id, GUESSED_TOKEN, 'w2'), { ok: false, reason: 'wrong_worker' });
      });

      it('endAttempt from the wrong worker or with a wrong or guessed token returns null and changes nothing', async () => {
        const { mine, other } = await twoRunning();
        const before = await h.snapshot(mine.task.id);
        for (const f of forgeries(mine, other)) {
          for (const outcome of ['succeeded', 'failed', 'cancelled'] as const) {
            const r = await h.store.endAttempt(mine.attempt.id, f.token, endInput(outcome), `worker:${f.worker}`, T0 + 5, { workerId: f.worker });
            assert.equal(r, null, `${f.what} / ${outcome}`);
          }
        }
        assert.equal(await h.store.endAttempt(other.attempt.id + 1000, GUESSED_TOKEN, endInput('failed'), 'worker:w1', T0 + 5, { workerId: 'w1' }), null);
        assert.deepEqual(await h.snapshot(mine.task.id), before);
        // The real report still works afterwards.
        assert.equal((await h.end(mine, 'succeeded', T0 + 6))?.task.state, 'succeeded');
      });

      it('appendLogs from the wrong worker or with a wrong or guessed token writes nothing and returns false', async () => {
        const { mine, other } = await twoRunning();
        const before = await h.snapshot(mine.task.id);
        for (const f of forgeries(mine, other)) {
          assert.equal(await h.store.appendLogs(mine.attempt.id, f.token, f.worker, [chunk(0, 'forged')], T0 + 5), false, f.what);
        }
        assert.deepEqual(await h.snapshot(mine.task.id), before);
        assert.deepEqual(await h.store.readLogs(other.task.id, 0, 100), []);
        assert.equal(await h.log(mine, [chunk(0, 'real')], T0 + 6), true);
        assert.deepEqual((await h.store.readLogs(mine.task.id, 0, 100)).map((l) => l.data.toString()), ['real']);
      });

      it('a second end of the same attempt returns null: the result is recorded once', async () => {
        const t = await h.submit();
        const c = await h.claim();
        assert.ok(await h.end(c, 'succeeded', T0 + 5));
        const before = await h.snapshot(t.id);
        assert.equal(await h.end(c, 'failed', T0 + 6), null);
        assert.equal(await h.end(c, 'lost', T0 + 7), null);
        assert.deepEqual(await h.snapshot(t.id), before);
      });

      it('a report from an old attempt after the task was claimed again is fenced', async () => {
        const t = await h.submit();
        const old = await h.claim(T0);
        await h.end(old, 'lost', T0 + LEASE + 1);
        const current = await h.claim(T0 + LEASE + 2, 'w2');
        assert.notEqual(current.attempt.id, old.attempt.id);
        const before = await h.snapshot(t.id);
        assert.equal(await h.end(old, 'succeeded', T0 + LEASE + 3), null);
        assert.equal(await h.log(old, [chunk(0, 'late')], T0 + LEASE + 3), false);
        assert.deepEqual(await h.check(old), { ok: false, reason: 'attempt_ended' });
        assert.deepEqual(await h.snapshot(t.id), before);
        assert.equal((await h.check(current)).ok, true);
        // The old worker cannot use the new attempt's token either.
        assert.deepEqual(await h.store.checkReport(current.attempt.id, current.attempt.fencingToken, 'w1'), { ok: false, reason: 'wrong_worker' });
      });

      it('appendLogs after the end writes nothing and returns false', async () => {
        const t = await h.submit();
        const c = await h.claim();
        await h.end(c, 'succeeded', T0 + 2);
        assert.equal(await h.log(c, [chunk(0, 'x')], T0 + 3), false);
        assert.deepEqual(await h.store.readLogs(t.id, 0, 100), []);
      });

      it('recordFencedReport writes a fenced_report event and does not change the task', async () => {
        const t = await h.submit();
        const old = await h.claim(T0);
        await h.end(old, 'lost', T0 + 1);
        await h.claim(T0 + 2);
        const taskBefore = await h.store.getTask(t.id);
        await h.store.recordFencedReport(old.attempt.id, 'exit', 'worker:w1', T0 + 3);
        assert.deepEqual(await h.store.getTask(t.id), taskBefore);
        const ev = (await h.store.listEvents(t.id)).at(-1)!;
        assert.deepEqual(
          { from: ev.from, to: ev.to, reason: ev.reason, actor: ev.actor, at: ev.at, detail: ev.detail },
          { from: 'running', to: 'running', reason: 'fenced_report', actor: 'worker:w1', at: T0 + 3, detail: { attemptId: old.attempt.id, kind: 'exit' } },
        );
        // An attempt that never existed has no task to record on; it is not an error.
        await h.store.recordFencedReport(old.attempt.id + 1000, 'log', 'worker:w1', T0 + 4);
      });
    });

    describe('leases', () => {
      it('renewLeases extends only the running attempts of that worker among the ids; expiredAttempts finds the rest', async () => {
        for (let i = 0; i < 4; i++) await h.submit({ now: T0 + i });
        const a = await h.claim(T0, 'w1', { leaseMs: EXPIRED });
        const b = await h.claim(T0, 'w1', { leaseMs: EXPIRED });
        const c = await h.claim(T0, 'w2', { leaseMs: EXPIRED });
        const d = await h.claim(T0, 'w1', { leaseMs: EXPIRED });
        const ids = (xs: { id: number }[]) => new Set(xs.map((x) => x.id));
        assert.deepEqual(ids(await h.store.expiredAttempts(T0, 100)), ids([a.attempt, b.attempt, c.attempt, d.attempt]));

        await h.end(d, 'succeeded', T0 + 5);
        // c belongs to w2, d has ended, 999999 does not exist.
        const r = await h.store.renewLeases('w1', [a.attempt.id, b.attempt.id, c.attempt.id, d.attempt.id, 999_999], T0 + 10, LEASE);
        assert.deepEqual(new Set(r.renewed), new Set([a.attempt.id, b.attempt.id]));
        const renewedA = await h.store.getAttempt(a.attempt.id);
        assert.ok(renewedA!.leaseExpiresAt > a.attempt.leaseExpiresAt);
        if (h.callerClock) assert.equal(renewedA!.leaseExpiresAt, T0 + 10 + LEASE);
        assert.equal((await h.store.getAttempt(c.attempt.id))?.leaseExpiresAt, c.attempt.leaseExpiresAt);
        assert.equal((await h.store.getAttempt(d.attempt.id))?.leaseExpiresAt, d.attempt.leaseExpiresAt);
        assert.deepEqual(await h.store.renewLeases('w1', [], T0 + 10, LEASE), { renewed: [], stop: [] });

        const expired = await h.store.expiredAttempts(T0 + 10, 100);
        assert.deepEqual(
          expired.map((x) => x.id),
          [c.attempt.id],
        );
        assert.equal(expired[0]!.state, 'running');

        // The sweeper ends it as lost; it is then requeued and no longer expired.
        const lost = await h.sweep(c, T0 + 20);
        assert.equal(lost?.task.state, 'waiting');
        assert.equal(lost?.attempt.state, 'lost');
        assert.deepEqual(await h.store.expiredAttempts(T0 + 20, 100), []);
      });

      it('expiredAttempts returns at most `limit`, oldest lease first', async () => {
        for (let i = 0; i < 5; i++) await h.submit({ now: T0 + i });
        const claims: Claim[] = [];
        // Leases end 5 s, 4 s, ... 1 s ago: the first claim's lease is the oldest.
        for (let i = 0; i < 5; i++) claims.push(await h.claim(T0, 'w1', { leaseMs: -5000 + i * 1000 }));
        const first = await h.store.expiredAttempts(T0, 2);
        assert.deepEqual(
          first.map((a) => a.id),
          claims.slice(0, 2).map((c) => c.attempt.id),
        );
        for (const c of claims.slice(0, 2)) assert.ok(await h.sweep(c, T0));
        assert.deepEqual(
          (await h.store.expiredAttempts(T0, 2)).map((a) => a.id),
          claims.slice(2, 4).map((c) => c.attempt.id),
        );
        assert.equal((await h.store.expiredAttempts(T0, 100)).length, 3);
      });

      it('a heartbeat that renews before the sweeper ends the lease wins: the guarded end returns null and the task keeps running', async () => {
        const t = await h.submit();
        const c = await h.claim(T0, 'w1', { leaseMs: EXPIRED });
        // The sweeper read the attempt as expired ...
        assert.deepEqual((await h.store.expiredAttempts(T0, 10)).map((a) => a.id), [c.attempt.id]);
        // ... then the heartbeat renewed it before the sweeper's end ran.
        assert.deepEqual((await h.store.renewLeases('w1', [c.attempt.id], T0, LEASE)).renewed, [c.attempt.id]);
        const before = await h.snapshot(t.id);
        assert.equal(await h.sweep(c, T0), null);
        assert.deepEqual(await h.snapshot(t.id), before);
        assert.equal((await h.store.getTask(t.id))?.state, 'running');
        assert.equal((await h.check(c)).ok, true);
        assert.deepEqual(await h.store.expiredAttempts(T0, 10), []);
      });

      it('an expired lease the heartbeat did not renew: the guarded end ends the attempt lost and requeues the task', async () => {
        const t = await h.submit();
        const c = await h.claim(T0, 'w1', { leaseMs: EXPIRED });
        const r = await h.sweep(c, T0 + 1);
        assert.ok(r);
        assert.equal(r.attempt.state, 'lost');
        assert.equal(r.task.state, 'waiting');
        assert.equal(r.task.lostCount, 1);
        assert.equal((await h.store.listEvents(t.id)).at(-1)?.reason, 'worker_lost');
        // The late heartbeat renews nothing and is told to stop (and forget) the attempt.
        const late = await h.store.renewLeases('w1', [c.attempt.id], T0 + 2, LEASE);
        assert.deepEqual(late.renewed, []);
        assert.deepEqual(late.stop.map((s) => [s.attemptId, s.report]), [[c.attempt.id, false]]);
      });

      it('the guarded end of a lease that has not expired returns null', async () => {
        const t = await h.submit();
        const c = await h.claim(T0, 'w1', { leaseMs: LEASE });
        const before = await h.snapshot(t.id);
        assert.equal(await h.sweep(c, T0 + 1), null);
        assert.deepEqual(await h.snapshot(t.id), before);
      });

      it('renewLeases stop orders: a cancelled task’s running attempt must stop and report; others are stopped and forgotten', async () => {
        const tc = await h.submit({ now: T0 });
        await h.submit({ now: T0 + 1 });
        await h.submit({ now: T0 + 2 });
        const cancelled = await h.claim(T0 + 3, 'w1');
        const ended = await h.claim(T0 + 3, 'w1');
        const othersAttempt = await h.claim(T0 + 3, 'w2');
        const live = await (async () => {
          await h.submit({ now: T0 + 4 });
          return h.claim(T0 + 5, 'w1');
        })();
        await h.store.cancelTask(tc.id, 'user:alice', T0 + 6);
        await h.end(ended, 'succeeded', T0 + 7);

        const unknown = othersAttempt.attempt.id + 1000;
        const r = await h.store.renewLeases('w1', [cancelled.attempt.id, ended.attempt.id, othersAttempt.attempt.id, unknown, live.attempt.id], T0 + 8, LEASE);
        // The cancelled task's attempt keeps its lease until it reports (or the lease runs out).
        assert.deepEqual(new Set(r.renewed), new Set([cancelled.attempt.id, live.attempt.id]));
        const byId = new Map(r.stop.map((s) => [s.attemptId, s]));
        assert.deepEqual(byId.get(cancelled.attempt.id), { attemptId: cancelled.attempt.id, reason: CANCEL_STOP_REASON, report: true });
        for (const id of [ended.attempt.id, othersAttempt.attempt.id, unknown]) {
          const s = byId.get(id);
          assert.ok(s, `a stop order for ${id}`);
          assert.equal(s.report, false);
          assert.ok(s.reason.length > 0);
        }
        assert.equal(byId.has(live.attempt.id), false, 'a live attempt gets no stop order');
        assert.equal(r.stop.length, 4);
        // The other worker's attempt is untouched.
        assert.equal((await h.store.getAttempt(othersAttempt.attempt.id))?.leaseExpiresAt, othersAttempt.attempt.leaseExpiresAt);
      });

      it('a stop order is repeated on every renewal until the attempt ends', async () => {
        const t = await h.submit();
        const c = await h.claim(T0, 'w1');
        await h.store.cancelTask(t.id, 'user:alice', T0 + 1);
        for (let i = 0; i < 3; i++) {
          const r = await h.store.renewLeases('w1', [c.attempt.id], T0 + 2 + i, LEASE);
          assert.deepEqual(r.stop, [{ attemptId: c.attempt.id, reason: CANCEL_STOP_REASON, report: true }]);
        }
        await h.end(c, 'cancelled', T0 + 10);
        const after = await h.store.renewLeases('w1', [c.attempt.id], T0 + 11, LEASE);
        assert.deepEqual(after.renewed, []);
        assert.deepEqual(after.stop.map((s) => [s.attemptId, s.report]), [[c.attempt.id, false]]);
      });
    });
  });
}
