/**
 * The Store contract: every implementation (SQLite now, PostgreSQL later)
 * runs this same suite. `open` must return a fresh, empty store each time;
 * the suite calls `migrate()` itself and closes the store after each test.
 * Time is explicit (`now` numbers): nothing here sleeps or reads the clock.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { ConflictError, NotFoundError } from '../../src/core/errors.js';
import { newTaskId } from '../../src/core/ids.js';
import { DEFAULT_MAX_LOST, DEFAULT_RETRY_POLICY, type RetryPolicy } from '../../src/core/retry-policy.js';
import type { Task, TaskSpec } from '../../src/core/task.js';
import type { Claim, Store } from '../../src/store/store.js';

const T0 = 1_700_000_000_000;
const LEASE = 15_000;

export function makeSpec(o: Partial<TaskSpec> = {}): TaskSpec {
  return {
    name: 'echo',
    kind: 'batch',
    command: 'echo',
    args: ['hello', 'world'],
    script: null,
    interpreter: [],
    env: {},
    timeoutMs: null,
    retry: { ...DEFAULT_RETRY_POLICY },
    priority: 0,
    labels: {},
    ...o,
  };
}

interface SubmitOptions {
  name?: string;
  owner?: string;
  priority?: number;
  retry?: Partial<RetryPolicy>;
  now?: number;
}

export function runStoreContract(name: string, open: () => Promise<Store>): void {
  describe(`Store contract: ${name}`, () => {
    let store: Store;

    beforeEach(async () => {
      store = await open();
      await store.migrate();
    });
    afterEach(async () => {
      await store.close();
    });

    const submit = (o: SubmitOptions = {}): Promise<Task> => {
      const now = o.now ?? T0;
      const spec = makeSpec({
        name: o.name ?? 'echo',
        priority: o.priority ?? 0,
        retry: { ...DEFAULT_RETRY_POLICY, ...o.retry },
      });
      return store.createTask(newTaskId(now), o.owner ?? 'alice', spec, 'user:alice', now);
    };

    const claim = async (now = T0, worker = 'w1'): Promise<Claim> => {
      const c = await store.claimNext(worker, now, LEASE);
      assert.ok(c, 'expected a waiting task to claim');
      return c;
    };

    const end = (c: Claim, outcome: 'succeeded' | 'failed' | 'timed_out' | 'cancelled' | 'lost', now: number) =>
      store.endAttempt(
        c.attempt.id,
        c.attempt.id,
        {
          outcome,
          exitCode: outcome === 'succeeded' ? 0 : outcome === 'failed' ? 1 : null,
          signal: outcome === 'timed_out' || outcome === 'cancelled' ? 'SIGTERM' : null,
          error: outcome === 'lost' ? 'lease expired' : null,
          durationMs: outcome === 'lost' ? null : 25,
        },
        'worker:w1',
        now,
      );

    /** Everything a fenced call must leave unchanged. */
    const snapshot = async (taskId: string) => ({
      task: await store.getTask(taskId),
      attempts: await store.listAttempts(taskId),
      events: await store.listEvents(taskId),
      logs: await store.readLogs(taskId, 0, 1000),
    });

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
        });
        const id = newTaskId(T0);
        const task = await store.createTask(id, 'bob', spec, 'user:bob', T0);
        assert.deepEqual(task, {
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
        });
        assert.deepEqual(await store.getTask(id), task);

        const events = await store.listEvents(id);
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
        const t = await submit({ name: 'first' });
        await assert.rejects(store.createTask(t.id, 'alice', makeSpec({ name: 'second' }), 'user:alice', T0 + 1), ConflictError);
        assert.equal((await store.getTask(t.id))?.name, 'first');
        assert.equal((await store.listEvents(t.id)).length, 2);
      });

      it('getTask of an unknown id is null', async () => {
        assert.equal(await store.getTask(newTaskId(T0)), null);
        assert.deepEqual(await store.listEvents(newTaskId(T0)), []);
        assert.deepEqual(await store.listAttempts(newTaskId(T0)), []);
        assert.equal(await store.getAttempt(987654), null);
      });
    });

    describe('listTasks', () => {
      it('pages newest first with a keyset cursor, without duplicates or gaps', async () => {
        const ids: string[] = [];
        for (let i = 0; i < 7; i++) ids.push((await submit({ name: `t${i}`, now: T0 + i })).id);
        const newestFirst = [...ids].reverse();

        const p1 = await store.listTasks({ limit: 3 });
        assert.deepEqual(
          p1.tasks.map((t) => t.id),
          newestFirst.slice(0, 3),
        );
        assert.equal(p1.nextCursor, newestFirst[2]);

        const p2 = await store.listTasks({ limit: 3, cursor: p1.nextCursor! });
        assert.deepEqual(
          p2.tasks.map((t) => t.id),
          newestFirst.slice(3, 6),
        );
        assert.equal(p2.nextCursor, newestFirst[5]);

        const p3 = await store.listTasks({ limit: 3, cursor: p2.nextCursor! });
        assert.deepEqual(
          p3.tasks.map((t) => t.id),
          newestFirst.slice(6),
        );
        assert.equal(p3.nextCursor, null);

        const all = await store.listTasks({ limit: 100 });
        assert.deepEqual(
          all.tasks.map((t) => t.id),
          newestFirst,
        );
        assert.equal(all.nextCursor, null);
      });

      it('has no next page when exactly `limit` tasks remain', async () => {
        for (let i = 0; i < 6; i++) await submit({ now: T0 + i });
        const p1 = await store.listTasks({ limit: 3 });
        assert.equal(p1.tasks.length, 3);
        assert.ok(p1.nextCursor);
        const p2 = await store.listTasks({ limit: 3, cursor: p1.nextCursor });
        assert.equal(p2.tasks.length, 3);
        assert.equal(p2.nextCursor, null);
        assert.deepEqual(await store.listTasks({ limit: 5, cursor: p2.tasks[2]!.id }), { tasks: [], nextCursor: null });
      });

      it('filters by state', async () => {
        const a = await submit({ now: T0 });
        const b = await submit({ now: T0 + 1 });
        const c = await claim(T0 + 2);
        assert.equal(c.task.id, a.id);
        const running = await store.listTasks({ state: 'running', limit: 10 });
        assert.deepEqual(
          running.tasks.map((t) => [t.id, t.state]),
          [[a.id, 'running']],
        );
        const waiting = await store.listTasks({ state: 'waiting', limit: 10 });
        assert.deepEqual(
          waiting.tasks.map((t) => t.id),
          [b.id],
        );
        assert.deepEqual((await store.listTasks({ state: 'failed', limit: 10 })).tasks, []);
      });

      it('filters by owner', async () => {
        const a1 = await submit({ owner: 'alice' });
        await submit({ owner: 'bob' });
        const a2 = await submit({ owner: 'alice' });
        const page = await store.listTasks({ owner: 'alice', limit: 10 });
        assert.deepEqual(
          page.tasks.map((t) => t.id),
          [a2.id, a1.id],
        );
        assert.deepEqual((await store.listTasks({ owner: 'carol', limit: 10 })).tasks, []);
      });

      it('filters by name prefix, case-sensitively and with wildcard characters taken literally', async () => {
        const b1 = await submit({ name: 'build-web' });
        const b2 = await submit({ name: 'build-api' });
        await submit({ name: 'Build-docs' });
        await submit({ name: 'deploy-build' });
        const star = await submit({ name: 'a*b?[c]%_d' });
        await submit({ name: 'aXbYcZ' });
        await submit({ name: 'a%b' });

        const build = await store.listTasks({ namePrefix: 'build', limit: 10 });
        assert.deepEqual(
          build.tasks.map((t) => t.id),
          [b2.id, b1.id],
        );
        assert.deepEqual(
          (await store.listTasks({ namePrefix: 'build-a', limit: 10 })).tasks.map((t) => t.id),
          [b2.id],
        );
        assert.deepEqual(
          (await store.listTasks({ namePrefix: 'a*b?[c]%_', limit: 10 })).tasks.map((t) => t.id),
          [star.id],
        );
        assert.deepEqual(
          (await store.listTasks({ namePrefix: 'a*', limit: 10 })).tasks.map((t) => t.id),
          [star.id],
        );
        assert.deepEqual((await store.listTasks({ namePrefix: 'a_', limit: 10 })).tasks, []);
        assert.deepEqual((await store.listTasks({ namePrefix: 'zzz', limit: 10 })).tasks, []);
      });

      it('filters by name prefix with a backslash (an escape character in LIKE) taken literally', async () => {
        const back = await submit({ name: 'dir\\sub\\%job' });
        await submit({ name: 'dir-sub' });
        await submit({ name: 'dirXsub' });
        const ids = async (namePrefix: string) => (await store.listTasks({ namePrefix, limit: 10 })).tasks.map((t) => t.id);
        assert.deepEqual(await ids('dir\\'), [back.id]);
        assert.deepEqual(await ids('dir\\sub\\%'), [back.id]);
        assert.deepEqual(await ids('dir\\sub\\_'), []);
        assert.deepEqual(await ids('dir\\\\'), []);
      });

      it('filters by created range: createdAfter inclusive, createdBefore exclusive', async () => {
        const t = [];
        for (let i = 0; i < 5; i++) t.push(await submit({ now: T0 + i * 10 }));
        const ids = (page: { tasks: Task[] }) => page.tasks.map((x) => x.id);
        assert.deepEqual(ids(await store.listTasks({ createdAfter: T0 + 10, createdBefore: T0 + 30, limit: 10 })), [t[2]!.id, t[1]!.id]);
        assert.deepEqual(ids(await store.listTasks({ createdAfter: T0 + 25, limit: 10 })), [t[4]!.id, t[3]!.id]);
        assert.deepEqual(ids(await store.listTasks({ createdBefore: T0 + 10, limit: 10 })), [t[0]!.id]);
        assert.deepEqual(ids(await store.listTasks({ createdAfter: T0 + 41, limit: 10 })), []);
      });

      it('combines filters with pagination', async () => {
        const mine: string[] = [];
        for (let i = 0; i < 5; i++) {
          mine.push((await submit({ owner: 'alice', name: `job-${i}`, now: T0 + i })).id);
          await submit({ owner: 'bob', name: `job-${i}`, now: T0 + i });
          await submit({ owner: 'alice', name: `other-${i}`, now: T0 + i });
        }
        const seen: string[] = [];
        let cursor: string | undefined;
        for (let pages = 0; pages < 10; pages++) {
          const p = await store.listTasks({ owner: 'alice', namePrefix: 'job-', limit: 2, ...(cursor ? { cursor } : {}) });
          seen.push(...p.tasks.map((t) => t.id));
          if (p.nextCursor === null) break;
          cursor = p.nextCursor;
        }
        assert.deepEqual(seen, [...mine].reverse());
      });
    });

    describe('claimNext', () => {
      it('returns null when nothing is waiting', async () => {
        assert.equal(await store.claimNext('w1', T0, LEASE), null);
      });

      it('claims highest priority first, then oldest, and records the attempt and event', async () => {
        const low = await submit({ priority: 0, now: T0 });
        const hi1 = await submit({ priority: 5, now: T0 + 1 });
        const hi2 = await submit({ priority: 5, now: T0 + 2 });
        const neg = await submit({ priority: -1, now: T0 + 3 });
        const mid = await submit({ priority: 1, now: T0 + 4 });

        const now = T0 + 100;
        const first = await claim(now, 'w7');
        assert.equal(first.task.id, hi1.id);
        assert.equal(first.task.state, 'running');
        assert.equal(first.task.attempts, 1);
        assert.equal(first.task.currentAttemptId, first.attempt.id);
        assert.equal(first.task.updatedAt, now);
        assert.deepEqual(first.attempt, {
          id: first.attempt.id,
          taskId: hi1.id,
          number: 1,
          workerId: 'w7',
          state: 'running',
          startedAt: now,
          endedAt: null,
          leaseExpiresAt: now + LEASE,
          exitCode: null,
          signal: null,
          error: null,
          durationMs: null,
        });
        assert.deepEqual(await store.getTask(hi1.id), first.task);
        assert.deepEqual(await store.getAttempt(first.attempt.id), first.attempt);
        assert.deepEqual(await store.listAttempts(hi1.id), [first.attempt]);
        const ev = (await store.listEvents(hi1.id)).at(-1)!;
        assert.deepEqual([ev.from, ev.to, ev.reason, ev.at], ['waiting', 'running', 'claimed', now]);

        const order = [first.task.id];
        for (let i = 0; i < 4; i++) order.push((await claim(now)).task.id);
        assert.deepEqual(order, [hi1.id, hi2.id, mid.id, low.id, neg.id]);
        assert.equal(await store.claimNext('w1', now, LEASE), null);
      });

      it('claims each task exactly once under concurrent callers', async () => {
        const ids = new Set<string>();
        for (let i = 0; i < 12; i++) ids.add((await submit({ priority: i % 3, now: T0 + i })).id);
        const results = await Promise.all(Array.from({ length: 40 }, (_, i) => store.claimNext(`w${i % 4}`, T0 + 100, LEASE)));
        const claims = results.filter((c): c is Claim => c !== null);
        assert.equal(claims.length, 12);
        assert.deepEqual(new Set(claims.map((c) => c.task.id)), ids);
        assert.equal(new Set(claims.map((c) => c.attempt.id)).size, 12);
        for (const id of ids) {
          const t = await store.getTask(id);
          assert.equal(t?.state, 'running');
          assert.equal(t?.attempts, 1);
          assert.equal((await store.listAttempts(id)).length, 1);
          assert.equal((await store.listEvents(id)).filter((e) => e.reason === 'claimed').length, 1);
        }
      });

      it('gives every new attempt a larger id (fencing token) than any before it', async () => {
        await submit({ retry: { maxRetries: 5 } });
        await submit({ retry: { maxRetries: 5 } });
        let last = 0;
        let now = T0;
        for (let i = 0; i < 6; i++) {
          const c = await claim(now);
          assert.ok(c.attempt.id > last, `attempt id ${c.attempt.id} after ${last}`);
          last = c.attempt.id;
          await end(c, 'lost', now + 1);
          now += 10;
        }
      });
    });

    describe('endAttempt', () => {
      it('success: task succeeded, result recorded, attempt closed, one event', async () => {
        const t = await submit();
        const c = await claim(T0 + 1);
        const r = await end(c, 'succeeded', T0 + 50);
        assert.ok(r);
        assert.equal(r.task.state, 'succeeded');
        assert.deepEqual(r.task.result, { outcome: 'succeeded', attempt: 1, exitCode: 0, signal: null, error: null, durationMs: 25 });
        assert.equal(r.task.updatedAt, T0 + 50);
        assert.equal(r.task.retriesUsed, 0);
        assert.deepEqual(r.attempt, { ...c.attempt, state: 'succeeded', endedAt: T0 + 50, exitCode: 0, durationMs: 25 });
        assert.deepEqual(await store.getTask(t.id), r.task);
        assert.deepEqual(await store.getAttempt(c.attempt.id), r.attempt);
        const events = await store.listEvents(t.id);
        assert.deepEqual(
          events.map((e) => e.reason),
          ['submitted', 'released', 'claimed', 'attempt_succeeded'],
        );
        const last = events.at(-1)!;
        assert.deepEqual([last.from, last.to, last.actor, last.at], ['running', 'succeeded', 'worker:w1', T0 + 50]);
        assert.equal(last.detail?.attemptId, c.attempt.id);
      });

      it('failures under the default policy: retrying after 1 s, 2 s, 4 s, then failed', async () => {
        const t = await submit();
        let now = T0;
        const delays = [1000, 2000, 4000];
        for (let i = 0; i < 3; i++) {
          const c = await claim(now);
          assert.equal(c.attempt.number, i + 1);
          now += 100;
          const r = await end(c, 'failed', now);
          assert.ok(r);
          assert.equal(r.task.state, 'retrying');
          assert.equal(r.task.retriesUsed, i + 1);
          assert.equal(r.task.runAfter, now + delays[i]!);
          assert.equal(r.task.result, null);
          assert.equal(r.attempt.state, 'failed');
          assert.equal(r.attempt.exitCode, 1);
          // Not claimable during the backoff.
          assert.equal(await store.claimNext('w1', now, LEASE), null);
          assert.deepEqual(await store.promoteDue(now + delays[i]! - 1), []);
          now += delays[i]!;
          assert.deepEqual(await store.promoteDue(now), [t.id]);
        }
        const c = await claim(now);
        assert.equal(c.attempt.number, 4);
        const r = await end(c, 'failed', now + 5);
        assert.ok(r);
        assert.equal(r.task.state, 'failed');
        assert.equal(r.task.runAfter, null);
        assert.equal(r.task.attempts, 4);
        assert.deepEqual(r.task.result, { outcome: 'failed', attempt: 4, exitCode: 1, signal: null, error: null, durationMs: 25 });
        assert.deepEqual(
          (await store.listEvents(t.id)).map((e) => `${e.from}>${e.to}:${e.reason}`),
          [
            'null>ready:submitted',
            'ready>waiting:released',
            ...Array(3).fill(['waiting>running:claimed', 'running>retrying:attempt_failed', 'retrying>waiting:backoff_elapsed']).flat(),
            'waiting>running:claimed',
            'running>failed:retries_exhausted',
          ],
        );
        assert.deepEqual(
          (await store.listAttempts(t.id)).map((a) => [a.number, a.state]),
          [
            [1, 'failed'],
            [2, 'failed'],
            [3, 'failed'],
            [4, 'failed'],
          ],
        );
      });

      it('maxRetries 0: the first failure is final', async () => {
        await submit({ retry: { maxRetries: 0 } });
        const r = await end(await claim(), 'failed', T0 + 1);
        assert.equal(r?.task.state, 'failed');
        assert.equal(r?.task.result?.outcome, 'failed');
      });

      it('timed_out counts as a failed attempt', async () => {
        const t = await submit();
        const r = await end(await claim(), 'timed_out', T0 + 10);
        assert.ok(r);
        assert.equal(r.task.state, 'retrying');
        assert.equal(r.task.retriesUsed, 1);
        assert.equal(r.task.runAfter, T0 + 10 + 1000);
        assert.equal(r.attempt.state, 'timed_out');
        assert.equal(r.attempt.signal, 'SIGTERM');
        assert.equal((await store.listEvents(t.id)).at(-1)?.reason, 'attempt_timed_out');
      });

      it('a worker that stops the attempt itself (cancelled while the task runs) uses a retry', async () => {
        await submit();
        const r = await end(await claim(), 'cancelled', T0 + 10);
        assert.equal(r?.task.state, 'retrying');
        assert.equal(r?.task.retriesUsed, 1);
        assert.equal(r?.attempt.state, 'cancelled');
      });

      it('lost: back to waiting at once without using a retry', async () => {
        const t = await submit();
        const c = await claim(T0);
        const r = await end(c, 'lost', T0 + LEASE + 1);
        assert.ok(r);
        assert.equal(r.task.state, 'waiting');
        assert.equal(r.task.lostCount, 1);
        assert.equal(r.task.retriesUsed, 0);
        assert.equal(r.task.runAfter, null);
        assert.equal(r.task.result, null);
        assert.equal(r.attempt.state, 'lost');
        assert.equal((await store.listEvents(t.id)).at(-1)?.reason, 'worker_lost');
        const again = await claim(T0 + LEASE + 2);
        assert.equal(again.task.id, t.id);
        assert.equal(again.attempt.number, 2);
      });

      it(`lost more than the cap (${DEFAULT_MAX_LOST}) times: failed`, async () => {
        const t = await submit();
        let now = T0;
        for (let i = 1; i <= DEFAULT_MAX_LOST; i++) {
          const r = await end(await claim(now), 'lost', now + 1);
          assert.equal(r?.task.state, 'waiting');
          assert.equal(r?.task.lostCount, i);
          now += 10;
        }
        const r = await end(await claim(now), 'lost', now + 1);
        assert.ok(r);
        assert.equal(r.task.state, 'failed');
        assert.equal(r.task.lostCount, DEFAULT_MAX_LOST + 1);
        assert.equal(r.task.retriesUsed, 0);
        assert.equal(r.task.result?.outcome, 'lost');
        assert.match(r.task.result?.error ?? '', /lost/);
        assert.equal((await store.listEvents(t.id)).at(-1)?.reason, 'lost_cap_exceeded');
      });
    });

    describe('fencing', () => {
      it('checkReport accepts only the current running attempt with its own token', async () => {
        await submit();
        const c = await claim();
        assert.deepEqual(await store.checkReport(c.attempt.id, c.attempt.id), { ok: true, attempt: c.attempt });
        const wrong = await store.checkReport(c.attempt.id, c.attempt.id + 1);
        assert.equal(wrong.ok, false);
        const unknown = await store.checkReport(c.attempt.id + 1000, c.attempt.id + 1000);
        assert.equal(unknown.ok, false);
        await end(c, 'succeeded', T0 + 5);
        const ended = await store.checkReport(c.attempt.id, c.attempt.id);
        assert.equal(ended.ok, false);
        if (!ended.ok) assert.ok(ended.reason.length > 0);
      });

      it('endAttempt with a stale token returns null and changes nothing', async () => {
        const t = await submit();
        const c = await claim();
        const before = await snapshot(t.id);
        const outcome = { outcome: 'succeeded' as const, exitCode: 0, signal: null, error: null, durationMs: 1 };
        assert.equal(await store.endAttempt(c.attempt.id, c.attempt.id - 1, outcome, 'worker:w1', T0 + 5), null);
        assert.equal(await store.endAttempt(c.attempt.id, c.attempt.id + 1, outcome, 'worker:w1', T0 + 5), null);
        assert.equal(await store.endAttempt(c.attempt.id + 1000, c.attempt.id + 1000, outcome, 'worker:w1', T0 + 5), null);
        assert.deepEqual(await snapshot(t.id), before);
      });

      it('a second end of the same attempt returns null: the result is recorded once', async () => {
        const t = await submit();
        const c = await claim();
        assert.ok(await end(c, 'succeeded', T0 + 5));
        const before = await snapshot(t.id);
        assert.equal(await end(c, 'failed', T0 + 6), null);
        assert.equal(await end(c, 'lost', T0 + 7), null);
        assert.deepEqual(await snapshot(t.id), before);
      });

      it('a report from an old attempt after the task was claimed again is fenced', async () => {
        const t = await submit();
        const old = await claim(T0);
        await end(old, 'lost', T0 + LEASE + 1);
        const current = await claim(T0 + LEASE + 2, 'w2');
        assert.ok(current.attempt.id > old.attempt.id);
        const before = await snapshot(t.id);
        assert.equal(await end(old, 'succeeded', T0 + LEASE + 3), null);
        assert.equal(await store.appendLogs(old.attempt.id, old.attempt.id, [{ seq: 0, stream: 'stdout', data: Buffer.from('late') }], T0 + LEASE + 3), false);
        assert.equal((await store.checkReport(old.attempt.id, old.attempt.id)).ok, false);
        assert.deepEqual(await snapshot(t.id), before);
        assert.equal((await store.checkReport(current.attempt.id, current.attempt.id)).ok, true);
      });

      it('appendLogs with a stale token or after the end writes nothing and returns false', async () => {
        const t = await submit();
        const c = await claim();
        const chunk = [{ seq: 0, stream: 'stdout' as const, data: Buffer.from('x') }];
        assert.equal(await store.appendLogs(c.attempt.id, c.attempt.id + 1, chunk, T0 + 1), false);
        await end(c, 'succeeded', T0 + 2);
        assert.equal(await store.appendLogs(c.attempt.id, c.attempt.id, chunk, T0 + 3), false);
        assert.deepEqual(await store.readLogs(t.id, 0, 100), []);
      });

      it('recordFencedReport writes a fenced_report event and does not change the task', async () => {
        const t = await submit();
        const old = await claim(T0);
        await end(old, 'lost', T0 + 1);
        await claim(T0 + 2);
        const taskBefore = await store.getTask(t.id);
        await store.recordFencedReport(old.attempt.id, 'exit', 'worker:w1', T0 + 3);
        assert.deepEqual(await store.getTask(t.id), taskBefore);
        const ev = (await store.listEvents(t.id)).at(-1)!;
        assert.deepEqual(
          { from: ev.from, to: ev.to, reason: ev.reason, actor: ev.actor, at: ev.at, detail: ev.detail },
          { from: 'running', to: 'running', reason: 'fenced_report', actor: 'worker:w1', at: T0 + 3, detail: { attemptId: old.attempt.id, kind: 'exit' } },
        );
        // An attempt that never existed has no task to record on; it is not an error.
        await store.recordFencedReport(old.attempt.id + 1000, 'log', 'worker:w1', T0 + 4);
      });
    });

    describe('cancelTask', () => {
      it('cancels a waiting task; it is never claimed', async () => {
        const t = await submit();
        const r = await store.cancelTask(t.id, 'user:alice', T0 + 5);
        assert.equal(r.task.state, 'cancelled');
        assert.equal(r.task.updatedAt, T0 + 5);
        assert.equal(r.runningAttempt, null);
        const ev = (await store.listEvents(t.id)).at(-1)!;
        assert.deepEqual([ev.from, ev.to, ev.reason, ev.actor, ev.at], ['waiting', 'cancelled', 'cancel_requested', 'user:alice', T0 + 5]);
        assert.equal(await store.claimNext('w1', T0 + 6, LEASE), null);
      });

      it('cancels a running task, returns its attempt; the worker then reports and the result is recorded once', async () => {
        const t = await submit();
        const c = await claim(T0);
        const r = await store.cancelTask(t.id, 'user:alice', T0 + 5);
        assert.equal(r.task.state, 'cancelled');
        assert.equal(r.task.result, null);
        assert.deepEqual(r.runningAttempt, c.attempt);
        assert.equal((await store.getAttempt(c.attempt.id))?.state, 'running');
        // The worker is still the current reporter: logs and the exit are accepted.
        assert.equal((await store.checkReport(c.attempt.id, c.attempt.id)).ok, true);
        assert.equal(await store.appendLogs(c.attempt.id, c.attempt.id, [{ seq: 0, stream: 'stderr', data: Buffer.from('terminated') }], T0 + 6), true);
        const eventsBefore = await store.listEvents(t.id);

        const done = await end(c, 'cancelled', T0 + 7);
        assert.ok(done);
        assert.equal(done.task.state, 'cancelled');
        assert.deepEqual(done.task.result, { outcome: 'cancelled', attempt: 1, exitCode: null, signal: 'SIGTERM', error: null, durationMs: 25 });
        assert.equal(done.attempt.state, 'cancelled');
        // No second transition: the cancel event was the one.
        assert.deepEqual(await store.listEvents(t.id), eventsBefore);
        assert.equal(await end(c, 'failed', T0 + 8), null);
      });

      it('cancels a retrying task: no longer due', async () => {
        const t = await submit();
        await end(await claim(T0), 'failed', T0 + 1);
        assert.equal(await store.nextDueAt(), T0 + 1 + 1000);
        const r = await store.cancelTask(t.id, 'user:alice', T0 + 2);
        assert.equal(r.task.state, 'cancelled');
        assert.equal(r.task.runAfter, null);
        assert.equal(r.runningAttempt, null);
        assert.equal(await store.nextDueAt(), null);
        assert.deepEqual(await store.promoteDue(T0 + 10_000), []);
      });

      it('refuses a terminal task with ConflictError and an unknown one with NotFoundError', async () => {
        const s = await submit();
        await end(await claim(), 'succeeded', T0 + 1);
        const before = await snapshot(s.id);
        await assert.rejects(store.cancelTask(s.id, 'user:alice', T0 + 2), ConflictError);
        assert.deepEqual(await snapshot(s.id), before);

        const c = await submit();
        await store.cancelTask(c.id, 'user:alice', T0 + 3);
        await assert.rejects(store.cancelTask(c.id, 'user:alice', T0 + 4), ConflictError);

        await assert.rejects(store.cancelTask(newTaskId(T0), 'user:alice', T0 + 5), NotFoundError);
      });
    });

    describe('retryTask', () => {
      it('failed -> waiting with a fresh retry budget; attempt numbers continue', async () => {
        const t = await submit({ retry: { maxRetries: 0 } });
        await end(await claim(T0), 'failed', T0 + 1);
        const r = await store.retryTask(t.id, 'user:alice', T0 + 2);
        assert.equal(r.state, 'waiting');
        assert.equal(r.retriesUsed, 0);
        assert.equal(r.lostCount, 0);
        assert.equal(r.result, null);
        assert.equal(r.runAfter, null);
        assert.equal(r.updatedAt, T0 + 2);
        assert.deepEqual(await store.getTask(t.id), r);
        const ev = (await store.listEvents(t.id)).at(-1)!;
        assert.deepEqual([ev.from, ev.to, ev.reason, ev.actor, ev.at], ['failed', 'waiting', 'manual_retry', 'user:alice', T0 + 2]);
        const c = await claim(T0 + 3);
        assert.equal(c.task.id, t.id);
        assert.equal(c.attempt.number, 2);
        const done = await end(c, 'succeeded', T0 + 4);
        assert.equal(done?.task.result?.attempt, 2);
      });

      it('resets lostCount and retriesUsed', async () => {
        const t = await submit({ retry: { maxRetries: 1 } });
        await end(await claim(T0), 'lost', T0 + 1);
        await end(await claim(T0 + 2), 'failed', T0 + 3);
        await store.promoteDue(T0 + 10_000);
        const last = await end(await claim(T0 + 10_001), 'failed', T0 + 10_002);
        assert.equal(last?.task.state, 'failed');
        assert.equal(last?.task.lostCount, 1);
        assert.equal(last?.task.retriesUsed, 1);
        const r = await store.retryTask(t.id, 'user:alice', T0 + 10_003);
        assert.equal(r.lostCount, 0);
        assert.equal(r.retriesUsed, 0);
      });

      it('cancelled -> waiting', async () => {
        const t = await submit();
        await store.cancelTask(t.id, 'user:alice', T0 + 1);
        const r = await store.retryTask(t.id, 'user:alice', T0 + 2);
        assert.equal(r.state, 'waiting');
        assert.equal((await claim(T0 + 3)).task.id, t.id);
      });

      it('a task cancelled while running and retried before its worker reported: the old attempt is fenced and closed', async () => {
        const t = await submit();
        const old = await claim(T0);
        await store.cancelTask(t.id, 'user:alice', T0 + 1);
        await store.retryTask(t.id, 'user:alice', T0 + 2);
        const oldNow = await store.getAttempt(old.attempt.id);
        assert.notEqual(oldNow?.state, 'running');
        assert.equal((await store.checkReport(old.attempt.id, old.attempt.id)).ok, false);
        assert.deepEqual(await store.expiredAttempts(T0 + 10 * LEASE), []);
        const fresh = await claim(T0 + 3);
        assert.equal(fresh.attempt.number, 2);
        assert.equal(await end(old, 'cancelled', T0 + 4), null);
        assert.equal((await store.getTask(t.id))?.state, 'running');
      });

      it('refuses waiting, running and succeeded tasks with ConflictError, unknown with NotFoundError', async () => {
        const w = await submit({ now: T0 });
        const r = await submit({ now: T0 + 1, priority: 10 });
        const s = await submit({ now: T0 + 2, priority: 20 });
        await end(await claim(T0 + 3), 'succeeded', T0 + 4);
        await claim(T0 + 5);
        assert.equal((await store.getTask(r.id))?.state, 'running');
        for (const id of [w.id, r.id, s.id]) {
          const before = await snapshot(id);
          await assert.rejects(store.retryTask(id, 'user:alice', T0 + 6), ConflictError);
          assert.deepEqual(await snapshot(id), before);
        }
        await assert.rejects(store.retryTask(newTaskId(T0), 'user:alice', T0 + 7), NotFoundError);
      });
    });

    describe('promoteDue and nextDueAt', () => {
      it('moves due retrying tasks to waiting with a backoff_elapsed event, earliest first', async () => {
        assert.equal(await store.nextDueAt(), null);
        const a = await submit({ now: T0 });
        const b = await submit({ now: T0 + 1 });
        const ca = await claim(T0 + 2);
        const cb = await claim(T0 + 2);
        assert.deepEqual([ca.task.id, cb.task.id], [a.id, b.id]);
        await end(cb, 'failed', T0 + 10); // due T0 + 1010
        await end(ca, 'failed', T0 + 500); // due T0 + 1500
        assert.equal(await store.nextDueAt(), T0 + 1010);

        assert.deepEqual(await store.promoteDue(T0 + 1009), []);
        assert.deepEqual(await store.promoteDue(T0 + 1010), [b.id]);
        assert.equal(await store.nextDueAt(), T0 + 1500);
        const bt = await store.getTask(b.id);
        assert.equal(bt?.state, 'waiting');
        assert.equal(bt?.runAfter, null);
        assert.equal(bt?.updatedAt, T0 + 1010);
        const ev = (await store.listEvents(b.id)).at(-1)!;
        assert.deepEqual([ev.from, ev.to, ev.reason, ev.at], ['retrying', 'waiting', 'backoff_elapsed', T0 + 1010]);

        assert.deepEqual(await store.promoteDue(T0 + 5000), [a.id]);
        assert.equal(await store.nextDueAt(), null);
        assert.deepEqual(await store.promoteDue(T0 + 9000), []);
      });

      it('promotes several tasks due at once', async () => {
        const ids = [];
        for (let i = 0; i < 3; i++) ids.push((await submit({ now: T0 + i })).id);
        for (let i = 0; i < 3; i++) await end(await claim(T0 + 10), 'failed', T0 + 20);
        assert.deepEqual(new Set(await store.promoteDue(T0 + 1020)), new Set(ids));
        const listed = await store.listTasks({ state: 'waiting', limit: 10 });
        assert.equal(listed.tasks.length, 3);
      });
    });

    describe('leases', () => {
      it('renewLeases extends only the running attempts of that worker among the ids; expiredAttempts finds the rest', async () => {
        for (let i = 0; i < 4; i++) await submit({ now: T0 + i });
        const a = await claim(T0, 'w1');
        const b = await claim(T0, 'w1');
        const c = await claim(T0, 'w2');
        const d = await claim(T0, 'w1');

        assert.deepEqual(await store.expiredAttempts(T0 + LEASE), []);
        assert.deepEqual(
          new Set((await store.expiredAttempts(T0 + LEASE + 1)).map((x) => x.id)),
          new Set([a.attempt.id, b.attempt.id, c.attempt.id, d.attempt.id]),
        );

        await end(d, 'succeeded', T0 + 5_000);
        // c belongs to w2, d has ended, 999999 does not exist.
        assert.equal(await store.renewLeases('w1', [a.attempt.id, b.attempt.id, c.attempt.id, d.attempt.id, 999_999], T0 + 10_000, LEASE), 2);
        assert.equal((await store.getAttempt(a.attempt.id))?.leaseExpiresAt, T0 + 10_000 + LEASE);
        assert.equal((await store.getAttempt(c.attempt.id))?.leaseExpiresAt, T0 + LEASE);
        assert.equal((await store.getAttempt(d.attempt.id))?.leaseExpiresAt, T0 + LEASE);
        assert.equal(await store.renewLeases('w1', [], T0 + 10_000, LEASE), 0);

        const expired = await store.expiredAttempts(T0 + 20_000);
        assert.deepEqual(
          expired.map((x) => x.id),
          [c.attempt.id],
        );
        assert.equal(expired[0]!.state, 'running');

        // The sweeper ends it as lost; it is then requeued and no longer expired.
        const lost = await end(c, 'lost', T0 + 20_000);
        assert.equal(lost?.task.state, 'waiting');
        assert.deepEqual(await store.expiredAttempts(T0 + 20_000), []);
        assert.deepEqual(
          new Set((await store.expiredAttempts(T0 + 10_000 + LEASE + 1)).map((x) => x.id)),
          new Set([a.attempt.id, b.attempt.id]),
        );
      });
    });

    describe('logs', () => {
      const chunk = (seq: number, text: string, stream: 'stdout' | 'stderr' = 'stdout') => ({ seq, stream, data: Buffer.from(text) });

      it('appends and reads chunks in order with an afterId cursor and a limit', async () => {
        const t = await submit();
        const c = await claim();
        assert.equal(await store.appendLogs(c.attempt.id, c.attempt.id, [chunk(0, 'one\n'), chunk(1, 'two\n', 'stderr')], T0 + 1), true);
        const binary = Buffer.from([0, 255, 1, 254, 0x80, 0x0a]);
        assert.equal(await store.appendLogs(c.attempt.id, c.attempt.id, [chunk(2, 'three\n'), { seq: 3, stream: 'stdout', data: binary }], T0 + 2), true);
        assert.equal(await store.appendLogs(c.attempt.id, c.attempt.id, [], T0 + 2), true);

        const all = await store.readLogs(t.id, 0, 100);
        assert.deepEqual(
          all.map((l) => [l.attempt, l.seq, l.stream, l.at]),
          [
            [1, 0, 'stdout', T0 + 1],
            [1, 1, 'stderr', T0 + 1],
            [1, 2, 'stdout', T0 + 2],
            [1, 3, 'stdout', T0 + 2],
          ],
        );
        assert.equal(Buffer.concat(all.slice(0, 3).map((l) => l.data)).toString(), 'one\ntwo\nthree\n');
        assert.ok(Buffer.isBuffer(all[3]!.data));
        assert.deepEqual(Buffer.from(all[3]!.data), binary);
        for (let i = 1; i < all.length; i++) assert.ok(all[i]!.id > all[i - 1]!.id);

        assert.deepEqual(
          (await store.readLogs(t.id, all[1]!.id, 100)).map((l) => l.seq),
          [2, 3],
        );
        assert.deepEqual(
          (await store.readLogs(t.id, all[0]!.id, 2)).map((l) => l.seq),
          [1, 2],
        );
        assert.deepEqual(await store.readLogs(t.id, all[3]!.id, 100), []);
        assert.deepEqual(await store.readLogs(newTaskId(T0), 0, 100), []);
      });

      it('a re-sent chunk (same attempt and seq) is stored once', async () => {
        const t = await submit();
        const c = await claim();
        await store.appendLogs(c.attempt.id, c.attempt.id, [chunk(0, 'a'), chunk(1, 'b')], T0 + 1);
        assert.equal(await store.appendLogs(c.attempt.id, c.attempt.id, [chunk(1, 'b'), chunk(2, 'c')], T0 + 2), true);
        assert.equal(Buffer.concat((await store.readLogs(t.id, 0, 100)).map((l) => l.data)).toString(), 'abc');
      });

      it('keeps attempts apart: one log across attempts, filterable by attempt', async () => {
        const t = await submit();
        const c1 = await claim(T0);
        await store.appendLogs(c1.attempt.id, c1.attempt.id, [chunk(0, 'a1-0'), chunk(1, 'a1-1')], T0 + 1);
        await end(c1, 'failed', T0 + 2);
        await store.promoteDue(T0 + 5000);
        const c2 = await claim(T0 + 5001);
        await store.appendLogs(c2.attempt.id, c2.attempt.id, [chunk(0, 'a2-0'), chunk(1, 'a2-1', 'stderr')], T0 + 5002);

        const text = (ls: { data: Buffer }[]) => ls.map((l) => l.data.toString());
        assert.deepEqual(text(await store.readLogs(t.id, 0, 100)), ['a1-0', 'a1-1', 'a2-0', 'a2-1']);
        const second = await store.readLogs(t.id, 0, 100, 2);
        assert.deepEqual(text(second), ['a2-0', 'a2-1']);
        assert.ok(second.every((l) => l.attempt === 2));
        assert.deepEqual(text(await store.readLogs(t.id, 0, 100, 1)), ['a1-0', 'a1-1']);
        assert.deepEqual(text(await store.readLogs(t.id, second[0]!.id, 100, 2)), ['a2-1']);
        assert.deepEqual(await store.readLogs(t.id, 0, 100, 3), []);
      });
    });

    describe('tokens', () => {
      it('create, get, list, revoke, count', async () => {
        assert.equal(await store.countTokens(), 0);
        assert.deepEqual(await store.listTokens(), []);
        const a = await store.createToken({ id: 'tok_a', name: 'admin bootstrap', user: 'admin', role: 'admin', secretHash: 'a'.repeat(64), createdAt: T0 });
        assert.deepEqual(a, { id: 'tok_a', name: 'admin bootstrap', user: 'admin', role: 'admin', secretHash: 'a'.repeat(64), createdAt: T0, revokedAt: null, lastUsedAt: null });
        const w = await store.createToken({ id: 'tok_w', name: 'agents', user: 'admin', role: 'worker', secretHash: 'b'.repeat(64), createdAt: T0 + 1 });
        assert.deepEqual(await store.getToken('tok_a'), a);
        assert.equal(await store.getToken('nope'), null);
        assert.deepEqual(await store.listTokens(), [a, w]);
        assert.equal(await store.countTokens(), 2);

        assert.equal(await store.revokeToken('tok_w', T0 + 10), true);
        assert.equal((await store.getToken('tok_w'))?.revokedAt, T0 + 10);
        assert.equal(await store.revokeToken('tok_w', T0 + 20), false);
        assert.equal((await store.getToken('tok_w'))?.revokedAt, T0 + 10);
        assert.equal(await store.revokeToken('nope', T0 + 20), false);
        assert.equal(await store.countTokens(), 2);
        assert.equal((await store.getToken('tok_a'))?.revokedAt, null);
      });

      it('rejects a duplicate id with ConflictError', async () => {
        await store.createToken({ id: 'tok_a', name: 'x', user: 'u', role: 'user', secretHash: 'c'.repeat(64), createdAt: T0 });
        await assert.rejects(store.createToken({ id: 'tok_a', name: 'y', user: 'u', role: 'user', secretHash: 'd'.repeat(64), createdAt: T0 }), ConflictError);
        assert.equal(await store.countTokens(), 1);
      });
    });

    describe('workers', () => {
      it('upsert, list, mark disconnected, reconnect', async () => {
        await store.upsertWorker({ id: 'w2', hostname: 'beta', slots: 2, labels: { os: 'linux' }, connectedAt: T0, lastSeenAt: T0 });
        await store.upsertWorker({ id: 'w1', hostname: 'alpha', slots: 4, labels: {}, connectedAt: T0 + 1, lastSeenAt: T0 + 1 });
        assert.deepEqual(await store.listWorkers(), [
          { id: 'w1', hostname: 'alpha', slots: 4, labels: {}, connectedAt: T0 + 1, lastSeenAt: T0 + 1, state: 'connected' },
          { id: 'w2', hostname: 'beta', slots: 2, labels: { os: 'linux' }, connectedAt: T0, lastSeenAt: T0, state: 'connected' },
        ]);
        await store.markWorkerDisconnected('w2', T0 + 50);
        await store.markWorkerDisconnected('unknown', T0 + 50);
        const w2 = (await store.listWorkers()).find((w) => w.id === 'w2');
        assert.deepEqual([w2?.state, w2?.lastSeenAt], ['disconnected', T0 + 50]);
        await store.upsertWorker({ id: 'w2', hostname: 'beta2', slots: 8, labels: { os: 'linux', gpu: '1' }, connectedAt: T0 + 100, lastSeenAt: T0 + 100 });
        assert.deepEqual((await store.listWorkers()).find((w) => w.id === 'w2'), {
          id: 'w2',
          hostname: 'beta2',
          slots: 8,
          labels: { os: 'linux', gpu: '1' },
          connectedAt: T0 + 100,
          lastSeenAt: T0 + 100,
          state: 'connected',
        });
        assert.equal((await store.listWorkers()).length, 2);
      });
    });

    describe('migrate', () => {
      it('is idempotent: a second run changes nothing and the store keeps working', async () => {
        const t = await submit();
        await store.createToken({ id: 'tok', name: 'n', user: 'u', role: 'user', secretHash: 'e'.repeat(64), createdAt: T0 });
        await store.migrate();
        await store.migrate();
        assert.deepEqual((await store.getTask(t.id))?.id, t.id);
        assert.equal(await store.countTokens(), 1);
        await submit({ now: T0 + 1 });
        assert.equal((await store.listTasks({ limit: 10 })).tasks.length, 2);
        assert.equal((await claim(T0 + 2)).task.id, t.id);
      });
    });
  });
}
