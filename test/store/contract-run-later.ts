/**
 * Store contract, issue 10: a task's cwd, tasks submitted to run later
 * (stored `ready` with runAfter, released by promoteDue), the submitted
 * event's detail (a rerun's rerunOf), and a start failure's end (no retry).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newTaskId } from '../../src/core/ids.js';
import { Harness, makeSpec, T0, type Opened } from './contract-harness.js';

export function runRunLaterContract(name: string, open: Opened): void {
  describe(`Store contract, cwd / run later / start failures: ${name}`, () => {
    const h = Harness.use(open);

    it('stores and returns cwd (and null without one), through createTask and createTasks', async () => {
      const a = await h.store.createTask(newTaskId(T0), 'bob', makeSpec({ cwd: '/srv/app' }), 'user:bob', T0);
      assert.equal(a.task.cwd, '/srv/app');
      assert.equal((await h.store.getTask(a.task.id))!.cwd, '/srv/app');
      const b = await h.store.createTask(newTaskId(T0), 'bob', makeSpec(), 'user:bob', T0);
      assert.equal((await h.store.getTask(b.task.id))!.cwd, null);
      const batch = await h.store.createTasks('bob', [{ id: newTaskId(T0), spec: makeSpec({ cwd: '/tmp' }) }, { id: newTaskId(T0), spec: makeSpec() }], 'user:bob', T0);
      assert.deepEqual(batch.tasks.map((t) => t.cwd), ['/tmp', null]);
      for (const t of batch.tasks) assert.deepEqual(await h.store.getTask(t.id), t);
    });

    it('a task to run later is ready with runAfter, not claimable, released when due (event released, scheduled)', async () => {
      const at = T0 + 60_000;
      const r = await h.store.createTask(newTaskId(T0), 'bob', makeSpec(), 'user:bob', T0, undefined, { runAfter: at });
      assert.equal(r.task.state, 'ready');
      assert.equal(r.task.runAfter, at);
      assert.deepEqual(await h.store.getTask(r.task.id), r.task);
      assert.deepEqual(
        (await h.store.listEvents(r.task.id)).map((e) => [e.from, e.to, e.reason, e.detail]),
        [[null, 'ready', 'submitted', { runAfter: at }]],
      );
      assert.equal(await h.store.claimNext({ id: 'w1', labels: {} }, T0 + 1, 15_000), null);
      assert.equal(await h.store.nextDueAt(), at);
      assert.deepEqual(await h.store.promoteDue(at - 1, 100), []);
      assert.deepEqual((await h.store.listTasks({ state: 'ready', limit: 10 })).tasks.map((t) => t.id), [r.task.id]);

      assert.deepEqual(await h.store.promoteDue(at, 100), [r.task.id]);
      const released = (await h.store.getTask(r.task.id))!;
      assert.equal(released.state, 'waiting');
      assert.equal(released.runAfter, null);
      const last = (await h.store.listEvents(r.task.id)).at(-1)!;
      assert.deepEqual([last.from, last.to, last.reason, last.actor, last.detail], ['ready', 'waiting', 'released', 'scheduler', { scheduled: true, runAfter: at }]);
      assert.equal(await h.store.nextDueAt(), null);
      assert.equal((await h.claim(at + 1)).task.id, r.task.id);
    });

    it('nextDueAt is the earliest of retrying and scheduled tasks; promoteDue takes both in due order', async () => {
      const retried = await h.submit({ now: T0, retry: { maxRetries: 1, baseDelayMs: 5000 } });
      await h.end(await h.claim(T0 + 1), 'failed', T0 + 2); // due at T0 + 5002
      const later = await h.store.createTask(newTaskId(T0), 'bob', makeSpec(), 'user:bob', T0, undefined, { runAfter: T0 + 3000 });
      assert.equal(await h.store.nextDueAt(), T0 + 3000);
      assert.deepEqual(await h.store.promoteDue(T0 + 10_000, 100), [later.task.id, retried.id]);
      assert.equal(await h.store.nextDueAt(), null);
    });

    it('a scheduled task can be cancelled (it is not released later)', async () => {
      const r = await h.store.createTask(newTaskId(T0), 'bob', makeSpec(), 'user:bob', T0, undefined, { runAfter: T0 + 1000 });
      const c = await h.store.cancelTask(r.task.id, 'user:bob', T0 + 1);
      assert.equal(c.task.state, 'cancelled');
      assert.equal(c.task.runAfter, null);
      assert.equal(await h.store.nextDueAt(), null);
      assert.deepEqual(await h.store.promoteDue(T0 + 5000, 100), []);
      assert.equal((await h.store.getTask(r.task.id))!.state, 'cancelled');
    });

    it('the submitted event carries the given detail (a rerun: rerunOf), merged with runAfter', async () => {
      const a = await h.store.createTask(newTaskId(T0), 'bob', makeSpec(), 'user:bob', T0, undefined, { detail: { rerunOf: 'X' } });
      assert.equal(a.task.state, 'waiting');
      assert.deepEqual((await h.store.listEvents(a.task.id)).map((e) => [e.reason, e.detail]), [['submitted', { rerunOf: 'X' }], ['released', null]]);
      const b = await h.store.createTask(newTaskId(T0), 'bob', makeSpec(), 'user:bob', T0, undefined, { detail: { rerunOf: 'Y' }, runAfter: T0 + 5 });
      assert.deepEqual((await h.store.listEvents(b.task.id)).map((e) => [e.reason, e.detail]), [['submitted', { rerunOf: 'Y', runAfter: T0 + 5 }]]);
    });

    it('createTasks: items with runAfter are stored ready (submitted event only), the others released', async () => {
      const ids = [newTaskId(T0), newTaskId(T0), newTaskId(T0)];
      const r = await h.store.createTasks(
        'bob',
        [{ id: ids[0]!, spec: makeSpec() }, { id: ids[1]!, spec: makeSpec(), runAfter: T0 + 2000 }, { id: ids[2]!, spec: makeSpec(), runAfter: null }],
        'user:bob',
        T0,
      );
      assert.deepEqual(r.tasks.map((t) => [t.state, t.runAfter]), [['waiting', null], ['ready', T0 + 2000], ['waiting', null]]);
      for (const t of r.tasks) assert.deepEqual(await h.store.getTask(t.id), t);
      assert.deepEqual((await h.store.listEvents(ids[1]!)).map((e) => [e.reason, e.detail]), [['submitted', { runAfter: T0 + 2000 }]]);
      assert.deepEqual((await h.store.listEvents(ids[0]!)).map((e) => [e.reason, e.detail]), [['submitted', null], ['released', null]]);
      assert.equal(await h.store.nextDueAt(), T0 + 2000);
      assert.deepEqual(await h.store.promoteDue(T0 + 2000, 10), [ids[1]]);
    });

    it('a start failure fails the task at once without a retry; the attempt is stored failed', async () => {
      const t = await h.submit({ retry: { maxRetries: 3 } });
      const c = await h.claim(T0 + 1);
      const error = 'cannot start ./backup.sh: not found in the work directory /w (a relative path resolves there; use an absolute path or --cwd)';
      const r = await h.store.endAttempt(c.attempt.id, c.attempt.fencingToken, { outcome: 'start_failed', exitCode: null, signal: null, error, durationMs: 1 }, 'worker:w1', T0 + 2, { workerId: 'w1' });
      assert.ok(r);
      const task = (await h.store.getTask(t.id))!;
      assert.equal(task.state, 'failed');
      assert.equal(task.retriesUsed, 0);
      assert.deepEqual(task.result, { outcome: 'start_failed', attempt: 1, exitCode: null, signal: null, error, durationMs: 1 });
      const [attempt] = await h.store.listAttempts(t.id);
      assert.equal(attempt!.state, 'failed');
      assert.equal(attempt!.error, error);
      assert.deepEqual((await h.store.listEvents(t.id)).at(-1)!.reason, 'start_failed');
      // The same through endAndClaim (the batched path a worker session uses).
      const t2 = await h.submit({ now: T0 + 3 });
      const c2 = await h.claim(T0 + 4);
      await h.store.endAndClaim(
        [{ attemptId: c2.attempt.id, fencingToken: c2.attempt.fencingToken, end: { outcome: 'start_failed', exitCode: null, signal: null, error: 'cannot start x: no such file', durationMs: 0 }, actor: 'worker:w1', guard: { workerId: 'w1' } }],
        null,
        T0 + 5,
      );
      assert.equal((await h.store.getTask(t2.id))!.state, 'failed');
      assert.equal((await h.store.listAttempts(t2.id))[0]!.state, 'failed');
    });
  });
}
