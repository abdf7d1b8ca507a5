/** Worker states and the listing's filtering (src/server/worker-views.ts), as pure functions of the rows, the links and the time. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { workerViews, workerState } from '../../src/server/worker-views.js';
import type { RunningAttemptView, WorkerRecord } from '../../src/store/store.js';

const NOW = 1_700_000_000_000;
const LEASE = 15_000;
const row = (over: Partial<WorkerRecord> = {}): WorkerRecord => ({ id: 'w1', hostname: 'h', slots: 4, labels: {}, connectedAt: NOW - 60_000, lastSeenAt: NOW - 1000, state: 'connected', drainingAt: null, ...over });

describe('worker state', () => {
  it('connected, draining, lost and disconnected, from the store row and this server\'s link', () => {
    assert.equal(workerState(row(), undefined, NOW, LEASE).state, 'connected', 'connected elsewhere, heard from recently');
    assert.equal(workerState(row({ lastSeenAt: NOW - LEASE - 1 }), undefined, NOW, LEASE).state, 'lost', 'the store says connected, nobody heard from it');
    assert.equal(workerState(row({ lastSeenAt: NOW - LEASE - 1 }), { draining: false, lastHeardAt: NOW - 10 }, NOW, LEASE).state, 'connected', 'this server just heard from it');
    assert.equal(workerState(row(), { draining: false, lastHeardAt: NOW - LEASE - 5 }, NOW, LEASE).state, 'connected', "the store's heartbeat is newer");
    assert.equal(workerState(row({ drainingAt: NOW - 5 }), undefined, NOW, LEASE).state, 'draining');
    assert.equal(workerState(row(), { draining: true, lastHeardAt: NOW }, NOW, LEASE).state, 'draining');
    assert.equal(workerState(row({ drainingAt: NOW - 5, lastSeenAt: NOW - LEASE - 1 }), undefined, NOW, LEASE).state, 'lost', 'lost wins over draining');
    assert.equal(workerState(row({ state: 'disconnected', drainingAt: NOW - 5 }), undefined, NOW, LEASE).state, 'disconnected');
    assert.equal(workerState(row({ state: 'disconnected' }), { draining: false, lastHeardAt: NOW }, NOW, LEASE).state, 'connected', 'a live link here wins over a stale row');
    assert.equal(workerState(row({ lastSeenAt: NOW - 5000 }), { draining: false, lastHeardAt: NOW - 20 }, NOW, LEASE).heardAt, NOW - 20);
  });

  it('lists slots used over everyone, running attempts only the viewer\'s', async () => {
    const ra = (attemptId: number, owner: string, workerId = 'w1'): RunningAttemptView => ({ attemptId, taskId: `T${attemptId}`, taskName: `n${attemptId}`, owner, workerId, startedAt: NOW - attemptId });
    const store = {
      listWorkers: async () => [row(), row({ id: 'w2', state: 'disconnected', lastSeenAt: NOW - 99_000 })],
      runningAttempts: async (w?: string) => [ra(1, 'alice'), ra(2, 'bob'), ra(3, 'alice', 'w2')].filter((a) => !w || a.workerId === w),
    };
    const deps = { store, links: () => [], now: () => NOW, leaseMs: LEASE };
    const admin = await workerViews(deps, null);
    assert.deepEqual(admin.map((w) => [w.id, w.state, w.slotsUsed, w.runningAttempts.map((a) => a.attemptId)]), [['w1', 'connected', 2, [1, 2]], ['w2', 'disconnected', 1, [3]]]);
    const bob = await workerViews(deps, 'bob');
    assert.deepEqual(bob.map((w) => [w.id, w.slotsUsed, w.runningAttempts.map((a) => a.taskId)]), [['w1', 2, ['T2']], ['w2', 1, []]]);
    assert.deepEqual((await workerViews(deps, null, ['w2'])).map((w) => w.id), ['w2']);
    assert.deepEqual(Object.keys(admin[0]!.runningAttempts[0]!).sort(), ['attemptId', 'startedAt', 'taskId', 'taskName'], 'no owner in the listing');
  });
});
