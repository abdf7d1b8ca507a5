/** Store contract, tasks: submit (idempotent), read, list, cancel, retry, backoff promotion, migrate. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CANCEL_STOP_REASON } from '../../src/core/cancel-plan.js';
import { ConflictError, NotFoundError } from '../../src/core/errors.js';
import { newTaskId } from '../../src/core/ids.js';
import type { Task } from '../../src/core/task.js';
import { EXPIRED, Harness, LEASE, makeSpec, T0, type Opened } from './contract-harness.js';

export function runTaskContract(name: string, open: Opened): void {
  describe(`Store contract, tasks: ${name}`, () => {
    const h = Harness.use(open);

    describe('createTask', () => {
      it('stores the spec as a waiting task and writes submitted + released events', async () => {
        const spec = makeSpec({
          name: 'nightly build',
          command: null,
          args: [],
          script: 'echo "ünïcödé"\nexit 0',
          interpreter: ['bash', '-e'],
          env: { A: '1', B: 'two words' },
          timeoutMs: 30_000,
          retry: { maxRetries: 5, baseDelayMs: 250, factor: 1.5, maxDelayMs: 10_000 },
          priority: -7,
          labels: { team: 'infra' },
          requires: { os: 'linux', 'gpu.kind': 'a100' },
        });
        const id = newTaskId(T0);
        const r = await h.store.createTask(id, 'bob', spec, 'user:bob', T0);
        assert.equal(r.created, true);
        assert.deepEqual(r.task, {
          ...spec,
          id,
          owner: 'bob',
          state: 'waiting',
          attempts: 0,
          retriesUsed: 0,
          lostCount: 0,
          runAfter: null,
          currentAttemptId: null,
          createdAt: T0,
          updatedAt: T0,
          result: null,
          outputs: null,
          scheduleId: null,
          scheduledAt: null,
          dagRunId: null,
          dagStep: null,
          skipReason: null,
        });
        assert.deepEqual(await h.store.getTask(id), r.task);

        const events = await h.store.listEvents(id);
        assert.equal(events.length, 2);
        assert.deepEqual(
          events.map((e) => [e.taskId, e.from, e.to, e.reason, e.actor, e.at]),
          [
            [id, null, 'ready', 'submitted', 'user:bob', T0],
            [id, 'ready', 'waiting', 'released', 'user:bob', T0],
          ],
        );
        assert.ok(events[0]!.id < events[1]!.id);
      });

      it('rejects a duplicate id with ConflictError and keeps the first task', async () => {
        const t = await h.submit({ name: 'first' });
        await assert.rejects(h.store.createTask(t.id, 'alice', makeSpec({ name: 'second' }), 'user:alice', T0 + 1), ConflictError);
        assert.equal((await h.store.getTask(t.id))?.name, 'first');
        assert.equal((await h.store.listEvents(t.id)).length, 2);
      });

      it('getTask of an unknown id is null', async () => {
        assert.equal(await h.store.getTask(newTaskId(T0)), null);
        assert.deepEqual(await h.store.listEvents(newTaskId(T0)), []);
        assert.deepEqual(await h.store.listAttempts(newTaskId(T0)), []);
        assert.equal(await h.store.getAttempt(987654), null);
      });
    });

    describe('createTask with an idempotency key', () => {
      const idem = (key: string, requestHash = 'hash-1') => ({ key, requestHash });

      it('the same owner and key return the first task (created: false) and write nothing', async () => {
        const first = await h.submit({ name: 'once', idem: idem('k1') });
        const before = await h.snapshot(first.id);
        const otherId = newTaskId(T0 + 5);
        const again = await h.store.createTask(otherId, 'alice', makeSpec({ name: 'once' }), 'user:alice', T0 + 5, idem('k1'));
        assert.equal(again.created, false);
        assert.deepEqual(again.task, first);
        assert.equal(await h.store.getTask(otherId), null);
        assert.deepEqual(await h.store.listEvents(otherId), []);
        assert.deepEqual(await h.snapshot(first.id), before);
        assert.equal((await h.store.listTasks({ limit: 10 })).tasks.length, 1);
      });

      it('returns the first task in whatever state it is now', async () => {
        const first = await h.submit({ idem: idem('k1') });
        const done = await h.end(await h.claim(T0 + 1), 'succeeded', T0 + 2);
        const again = await h.store.createTask(newTaskId(T0 + 3), 'alice', makeSpec(), 'user:alice', T0 + 3, idem('k1'));
        assert.equal(again.created, false);
        assert.equal(again.task.id, first.id);
        assert.deepEqual(again.task, done?.task);
      });

      it('the same key with another request body is a ConflictError naming the Idempotency-Key; nothing is written', async () => {
        const first = await h.submit({ idem: idem('deploy-42', 'hash-1') });
        const otherId = newTaskId(T0 + 1);
        await assert.rejects(h.store.createTask(otherId, 'alice', makeSpec({ name: 'different' }), 'user:alice', T0 + 1, idem('deploy-42', 'hash-2')), (e: unknown) => {
          assert.ok(e instanceof ConflictError);
          assert.match(e.message, /Idempotency-Key/);
          assert.match(e.message, /deploy-42/);
          return true;
        });
        assert.equal(await h.store.getTask(otherId), null);
        assert.deepEqual((await h.store.listTasks({ limit: 10 })).tasks.map((t) => t.id), [first.id]);
      });

      it('keys are per owner: another owner with the same key gets its own task', async () => {
        const a = await h.submit({ owner: 'alice', idem: idem('k') });
        const b = await h.submit({ owner: 'bob', idem: idem('k', 'hash-other') });
        assert.notEqual(a.id, b.id);
        assert.equal((await h.store.getTask(b.id))?.owner, 'bob');
        // Each owner's repeat still finds its own task.
        const again = await h.store.createTask(newTaskId(T0 + 9), 'bob', makeSpec(), 'user:bob', T0 + 9, idem('k', 'hash-other'));
        assert.deepEqual([again.created, again.task.id], [false, b.id]);
      });

      it('without a key, equal submits are separate tasks', async () => {
        const a = await h.submit();
        const b = await h.submit();
        assert.notEqual(a.id, b.id);
      });

      it('concurrent submits with one key make exactly one task', async () => {
        const results = await Promise.all(
          Array.from({ length: 8 }, (_, i) => h.store.createTask(newTaskId(T0 + i), 'alice', makeSpec(), 'user:alice', T0 + i, idem('race'))),
        );
        assert.equal(results.filter((r) => r.created).length, 1);
        assert.equal(new Set(results.map((r) => r.task.id)).size, 1);
        const all = await h.store.listTasks({ limit: 100 });
        assert.equal(all.tasks.length, 1);
        assert.equal((await h.store.listEvents(all.tasks[0]!.id)).length, 2);
      });
    });

    describe('listTasks', () => {
      it('pages newest first with a keyset cursor, without duplicates or gaps', async () => {
        const ids: string[] = [];
        for (let i = 0; i < 7; i++) ids.push((await h.submit({ name: `t${i}`, now: T0 + i })).id);
        const newestFirst = [...ids].reverse();

        const p1 = await h.store.listTasks({ limit: 3 });
        assert.deepEqual(
          p1.tasks.map((t) => t.id),
          newestFirst.slice(0, 3),
        );
        assert.equal(p1.nextCursor, newestFirst[2]);

        const p2 = await h.store.listTasks({ limit: 3, cursor: p1.nextCursor! });
        assert.deepEqual(
          p2.tasks.map((t) => t.id),
          newestFirst.slice(3, 6),
        );
        assert.equal(p2.nextCursor, newestFirst[5]);

        const p3 = await h.store.listTasks({ limit: 3, cursor: p2.nextCursor! });
        assert.deepEqual(
          p3.tasks.map((t) => t.id),
          newestFirst.slice(6),
        );
        assert.equal(p3.nextCursor, null);

        const all = await h.store.listTasks({ limit: 100 });
        assert.deepEqual(
          all.tasks.map((t) => t.id),
          newestFirst,
        );
        assert.equal(all.nextCursor, null);
      });

      it('has no next page when exactly `limit` tasks remain', async () => {
        for (let i = 0; i < 6; i++) await h.submit({ now: T0 + i });
        const p1 = await h.store.listTasks({ limit: 3 });
        assert.equal(p1.tasks.length, 3);
        assert.ok(p1.nextCursor);
        const p2 = await h.store.listTasks({ limit: 3, cursor: p1.nextCursor });
        assert.equal(p2.tasks.length, 3);
        assert.equal(p2.nextCursor, null);
        assert.deepEqual(await h.store.listTasks({ limit: 5, cursor: p2.tasks[2]!.id }), { tasks: [], nextCursor: null });
      });

      it('filters by state', async () => {
        const a = await h.submit({ now: T0 });
        const b = await h.submit({ now: T0 + 1 });
        const c = await h.claim(T0 + 2);
        assert.equal(c.task.id, a.id);
        const running = await h.store.listTasks({ state: 'running', limit: 10 });
        assert.deepEqual(
          running.tasks.map((t) => [t.id, t.state]),
          [[a.id, 'running']],
        );
        const waiting = await h.store.listTasks({ state: 'waiting', limit: 10 });
        assert.deepEqual(
          waiting.tasks.map((t) => t.id),
          [b.id],
        );
        assert.deepEqual((await h.store.listTasks({ state: 'failed', limit: 10 })).tasks, []);
      });

      it('filters by owner', async () => {
        const a1 = await h.submit({ owner: 'alice' });
        await h.submit({ owner: 'bob' });
        const a2 = await h.submit({ owner: 'alice' });
        const page = await h.store.listTasks({ owner: 'alice', limit: 10 });
        assert.deepEqual(
          page.tasks.map((t) => t.id),
          [a2.id, a1.id],
        );
        assert.deepEqual((await h.store.listTasks({ owner: 'carol', limit: 10 })).tasks, []);
      });

      it('filters by name prefix, case-sensitively and with wildcard characters taken literally', async () => {
        const b1 = await h.submit({ name: 'build-web' });
        const b2 = await h.submit({ name: 'build-api' });
        await h.submit({ name: 'Build-docs' });
        await h.submit({ name: 'deploy-build' });
        const star = await h.submit({ name: 'a*b?[c]%_d' });
        await h.submit({ name: 'aXbYcZ' });
        await h.submit({ name: 'a%b' });

        const build = await h.store.listTasks({ namePrefix: 'build', limit: 10 });
        assert.deepEqual(
          build.tasks.map((t) => t.id),
          [b2.id, b1.id],
        );
        assert.deepEqual(
          (await h.store.listTasks({ namePrefix: 'build-a', limit: 10 })).tasks.map((t) => t.id),
          [b2.id],
        );
        assert.deepEqual(
          (await h.store.listTasks({ namePrefix: 'a*b?[c]%_', limit: 10 })).tasks.map((t) => t.id),
          [star.id],
        );
        assert.deepEqual(
          (await h.store.listTasks({ namePrefix: 'a*', limit: 10 })).tasks.map((t) => t.id),
          [star.id],
        );
        assert.deepEqual((await h.store.listTasks({ namePrefix: 'a_', limit: 10 })).tasks, []);
        assert.deepEqual((await h.store.listTasks({ namePrefix: 'zzz', limit: 10 })).tasks, []);
      });

      it('filters by name prefix with a backslash (an escape character in LIKE) taken literally', async () => {
        const back = await h.submit({ name: 'dir\\sub\\%job' });
        await h.submit({ name: 'dir-sub' });
        await h.submit({ name: 'dirXsub' });
        const ids = async (namePrefix: string) => (await h.store.listTasks({ namePrefix, limit: 10 })).tasks.map((t) => t.id);
        assert.deepEqual(await ids('dir\\'), [back.id]);
        assert.deepEqual(await ids('dir\\sub\\%'), [back.id]);
        assert.deepEqual(await ids('dir\\sub\\_'), []);
        assert.deepEqual(await ids('dir\\\\'), []);
      });

      it('filters by created range: createdAfter inclusive, createdBefore exclusive', async () => {
        const t = [];
        for (let i = 0; i < 5; i++) t.push(await h.submit({ now: T0 + i * 10 }));
        const ids = (page: { tasks: Task[] }) => page.tasks.map((x) => x.id);
        assert.deepEqual(ids(await h.store.listTasks({ createdAfter: T0 + 10, createdBefore: T0 + 30, limit: 10 })), [t[2]!.id, t[1]!.id]);
        assert.deepEqual(ids(await h.store.listTasks({ createdAfter: T0 + 25, limit: 10 })), [t[4]!.id, t[3]!.id]);
        assert.deepEqual(ids(await h.store.listTasks({ createdBefore: T0 + 10, limit: 10 })), [t[0]!.id]);
        assert.deepEqual(ids(await h.store.listTasks({ createdAfter: T0 + 41, limit: 10 })), []);
      });

      it('combines filters with pagination', async () => {
        const mine: string[] = [];
        for (let i = 0; i < 5; i++) {
          mine.push((await h.submit({ owner: 'alice', name: `job-${i}`, now: T0 + i })).id);
          await h.submit({ owner: 'bob', name: `job-${i}`, now: T0 + i });
          await h.submit({ owner: 'alice', name: `other-${i}`, now: T0 + i });
        }
        const seen: string[] = [];
        let cursor: string | undefined;
        for (let pages = 0; pages < 10; pages++) {
          const p = await h.store.listTasks({ owner: 'alice', namePrefix: 'job-', limit: 2, ...(cursor ? { cursor } : {}) });
          seen.push(...p.tasks.map((t) => t.id));
          if (p.nextCursor === null) break;
          cursor = p.nextCursor;
        }
        assert.deepEqual(seen, [...mine].reverse());
      });
    });

    describe('cancelTask', () => {
      it('cancels a waiting task; it is never claimed', async () => {
        const t = await h.submit();
        const r = await h.store.cancelTask(t.id, 'user:alice', T0 + 5);
        assert.equal(r.task.state, 'cancelled');
        assert.equal(r.task.updatedAt, T0 + 5);
        assert.equal(r.runningAttempt, null);
        const ev = (await h.store.listEvents(t.id)).at(-1)!;
        assert.deepEqual([ev.from, ev.to, ev.reason, ev.actor, ev.at], ['waiting', 'cancelled', 'cancel_requested', 'user:alice', T0 + 5]);
        assert.equal(await h.store.claimNext({ id: 'w1', labels: {} }, T0 + 6, LEASE), null);
      });

      it('cancels a running task: the attempt stays running with a stored stop reason; the worker reports and the result is recorded once', async () => {
        const t = await h.submit();
        const c = await h.claim(T0);
        const r = await h.store.cancelTask(t.id, 'user:alice', T0 + 5);
        assert.equal(r.task.state, 'cancelled');
        assert.equal(r.task.result, null);
        assert.deepEqual(r.runningAttempt, { ...c.attempt, stopReason: CANCEL_STOP_REASON });
        assert.deepEqual(await h.store.getAttempt(c.attempt.id), r.runningAttempt);
        const ev = (await h.store.listEvents(t.id)).at(-1)!;
        assert.deepEqual([ev.from, ev.to, ev.reason, ev.detail], ['running', 'cancelled', 'cancel_requested', { attemptId: c.attempt.id }]);
        // The worker is still the current reporter: logs and the exit are accepted.
        assert.equal((await h.check(c)).ok, true);
        assert.equal(await h.log(c, [{ seq: 0, stream: 'stderr', data: Buffer.from('terminated') }], T0 + 6), true);
        const eventsBefore = await h.store.listEvents(t.id);

        const done = await h.end(c, 'cancelled', T0 + 7);
        assert.ok(done);
        assert.equal(done.task.state, 'cancelled');
        assert.deepEqual(done.task.result, { outcome: 'cancelled', attempt: 1, exitCode: null, signal: 'SIGTERM', error: null, durationMs: 25 });
        assert.equal(done.attempt.state, 'cancelled');
        assert.equal(done.attempt.stopReason, CANCEL_STOP_REASON);
        // No second transition: the cancel event was the one.
        assert.deepEqual(await h.store.listEvents(t.id), eventsBefore);
        assert.equal(await h.end(c, 'failed', T0 + 8), null);
      });

      it('a cancelled task whose attempt lease expires: the sweeper ends it lost, the task stays cancelled with that result', async () => {
        const t = await h.submit();
        const c = await h.claim(T0, 'w1', { leaseMs: EXPIRED });
        await h.store.cancelTask(t.id, 'user:alice', T0 + 1);
        assert.deepEqual((await h.store.expiredAttempts(T0 + 2, 10)).map((a) => a.id), [c.attempt.id]);
        const r = await h.sweep(c, T0 + 2);
        assert.equal(r?.task.state, 'cancelled');
        assert.equal(r?.task.result?.outcome, 'lost');
        assert.equal(r?.attempt.state, 'lost');
        assert.deepEqual(await h.store.expiredAttempts(T0 + 3, 10), []);
      });

      it('cancels a retrying task: no longer due', async () => {
        const t = await h.submit();
        await h.end(await h.claim(T0), 'failed', T0 + 1);
        assert.equal(await h.store.nextDueAt(), T0 + 1 + 1000);
        const r = await h.store.cancelTask(t.id, 'user:alice', T0 + 2);
        assert.equal(r.task.state, 'cancelled');
        assert.equal(r.task.runAfter, null);
        assert.equal(r.runningAttempt, null);
        assert.equal(await h.store.nextDueAt(), null);
        assert.deepEqual(await h.store.promoteDue(T0 + 10_000, 100), []);
      });

      it('refuses a terminal task with ConflictError and an unknown one with NotFoundError', async () => {
        const s = await h.submit();
        await h.end(await h.claim(), 'succeeded', T0 + 1);
        const before = await h.snapshot(s.id);
        await assert.rejects(h.store.cancelTask(s.id, 'user:alice', T0 + 2), ConflictError);
        assert.deepEqual(await h.snapshot(s.id), before);

        const c = await h.submit();
        await h.store.cancelTask(c.id, 'user:alice', T0 + 3);
        await assert.rejects(h.store.cancelTask(c.id, 'user:alice', T0 + 4), ConflictError);

        await assert.rejects(h.store.cancelTask(newTaskId(T0), 'user:alice', T0 + 5), NotFoundError);
      });
    });

    describe('retryTask', () => {
      it('failed -> waiting with a fresh retry budget; attempt numbers continue', async () => {
        const t = await h.submit({ retry: { maxRetries: 0 } });
        await h.end(await h.claim(T0), 'failed', T0 + 1);
        const r = await h.store.retryTask(t.id, 'user:alice', T0 + 2);
        assert.equal(r.state, 'waiting');
        assert.equal(r.retriesUsed, 0);
        assert.equal(r.lostCount, 0);
        assert.equal(r.result, null);
        assert.equal(r.runAfter, null);
        assert.equal(r.updatedAt, T0 + 2);
        assert.deepEqual(await h.store.getTask(t.id), r);
        const ev = (await h.store.listEvents(t.id)).at(-1)!;
        assert.deepEqual([ev.from, ev.to, ev.reason, ev.actor, ev.at], ['failed', 'waiting', 'manual_retry', 'user:alice', T0 + 2]);
        assert.equal((ev.detail?.previousResult as { outcome?: string } | null)?.outcome, 'failed');
        const c = await h.claim(T0 + 3);
        assert.equal(c.task.id, t.id);
        assert.equal(c.attempt.number, 2);
        const done = await h.end(c, 'succeeded', T0 + 4);
        assert.equal(done?.task.result?.attempt, 2);
      });

      it('resets lostCount and retriesUsed', async () => {
        const t = await h.submit({ retry: { maxRetries: 1 } });
        await h.end(await h.claim(T0), 'lost', T0 + 1);
        await h.end(await h.claim(T0 + 2), 'failed', T0 + 3);
        await h.store.promoteDue(T0 + 10_000, 100);
        const last = await h.end(await h.claim(T0 + 10_001), 'failed', T0 + 10_002);
        assert.equal(last?.task.state, 'failed');
        assert.equal(last?.task.lostCount, 1);
        assert.equal(last?.task.retriesUsed, 1);
        const r = await h.store.retryTask(t.id, 'user:alice', T0 + 10_003);
        assert.equal(r.lostCount, 0);
        assert.equal(r.retriesUsed, 0);
      });

      it('cancelled (never ran) -> waiting, claimed at once', async () => {
        const t = await h.submit();
        await h.store.cancelTask(t.id, 'user:alice', T0 + 1);
        const r = await h.store.retryTask(t.id, 'user:alice', T0 + 2);
        assert.equal(r.state, 'waiting');
        assert.equal((await h.claim(T0 + 3)).task.id, t.id);
      });

      it('a cancelled task retried while its attempt still runs: ready, not claimed until the old attempt reports its end', async () => {
        const t = await h.submit();
        const old = await h.claim(T0, 'w1');
        await h.store.cancelTask(t.id, 'user:alice', T0 + 1);
        const r = await h.store.retryTask(t.id, 'user:alice', T0 + 2);
        assert.equal(r.state, 'ready');
        assert.equal(r.currentAttemptId, old.attempt.id);
        const ev = (await h.store.listEvents(t.id)).at(-1)!;
        assert.deepEqual([ev.from, ev.to, ev.reason, ev.detail?.waitsForAttemptId], ['cancelled', 'ready', 'manual_retry', old.attempt.id]);
        // The old attempt is not ended by the retry: it keeps running with its stop order.
        const oldNow = await h.store.getAttempt(old.attempt.id);
        assert.deepEqual([oldNow?.state, oldNow?.stopReason], ['running', CANCEL_STOP_REASON]);
        assert.equal(await h.store.claimNext({ id: 'w2', labels: {} }, T0 + 3, LEASE), null);
        assert.equal(await h.store.claimNext({ id: 'w1', labels: {} }, T0 + 3, LEASE), null);
        // Its worker keeps hearing the stop order, and may still report.
        const renew = await h.store.renewLeases('w1', [old.attempt.id], T0 + 3, LEASE);
        assert.deepEqual(renew, { renewed: [old.attempt.id], stop: [{ attemptId: old.attempt.id, reason: CANCEL_STOP_REASON, report: true }] });
        assert.equal((await h.check(old)).ok, true);

        const before = await h.snapshot(t.id);
        const ended = await h.end(old, 'cancelled', T0 + 4);
        assert.ok(ended);
        assert.equal(ended.attempt.state, 'cancelled');
        // The old attempt's end releases the task (ready -> waiting) and uses no budget, records no result.
        assert.equal(ended.task.state, 'waiting');
        assert.deepEqual([ended.task.retriesUsed, ended.task.lostCount, ended.task.result], [before.task!.retriesUsed, before.task!.lostCount, null]);
        const released = (await h.store.listEvents(t.id)).slice(before.events.length);
        assert.deepEqual(released.map((e) => [e.from, e.to, e.reason]), [['ready', 'waiting', 'released']]);

        const fresh = await h.claim(T0 + 5, 'w2');
        assert.equal(fresh.task.id, t.id);
        assert.equal(fresh.attempt.number, 2);
        assert.equal(fresh.attempt.stopReason, null);
        assert.equal(fresh.task.retriesUsed, 0);
        // The old attempt cannot report again.
        assert.equal(await h.end(old, 'failed', T0 + 6), null);
        assert.equal((await h.store.getTask(t.id))?.state, 'running');
      });

      it('a cancelled task retried while its attempt still runs: the old lease expiring ends it, then the task is claimed', async () => {
        const t = await h.submit();
        const old = await h.claim(T0, 'w1', { leaseMs: EXPIRED });
        await h.store.cancelTask(t.id, 'user:alice', T0 + 1);
        await h.store.retryTask(t.id, 'user:alice', T0 + 2);
        assert.equal(await h.store.claimNext({ id: 'w2', labels: {} }, T0 + 3, LEASE), null);
        assert.deepEqual((await h.store.expiredAttempts(T0 + 3, 10)).map((a) => a.id), [old.attempt.id]);
        const eventsBefore = await h.store.listEvents(t.id);
        const swept = await h.sweep(old, T0 + 3);
        assert.equal(swept?.attempt.state, 'lost');
        assert.equal(swept?.task.state, 'waiting');
        assert.equal(swept?.task.lostCount, 0, 'the retried task starts with a fresh budget; the superseded attempt does not count');
        assert.deepEqual((await h.store.listEvents(t.id)).slice(eventsBefore.length).map((e) => [e.from, e.to, e.reason]), [['ready', 'waiting', 'released']]);
        const fresh = await h.claim(T0 + 4, 'w2');
        assert.deepEqual([fresh.task.id, fresh.attempt.number], [t.id, 2]);
      });

      it('refuses waiting, running and succeeded tasks with ConflictError, unknown with NotFoundError', async () => {
        const w = await h.submit({ now: T0 });
        const r = await h.submit({ now: T0 + 1, priority: 10 });
        const s = await h.submit({ now: T0 + 2, priority: 20 });
        await h.end(await h.claim(T0 + 3), 'succeeded', T0 + 4);
        await h.claim(T0 + 5);
        assert.equal((await h.store.getTask(r.id))?.state, 'running');
        for (const id of [w.id, r.id, s.id]) {
          const before = await h.snapshot(id);
          await assert.rejects(h.store.retryTask(id, 'user:alice', T0 + 6), ConflictError);
          assert.deepEqual(await h.snapshot(id), before);
        }
        await assert.rejects(h.store.retryTask(newTaskId(T0), 'user:alice', T0 + 7), NotFoundError);
      });
    });

    describe('promoteDue and nextDueAt', () => {
      it('moves due retrying tasks to waiting with a backoff_elapsed event, earliest first', async () => {
        assert.equal(await h.store.nextDueAt(), null);
        const a = await h.submit({ now: T0 });
        const b = await h.submit({ now: T0 + 1 });
        const ca = await h.claim(T0 + 2);
        const cb = await h.claim(T0 + 2);
        assert.deepEqual([ca.task.id, cb.task.id], [a.id, b.id]);
        await h.end(cb, 'failed', T0 + 10); // due T0 + 1010
        await h.end(ca, 'failed', T0 + 500); // due T0 + 1500
        assert.equal(await h.store.nextDueAt(), T0 + 1010);

        assert.deepEqual(await h.store.promoteDue(T0 + 1009, 100), []);
        assert.deepEqual(await h.store.promoteDue(T0 + 1010, 100), [b.id]);
        assert.equal(await h.store.nextDueAt(), T0 + 1500);
        const bt = await h.store.getTask(b.id);
        assert.equal(bt?.state, 'waiting');
        assert.equal(bt?.runAfter, null);
        assert.equal(bt?.updatedAt, T0 + 1010);
        const ev = (await h.store.listEvents(b.id)).at(-1)!;
        assert.deepEqual([ev.from, ev.to, ev.reason, ev.at], ['retrying', 'waiting', 'backoff_elapsed', T0 + 1010]);

        assert.deepEqual(await h.store.promoteDue(T0 + 5000, 100), [a.id]);
        assert.equal(await h.store.nextDueAt(), null);
        assert.deepEqual(await h.store.promoteDue(T0 + 9000, 100), []);
      });

      it('promotes several tasks due at once', async () => {
        const ids = [];
        for (let i = 0; i < 3; i++) ids.push((await h.submit({ now: T0 + i })).id);
        for (let i = 0; i < 3; i++) await h.end(await h.claim(T0 + 10), 'failed', T0 + 20);
        assert.deepEqual(new Set(await h.store.promoteDue(T0 + 1020, 100)), new Set(ids));
        const listed = await h.store.listTasks({ state: 'waiting', limit: 10 });
        assert.equal(listed.tasks.length, 3);
      });

      it('promotes at most `limit` tasks per call, the earliest due first', async () => {
        const ids = [];
        for (let i = 0; i < 5; i++) ids.push((await h.submit({ now: T0 + i })).id);
        // Task i fails at T0 + 10 + i, so it is due at T0 + 1010 + i.
        for (let i = 0; i < 5; i++) await h.end(await h.claim(T0 + 5), 'failed', T0 + 10 + i);
        const due = T0 + 2000;
        assert.deepEqual(await h.store.promoteDue(due, 2), ids.slice(0, 2));
        assert.equal((await h.store.listTasks({ state: 'retrying', limit: 10 })).tasks.length, 3);
        assert.deepEqual(await h.store.promoteDue(due, 2), ids.slice(2, 4));
        assert.deepEqual(await h.store.promoteDue(due, 2), ids.slice(4));
        assert.deepEqual(await h.store.promoteDue(due, 2), []);
      });
    });

    describe('migrate', () => {
      it('is idempotent: a second run changes nothing and the store keeps working', async () => {
        const t = await h.submit();
        await h.store.createToken({ id: 'tok', name: 'n', user: 'u', role: 'user', secretHash: 'e'.repeat(64), createdAt: T0 });
        await h.store.migrate();
        await h.store.migrate();
        assert.deepEqual((await h.store.getTask(t.id))?.id, t.id);
        assert.equal(await h.store.countTokens(), 1);
        await h.submit({ now: T0 + 1 });
        assert.equal((await h.store.listTasks({ limit: 10 })).tasks.length, 2);
        assert.equal((await h.claim(T0 + 2)).task.id, t.id);
      });
    });
  });
}
