/**
 * Store contract, read models (store/task-views.ts): summary rows and every
 * list filter against a reference filter in JS, counts after every kind of
 * transition against a recount, per-minute stats, running attempts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidInputError } from '../../src/core/errors.js';
import { TASK_STATES, type TaskState } from '../../src/core/task-state.js';
import type { Task } from '../../src/core/task.js';
import type { TaskFilter, TaskSummary } from '../../src/store/store.js';
import { monotonicFactory } from 'ulid';
import { endInput, EXPIRED, Harness, makeSpec, T0, type Opened } from './contract-harness.js';

const MIN = 60_000;
/** The minute holding T0 (T0 is 20 s into it). */
const M0 = T0 - (T0 % MIN);

const SUMMARY_KEYS = [
  'attempts',
  'createdAt',
  'dagRunId',
  'dagStep',
  'durationMs',
  'endedAt',
  'error',
  'exitCode',
  'id',
  'kind',
  'name',
  'outcome',
  'owner',
  'priority',
  'retriesUsed',
  'runAfter',
  'scheduleId',
  'scheduledAt',
  'signal',
  'skipReason',
  'startedAt',
  'state',
  'updatedAt',
  'workerId',
];

export function runViewContract(name: string, open: Opened): void {
  describe(`Store contract, task views: ${name}`, () => {
    const h = Harness.use(open);

    async function allTasks(): Promise<Task[]> {
      const out: Task[] = [];
      let cursor: string | undefined;
      do {
        const p = await h.store.listTasks({ limit: 500, ...(cursor === undefined ? {} : { cursor }) });
        out.push(...p.tasks);
        cursor = p.nextCursor ?? undefined;
      } while (cursor !== undefined);
      return out;
    }

    /**
     * The ids of every page of `q` (listTaskSummaries or listTasks), following
     * nextCursor; each page holds at most `limit` rows and its cursor must be
     * `cursorOf` its last row.
     */
    async function everyPage(list: 'summaries' | 'tasks', q: TaskFilter, cursorOf: (last: { id: string; updatedAt: number }) => string): Promise<string[]> {
      const got: string[] = [];
      let cursor: string | undefined;
      for (let pages = 0; ; pages++) {
        assert.ok(pages <= 30, 'paging ends');
        const page = { ...q, ...(cursor === undefined ? {} : { cursor }) };
        const p = list === 'summaries' ? await h.store.listTaskSummaries(page) : await h.store.listTasks(page);
        const rows = p.tasks as Array<{ id: string; updatedAt: number }>;
        assert.ok(rows.length <= q.limit);
        got.push(...rows.map((t) => t.id));
        if (p.nextCursor === null) return got;
        assert.equal(p.nextCursor, cursorOf(rows[rows.length - 1]!));
        cursor = p.nextCursor;
      }
    }

    /** countTasksByState for all and each owner equals a recount of the tasks, before and after foldCounters. */
    async function expectCounts(step: string, owners = ['alice', 'bob', 'nobody']): Promise<void> {
      const tasks = await allTasks();
      for (const fold of [false, true]) {
        if (fold) await h.store.foldCounters(0);
        for (const owner of [undefined, ...owners]) {
          const expected = Object.fromEntries(TASK_STATES.map((s) => [s, 0])) as Record<TaskState, number>;
          for (const t of tasks) if (owner === undefined || t.owner === owner) expected[t.state]++;
          assert.deepEqual(await h.store.countTasksByState(owner), expected, `${step} (owner ${owner ?? 'all'}${fold ? ', folded' : ''})`);
        }
      }
    }

    it('counts follow every kind of transition: submit, claim, end, retry, backoff, cancel, expiry, manual retry', async () => {
      await expectCounts('empty');
      const a = await h.submit({ owner: 'alice', now: T0, retry: { maxRetries: 1, baseDelayMs: 1000 } });
      const b = await h.submit({ owner: 'bob', now: T0 + 1 });
      const c = await h.submit({ owner: 'alice', now: T0 + 2 });
      await expectCounts('submitted');
      const ca = await h.claim(T0 + 3);
      assert.equal(ca.task.id, a.id);
      await expectCounts('claimed');
      await h.end(ca, 'failed', T0 + 4);
      await expectCounts('failed into retrying');
      const cb = await h.claim(T0 + 5, 'w1', { leaseMs: EXPIRED });
      assert.equal(cb.task.id, b.id);
      assert.ok(await h.sweep(cb, T0 + 6));
      await expectCounts('lease expired: lost, waiting again');
      assert.deepEqual(await h.store.promoteDue(T0 + 10_000, 10), [a.id]);
      await expectCounts('backoff over');
      await h.store.cancelTask(c.id, 'user:alice', T0 + 10_001);
      await expectCounts('cancelled while waiting');
      const ca2 = await h.claim(T0 + 10_002);
      assert.equal(ca2.task.id, a.id);
      await h.store.cancelTask(a.id, 'user:alice', T0 + 10_003);
      await expectCounts('cancelled while running');
      // Retried while its attempt still runs: ready until that attempt ends, then waiting.
      assert.equal((await h.store.retryTask(a.id, 'user:alice', T0 + 10_004)).state, 'ready');
      await expectCounts('retried: ready');
      await h.end(ca2, 'cancelled', T0 + 10_005);
      assert.equal((await h.store.getTask(a.id))?.state, 'waiting');
      await expectCounts('old attempt ended: released');
      await h.end(await h.claim(T0 + 10_006), 'succeeded', T0 + 10_007);
      await h.end(await h.claim(T0 + 10_008), 'succeeded', T0 + 10_009);
      await expectCounts('succeeded');
      assert.equal((await h.store.retryTask(c.id, 'user:alice', T0 + 10_010)).state, 'waiting');
      await expectCounts('manual retry of a cancelled task');
      const total = Object.values(await h.store.countTasksByState()).reduce((x, y) => x + y, 0);
      assert.equal(total, 3);
    });

    it('minute stats: attempts started (with first-attempt latency) and ends per minute, by owner', async () => {
      const a = await h.submit({ owner: 'alice', now: T0 });
      const c = await h.submit({ owner: 'alice', now: T0 + 1000, retry: { maxRetries: 1, baseDelayMs: 1000 } });
      const b = await h.submit({ owner: 'bob', now: T0 + 2000, retry: { maxRetries: 0 } });
      const ca = await h.claim(T0 + 5000); // M0, latency 5000
      assert.equal(ca.task.id, a.id);
      const cc = await h.claim(T0 + 6000); // M0, latency 5000
      assert.equal(cc.task.id, c.id);
      await h.end(cc, 'failed', T0 + 7000); // retrying: not an end
      const cb = await h.claim(T0 + 50_000); // M1, latency 48000
      assert.equal(cb.task.id, b.id);
      await h.end(ca, 'succeeded', T0 + 50_000); // M1
      await h.store.promoteDue(T0 + 70_000, 10);
      const cc2 = await h.claim(T0 + 70_001); // M1, second attempt: no latency
      assert.equal(cc2.task.id, c.id);
      await h.end(cb, 'failed', T0 + 130_000); // M2
      await h.store.cancelTask(c.id, 'user:alice', T0 + 130_500); // M2
      await h.end(cc2, 'cancelled', T0 + 131_000); // already cancelled: not counted again

      const stat = (minute: number, o: Partial<Record<'started' | 'succeeded' | 'failed' | 'cancelled' | 'latencyCount' | 'latencySumMs' | 'latencyMaxMs', number>>) => ({
        minute,
        started: 0,
        succeeded: 0,
        failed: 0,
        cancelled: 0,
        latencyCount: 0,
        latencySumMs: 0,
        latencyMaxMs: 0,
        ...o,
      });
      const all = [
        stat(M0, { started: 2, latencyCount: 2, latencySumMs: 10_000, latencyMaxMs: 5000 }),
        stat(M0 + MIN, { started: 2, succeeded: 1, latencyCount: 1, latencySumMs: 48_000, latencyMaxMs: 48_000 }),
        stat(M0 + 2 * MIN, { failed: 1, cancelled: 1 }),
      ];
      assert.deepEqual(await h.store.minuteStats(M0, M0 + 3 * MIN), all);
      // Folding the delta rows (PostgreSQL) changes no answer; a second fold has nothing left to fold.
      await h.store.foldCounters(M0);
      assert.equal(await h.store.foldCounters(M0), 0);
      assert.deepEqual(await h.store.minuteStats(M0, M0 + 3 * MIN), all);
      // `since` inside a minute includes that minute; `until` is exclusive.
      assert.deepEqual(await h.store.minuteStats(M0 + 30_000, M0 + 2 * MIN), all.slice(0, 2));
      assert.deepEqual(await h.store.minuteStats(M0 + MIN, M0 + 2 * MIN + 1), all.slice(1));
      assert.deepEqual(await h.store.minuteStats(M0 + 3 * MIN, M0 + 10 * MIN), []);
      assert.deepEqual(await h.store.minuteStats(M0, M0 + 3 * MIN, 'alice'), [
        stat(M0, { started: 2, latencyCount: 2, latencySumMs: 10_000, latencyMaxMs: 5000 }),
        stat(M0 + MIN, { started: 1, succeeded: 1 }),
        stat(M0 + 2 * MIN, { cancelled: 1 }),
      ]);
      assert.deepEqual(await h.store.minuteStats(M0, M0 + 3 * MIN, 'bob'), [
        stat(M0 + MIN, { started: 1, latencyCount: 1, latencySumMs: 48_000, latencyMaxMs: 48_000 }),
        stat(M0 + 2 * MIN, { failed: 1 }),
      ]);
      assert.deepEqual(await h.store.minuteStats(M0, M0 + 3 * MIN, 'nobody'), []);
      // Pruning drops whole minutes before `before`.
      assert.ok((await h.store.pruneMinuteStats(M0 + MIN)) >= 1);
      assert.deepEqual(await h.store.minuteStats(M0, M0 + 3 * MIN), all.slice(1));
      assert.equal(await h.store.pruneMinuteStats(M0 + MIN), 0);
      void b;
    });

    it('summaries: the outcome of a terminal task is its result\'s (timed_out, start_failed)', async () => {
      // The outcome of a terminal task is its result's: timed_out, start_failed (whose attempt is stored failed).
      const slow = await h.submit({ name: 'slow', now: T0 + 80, retry: { maxRetries: 0 } });
      await h.end(await h.claim(T0 + 81), 'timed_out', T0 + 82);
      let [s] = await h.store.getTaskSummaries([slow.id]);
      assert.deepEqual([s!.state, s!.outcome, s!.signal], ['failed', 'timed_out', 'SIGTERM']);
      const unstartable = await h.submit({ name: 'unstartable', now: T0 + 90 });
      const cU = await h.claim(T0 + 91);
      await h.store.endAttempt(cU.attempt.id, cU.attempt.fencingToken, { outcome: 'start_failed', exitCode: null, signal: null, error: 'cannot start x: no such file', durationMs: 0 }, 'worker:w1', T0 + 92, { workerId: 'w1' });
      [s] = await h.store.getTaskSummaries([unstartable.id]);
      assert.deepEqual([s!.state, s!.outcome, s!.error], ['failed', 'start_failed', 'cannot start x: no such file']);
    });

    it('summaries: named columns, the current attempt’s worker and timing, the final error', async () => {
      const waiting = await h.submit({ name: 'waits', now: T0 });
      const [s0] = await h.store.getTaskSummaries([waiting.id]);
      assert.deepEqual(Object.keys(s0!).sort(), SUMMARY_KEYS);
      assert.deepEqual(s0, {
        id: waiting.id,
        owner: 'alice',
        name: 'waits',
        kind: 'batch',
        state: 'waiting',
        priority: 0,
        attempts: 0,
        retriesUsed: 0,
        workerId: null,
        startedAt: null,
        endedAt: null,
        durationMs: null,
        exitCode: null,
        signal: null,
        error: null,
        outcome: null,
        runAfter: null,
        scheduleId: null,
        scheduledAt: null,
        dagRunId: null,
        dagStep: null,
        skipReason: null,
        createdAt: T0,
        updatedAt: T0,
      });
      await h.store.cancelTask(waiting.id, 'user:alice', T0 + 1);

      const ok = await h.submit({ name: 'ok', now: T0 + 10 });
      const cOk = await h.claim(T0 + 11, 'w7');
      let [s] = await h.store.getTaskSummaries([ok.id]);
      assert.deepEqual([s!.state, s!.workerId, s!.startedAt, s!.endedAt, s!.attempts], ['running', 'w7', T0 + 11, null, 1]);
      await h.end(cOk, 'succeeded', T0 + 40);
      [s] = await h.store.getTaskSummaries([ok.id]);
      assert.deepEqual([s!.state, s!.exitCode, s!.durationMs, s!.endedAt, s!.error, s!.updatedAt, s!.outcome], ['succeeded', 0, 25, T0 + 40, null, T0 + 40, 'succeeded']);

      // A terminal task's error is its result's.
      const bad = await h.submit({ name: 'bad', now: T0 + 50, retry: { maxRetries: 0 } });
      const cBad = await h.claim(T0 + 51);
      assert.equal(cBad.task.id, bad.id);
      await h.store.endAttempt(cBad.attempt.id, cBad.attempt.fencingToken, { ...endInput('failed'), exitCode: 3, error: 'exit 3: boom' }, 'worker:w1', T0 + 52, { workerId: 'w1' });
      [s] = await h.store.getTaskSummaries([bad.id]);
      assert.deepEqual([s!.state, s!.exitCode, s!.error, s!.outcome], ['failed', 3, 'exit 3: boom', 'failed']);

      // A task that is not terminal shows its current attempt's error (lost), and its backoff.
      const lost = await h.submit({ name: 'lost', now: T0 + 60 });
      assert.ok(await h.sweep(await h.claim(T0 + 61, 'w1', { leaseMs: EXPIRED }), T0 + 62));
      [s] = await h.store.getTaskSummaries([lost.id]);
      assert.deepEqual([s!.state, s!.error, s!.workerId, s!.endedAt, s!.outcome], ['waiting', 'lease expired', 'w1', T0 + 62, 'lost']);
      const retrying = await h.submit({ name: 'retrying', now: T0 + 70, retry: { maxRetries: 2, baseDelayMs: 1000 } });
      await h.store.cancelTask(lost.id, 'user:alice', T0 + 70);
      await h.end(await h.claim(T0 + 71), 'failed', T0 + 72);
      [s] = await h.store.getTaskSummaries([retrying.id]);
      assert.equal(s!.state, 'retrying');
      assert.equal(s!.outcome, 'failed');
      assert.equal(s!.retriesUsed, 1);

      assert.ok(s!.runAfter !== null && s!.runAfter > T0 + 72);

      // The list and getTaskSummaries agree; unknown ids are left out.
      const page = await h.store.listTaskSummaries({ limit: 50 });
      assert.deepEqual(
        page.tasks.map((t) => t.id),
        [retrying.id, lost.id, bad.id, ok.id, waiting.id],
      );
      const byId = (xs: TaskSummary[]) => [...xs].sort((x, y) => (x.id < y.id ? -1 : 1));
      assert.deepEqual(byId(await h.store.getTaskSummaries([...page.tasks.map((t) => t.id), '01J00000000000000000000000', 'nope'])), byId(page.tasks));
      assert.deepEqual(await h.store.getTaskSummaries([]), []);
      await assert.rejects(
        h.store.getTaskSummaries(Array.from({ length: 1001 }, (_, i) => `id${i}`)),
        (e: unknown) => e instanceof InvalidInputError && e.field === 'ids',
      );
    });

    it('every list filter, alone and combined, pages exactly like a reference filter (summaries and tasks)', async () => {
      // Ids from a factory of this test's own, so each id's time is exactly its task's createdAt
      // (newTaskId is monotonic over the whole process, whose earlier tests used later times), but
      // one task's id runs 30 s ahead of its createdAt, as after a clock step back.
      const ids = monotonicFactory();
      const submitAt = (owner: string, name: string, now: number, idTime = now) =>
        h.store.createTask(ids(idTime), owner, makeSpec({ name }), `user:${owner}`, now);
      const names = ['build-web', 'build-api', 'Build-docs', 'deploy', 'a%b_c', 'a*b?[c]', 'dir\\x', 'naïve-ü', '日本-job', 'emoji-😀-1', 'emoji-😀', 'emoji-😁'];
      const owners = ['alice', 'bob', 'carol'];
      for (let i = 0; i < 24; i++) await submitAt(owners[i % 3]!, names[i % names.length]!, T0 + i * 1000, i === 23 ? T0 + 53_000 : T0 + i * 1000);
      // Some variety of states: claim the six oldest, end four of them, cancel three more.
      const claims = [];
      for (let i = 0; i < 6; i++) claims.push(await h.claim(T0 + 30_000 + i));
      await h.end(claims[0]!, 'succeeded', T0 + 31_000);
      await h.end(claims[1]!, 'succeeded', T0 + 31_001);
      await h.store.cancelTask(claims[2]!.task.id, 'user:x', T0 + 31_002);
      await h.end(claims[3]!, 'succeeded', T0 + 31_003);
      const all = await allTasks();
      for (const t of all.filter((x) => x.state === 'waiting').slice(0, 3)) await h.store.cancelTask(t.id, 'user:x', T0 + 32_000);
      const tasks = await allTasks();
      assert.equal(tasks.length, 24);
      const someId = tasks[7]!.id;

      const filters: Array<Omit<TaskFilter, 'limit'>> = [
        {},
        { state: 'waiting' },
        { state: 'succeeded' },
        { owner: 'alice' },
        { owner: 'bob', state: 'cancelled' },
        { owner: 'alice', state: 'running' },
        { namePrefix: 'build-' },
        { namePrefix: 'B' },
        { namePrefix: 'a%b' },
        { namePrefix: 'a*' },
        { namePrefix: 'dir\\' },
        { namePrefix: 'naïve' },
        { namePrefix: '日本' },
        { namePrefix: 'emoji-😀' },
        { namePrefix: 'nothing-like-this' },
        { owner: 'bob', namePrefix: 'build' },
        { owner: 'carol', namePrefix: 'emoji-' },
        { state: 'waiting', namePrefix: 'd' },
        { idPrefix: someId },
        { idPrefix: someId.slice(0, 10) },
        { idPrefix: someId.slice(0, 12) },
        { idPrefix: '0' },
        { idPrefix: 'Z' },
        { owner: 'alice', idPrefix: someId.slice(0, 9) },
        { createdAfter: T0 + 5000 },
        { createdBefore: T0 + 5000 },
        { createdAfter: T0 + 2500.5, createdBefore: T0 + 9000 },
        { owner: 'alice', createdAfter: T0 + 3000, createdBefore: T0 + 15_000 },
        { state: 'waiting', createdAfter: T0 + 10_000 },
        { createdAfter: T0 + 24_000 },
        { createdBefore: T0 + 23_001 },
        { createdAfter: T0 + 23_000, createdBefore: T0 + 23_001 },
        { createdAfter: -5, createdBefore: 2 ** 50 },
        { namePrefix: 'build', createdAfter: T0 + 1000, idPrefix: someId.slice(0, 8) },
      ];
      const matches = (t: Task, f: Omit<TaskFilter, 'limit'>) =>
        (f.state === undefined || t.state === f.state) &&
        (f.owner === undefined || t.owner === f.owner) &&
        (f.namePrefix === undefined || t.name.startsWith(f.namePrefix)) &&
        (f.idPrefix === undefined || t.id.startsWith(f.idPrefix)) &&
        (f.createdAfter === undefined || t.createdAt >= f.createdAfter) &&
        (f.createdBefore === undefined || t.createdAt < f.createdBefore);
      for (const f of filters) {
        const expected = tasks.filter((t) => matches(t, f)).map((t) => t.id);
        for (const limit of [1, 3, 50]) {
          for (const list of ['summaries', 'tasks'] as const) {
            const got = await everyPage(list, { ...f, limit }, (last) => last.id);
            assert.deepEqual(got, expected, `${list} ${JSON.stringify(f)} limit ${limit}`);
          }
        }
      }
      // A cursor combined with filters starts after it.
      const firstTwo = await h.store.listTaskSummaries({ owner: 'alice', limit: 2 });
      const rest = await h.store.listTaskSummaries({ owner: 'alice', limit: 50, cursor: firstTwo.nextCursor! });
      assert.deepEqual(
        rest.tasks.map((t) => t.id),
        tasks.filter((t) => t.owner === 'alice').map((t) => t.id).slice(2),
      );
    });

    it('order ended: failed or cancelled tasks newest end first (ties by id), paged by its own cursor, with the other filters', async () => {
      // Eight tasks; the older-created fail later, so end order is not creation order.
      const made: Task[] = [];
      for (let i = 0; i < 8; i++) made.push(await h.submit({ owner: i % 2 ? 'bob' : 'alice', name: i < 4 ? 'build-x' : 'deploy', now: T0 + i, retry: { maxRetries: 0 } }));
      const claims = [];
      for (let i = 0; i < 6; i++) claims.push(await h.claim(T0 + 100 + i));
      assert.deepEqual(claims.map((c) => c.task.id), made.slice(0, 6).map((t) => t.id));
      // Ends: task 0 last, tasks 2 and 3 at the same ms, task 5 succeeds (never in the list).
      const endAt = [T0 + 9_000, T0 + 5_000, T0 + 7_000, T0 + 7_000, T0 + 6_000];
      for (let i = 0; i < 5; i++) await h.end(claims[i]!, 'failed', endAt[i]!);
      await h.end(claims[5]!, 'succeeded', T0 + 9_500);
      await h.store.cancelTask(made[6]!.id, 'user:alice', T0 + 8_000);
      await h.store.cancelTask(made[7]!.id, 'user:bob', T0 + 4_000);

      const newestEndFirst = (xs: Task[]) => [...xs].sort((a, b) => b.updatedAt - a.updatedAt || (a.id < b.id ? 1 : -1)).map((t) => t.id);
      const failed = (await Promise.all(made.slice(0, 5).map((t) => h.store.getTask(t.id)))) as Task[];
      assert.deepEqual(newestEndFirst(failed), [made[0]!.id, made[3]!.id, made[2]!.id, made[4]!.id, made[1]!.id], 'the reference itself');
      const cases: Array<[Omit<TaskFilter, 'limit' | 'order'>, string[]]> = [
        [{ state: 'failed' }, newestEndFirst(failed)],
        [{ state: 'cancelled' }, [made[6]!.id, made[7]!.id]],
        [{ state: 'failed', owner: 'alice' }, newestEndFirst(failed.filter((t) => t.owner === 'alice'))],
        [{ state: 'failed', owner: 'bob' }, newestEndFirst(failed.filter((t) => t.owner === 'bob'))],
        [{ state: 'failed', namePrefix: 'build' }, newestEndFirst(failed.filter((t) => t.name.startsWith('build')))],
        [{ state: 'failed', createdAfter: T0 + 2 }, newestEndFirst(failed.filter((t) => t.createdAt >= T0 + 2))],
        [{ state: 'cancelled', owner: 'bob', namePrefix: 'dep' }, [made[7]!.id]],
        [{ state: 'failed', owner: 'nobody' }, []],
      ];
      for (const [f, expected] of cases) {
        for (const limit of [1, 2, 50]) {
          for (const list of ['summaries', 'tasks'] as const) {
            const got = await everyPage(list, { ...f, order: 'ended', limit }, (last) => `${last.updatedAt}.${last.id}`);
            assert.deepEqual(got, expected, `${list} ${JSON.stringify(f)} limit ${limit}`);
          }
        }
      }

      // A retried task leaves the list; when it fails again it is the newest end.
      await h.store.retryTask(made[1]!.id, 'user:bob', T0 + 10_000);
      let page = await h.store.listTaskSummaries({ state: 'failed', order: 'ended', limit: 50 });
      assert.ok(!page.tasks.some((t) => t.id === made[1]!.id));
      await h.end(await h.claim(T0 + 10_001), 'failed', T0 + 10_002);
      page = await h.store.listTaskSummaries({ state: 'failed', order: 'ended', limit: 2 });
      assert.deepEqual(page.tasks.map((t) => t.id), [made[1]!.id, made[0]!.id]);
      // order created (the default, also when named) is unchanged: newest created first.
      const created = await h.store.listTaskSummaries({ state: 'failed', order: 'created', limit: 50 });
      assert.deepEqual(created.tasks.map((t) => t.id), failed.map((t) => t.id).reverse());
    });

    it('order ended needs state failed or cancelled, and each order takes only its own cursors (else InvalidInputError naming the field)', async () => {
      const t = await h.submit();
      const bad: Array<[TaskFilter, string]> = [
        [{ order: 'ended', limit: 10 }, 'order'],
        [{ order: 'ended', state: 'succeeded', limit: 10 }, 'order'],
        [{ order: 'ended', state: 'waiting', limit: 10 }, 'order'],
        [{ order: 'newest' as 'ended', state: 'failed', limit: 10 }, 'order'],
        [{ order: 'ended', state: 'failed', cursor: t.id, limit: 10 }, 'cursor'],
        [{ order: 'ended', state: 'failed', cursor: '12.', limit: 10 }, 'cursor'],
        [{ order: 'ended', state: 'failed', cursor: `99999999999999999.${t.id}`, limit: 10 }, 'cursor'],
        [{ order: 'ended', state: 'failed', cursor: `-1.${t.id}`, limit: 10 }, 'cursor'],
        [{ state: 'failed', cursor: `${T0}.${t.id}`, limit: 10 }, 'cursor'],
        [{ order: 'created', cursor: `${T0}.${t.id}`, limit: 10 }, 'cursor'],
      ];
      for (const [f, field] of bad) {
        for (const list of [h.store.listTaskSummaries.bind(h.store), h.store.listTasks.bind(h.store)]) {
          await assert.rejects(list(f), (e: unknown) => e instanceof InvalidInputError && e.field === field, JSON.stringify(f));
        }
      }
    });

    it('an id prefix must be 1 to 26 upper-case Crockford characters (else InvalidInputError naming id); times must be numbers', async () => {
      for (const bad of ['', 'abc', '01J-', 'I', 'L', 'O', 'U', '0'.repeat(27), '01J%']) {
        for (const list of [h.store.listTaskSummaries.bind(h.store), h.store.listTasks.bind(h.store)]) {
          await assert.rejects(list({ idPrefix: bad, limit: 10 }), (e: unknown) => e instanceof InvalidInputError && e.field === 'id', JSON.stringify(bad));
        }
      }
      await assert.rejects(h.store.listTaskSummaries({ limit: 0 }), (e: unknown) => e instanceof InvalidInputError && e.field === 'limit');
      for (const [field, v] of [['createdAfter', NaN], ['createdBefore', Infinity]] as const) {
        await assert.rejects(h.store.listTaskSummaries({ [field]: v, limit: 10 }), (e: unknown) => e instanceof InvalidInputError && e.field === field);
      }
    });

    it('runningAttempts: every running attempt (or one worker’s), oldest first, with its task', async () => {
      const t1 = await h.submit({ name: 'one', owner: 'alice', now: T0 });
      const t2 = await h.submit({ name: 'two', owner: 'bob', now: T0 + 1 });
      const t3 = await h.submit({ name: 'three', owner: 'alice', now: T0 + 2 });
      await h.submit({ name: 'four', now: T0 + 3 });
      const c1 = await h.claim(T0 + 10, 'w1');
      const c2 = await h.claim(T0 + 20, 'w2');
      const c3 = await h.claim(T0 + 30, 'w1');
      const c4 = await h.claim(T0 + 40, 'w1');
      await h.end(c4, 'succeeded', T0 + 41);
      const view = (c: typeof c1, taskName: string, owner: string) => ({ attemptId: c.attempt.id, taskId: c.task.id, taskName, owner, workerId: c.attempt.workerId, startedAt: c.attempt.startedAt });
      assert.deepEqual([c1.task.id, c2.task.id, c3.task.id], [t1.id, t2.id, t3.id]);
      assert.deepEqual(await h.store.runningAttempts(), [view(c1, 'one', 'alice'), view(c2, 'two', 'bob'), view(c3, 'three', 'alice')]);
      assert.deepEqual(await h.store.runningAttempts('w1'), [view(c1, 'one', 'alice'), view(c3, 'three', 'alice')]);
      assert.deepEqual(await h.store.runningAttempts('w2'), [view(c2, 'two', 'bob')]);
      assert.deepEqual(await h.store.runningAttempts('nobody'), []);
      // A cancelled task's attempt runs until it reports: it is still listed.
      await h.store.cancelTask(t1.id, 'user:alice', T0 + 50);
      assert.equal((await h.store.runningAttempts('w1')).length, 2);
      await h.end(c1, 'cancelled', T0 + 51);
      assert.deepEqual(await h.store.runningAttempts('w1'), [view(c3, 'three', 'alice')]);
    });
  });
}
