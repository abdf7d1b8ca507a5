/**
 * Store contract: createTask with claimFor (store/tasks.ts CreateOptions),
 * the submit that claims its own task when nothing else waits. The claim
 * must be the one claimMany would have made a moment later: same states,
 * events, attempt, counters, and ending it works like any claim's end.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newTaskId } from '../../src/core/ids.js';
import { Harness, LEASE, makeSpec, T0, type Opened } from './contract-harness.js';

const W1 = { id: 'w1', labels: { os: 'linux', gpu: 'a100' } };

export function runSubmitClaimContract(name: string, open: Opened): void {
  describe(`Store contract, createTask claiming for a worker: ${name}`, () => {
    const h = Harness.use(open);

    it('on an idle store the new task is claimed in the same write: running, attempt 1, three events, counted once as running', async () => {
      const id = newTaskId(T0);
      const r = await h.store.createTask(id, 'bob', makeSpec({ requires: { os: 'linux' } }), 'user:bob', T0, undefined, { claimFor: { worker: W1, leaseMs: LEASE } });
      assert.equal(r.created, true);
      assert.ok(r.claim, 'expected the task to be claimed');
      const { task, attempt } = r.claim;
      assert.deepEqual(r.task, task);
      assert.equal(task.state, 'running');
      assert.equal(task.attempts, 1);
      assert.equal(task.currentAttemptId, attempt.id);
      assert.deepEqual(await h.store.getTask(id), task);
      assert.equal(attempt.taskId, id);
      assert.equal(attempt.number, 1);
      assert.equal(attempt.workerId, 'w1');
      assert.equal(attempt.state, 'running');
      assert.equal(attempt.startedAt, T0);
      assert.match(attempt.fencingToken, /^[0-9a-f]{32}$/);
      if (h.callerClock) assert.equal(attempt.leaseExpiresAt, T0 + LEASE);
      assert.deepEqual(await h.store.getAttempt(attempt.id), attempt);
      assert.deepEqual(
        (await h.store.listEvents(id)).map((e) => [e.from, e.to, e.reason, e.actor, e.at, e.detail]),
        [
          [null, 'ready', 'submitted', 'user:bob', T0, null],
          ['ready', 'waiting', 'released', 'user:bob', T0, null],
          ['waiting', 'running', 'claimed', 'scheduler', T0, { attemptId: attempt.id, attempt: 1, workerId: 'w1' }],
        ],
      );
      const counts = await h.store.countTasksByState('bob');
      assert.equal(counts.running, 1);
      assert.equal(counts.waiting, 0);
      // Not claimable again; its worker ends it with the token it was given.
      assert.equal(await h.store.claimNext({ id: 'w2', labels: {} }, T0 + 1, LEASE), null);
      const ended = await h.end(r.claim, 'succeeded', T0 + 5);
      assert.equal(ended?.task.state, 'succeeded');
    });

    it('with another task waiting, the new one is stored waiting (no claim) and the older one is claimed first', async () => {
      const older = await h.submit({ now: T0 });
      const r = await h.store.createTask(newTaskId(T0 + 1), 'alice', makeSpec(), 'user:alice', T0 + 1, undefined, { claimFor: { worker: W1, leaseMs: LEASE } });
      assert.equal(r.claim ?? null, null);
      assert.equal(r.task.state, 'waiting');
      assert.deepEqual(await h.store.getTask(r.task.id), r.task);
      assert.deepEqual((await h.store.listEvents(r.task.id)).map((e) => e.reason), ['submitted', 'released']);
      assert.equal((await h.claim(T0 + 2)).task.id, older.id);
    });

    it('a worker whose labels do not satisfy the task`s requires does not claim it', async () => {
      const r = await h.store.createTask(newTaskId(T0), 'bob', makeSpec({ requires: { os: 'windows' } }), 'user:bob', T0, undefined, { claimFor: { worker: W1, leaseMs: LEASE } });
      assert.equal(r.claim ?? null, null);
      assert.equal((await h.store.getTask(r.task.id))!.state, 'waiting');
      assert.equal((await h.store.listAttempts(r.task.id)).length, 0);
    });

    it('a task to run later is never claimed at submit', async () => {
      const r = await h.store.createTask(newTaskId(T0), 'bob', makeSpec(), 'user:bob', T0, undefined, { runAfter: T0 + 60_000, claimFor: { worker: W1, leaseMs: LEASE } });
      assert.equal(r.claim ?? null, null);
      assert.equal(r.task.state, 'ready');
      assert.deepEqual(await h.store.getTask(r.task.id), r.task);
    });

    it('a repeat of an idempotent submit claims nothing more', async () => {
      const idem = { key: 'k1', requestHash: 'h1' };
      const first = await h.store.createTask(newTaskId(T0), 'bob', makeSpec(), 'user:bob', T0, idem, { claimFor: { worker: W1, leaseMs: LEASE } });
      assert.ok(first.claim);
      const again = await h.store.createTask(newTaskId(T0 + 1), 'bob', makeSpec(), 'user:bob', T0 + 1, idem, { claimFor: { worker: W1, leaseMs: LEASE } });
      assert.equal(again.created, false);
      assert.equal(again.claim ?? null, null);
      assert.equal(again.task.id, first.task.id);
      assert.equal((await h.store.listAttempts(first.task.id)).length, 1);
    });
  });
}
