/**
 * The scheduler against a real (in-memory SQLite) store and a fake clock:
 * nothing here sleeps; sweeps are called directly.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { FakeClock } from '../../src/core/clock.js';
import { newTaskId } from '../../src/core/ids.js';
import type { ServerMessage } from '../../src/core/protocol.js';
import type { Attempt, Task } from '../../src/core/task.js';
import { Scheduler, SWEEP_BATCH, type WorkerLink } from '../../src/server/scheduler.js';
import { TaskBus } from '../../src/server/task-bus.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Store } from '../../src/store/store.js';
import { makeSpec } from '../store/contract.js';

const LEASE = 15_000;
const quiet = { info() {}, warn() {}, error() {} };

class Link implements WorkerLink {
  readonly sent: ServerMessage[] = [];
  readonly attempts = new Map<number, string>();
  draining = false;
  lastHeardAt = 0;
  constructor(
    readonly workerId: string,
    readonly slots: number,
    readonly labels: Record<string, string> = {},
  ) {}
  get runningCount() {
    return this.attempts.size;
  }
  has(id: number) {
    return this.attempts.has(id);
  }
  assign(_task: Task, attempt: Attempt) {
    this.attempts.set(attempt.id, attempt.fencingToken);
    this.sent.push({ type: 'assign', attempt: { attemptId: attempt.id } as never });
    return true;
  }
  drop(id: number) {
    this.attempts.delete(id);
  }
  send(m: ServerMessage) {
    this.sent.push(m);
    return true;
  }
  close() {}
}

describe('scheduler', () => {
  let store: Store;
  let clock: FakeClock;
  let sched: Scheduler;
  beforeEach(async () => {
    store = openSqliteStore(':memory:');
    await store.migrate();
    clock = new FakeClock();
    sched = new Scheduler(store, clock, new TaskBus(), quiet, { leaseMs: LEASE, heartbeatMs: 5_000, sweepMs: 1_000_000, serverId: 's1' });
  });
  afterEach(async () => {
    sched.stop();
    await store.close();
  });

  const submit = async (o: Partial<Parameters<typeof makeSpec>[0]> = {}) => (await store.createTask(newTaskId(clock.now()), 'u', makeSpec(o), 'u', clock.now())).task;

  it('a restarted server ends no lease during its first full lease, then ends the expired ones', async () => {
    const t = await submit();
    const claim = await store.claimNext({ id: 'gone', labels: {} }, clock.now(), -1);
    assert.ok(claim);
    sched.start();
    clock.advance(LEASE - 1);
    await sched.sweep();
    assert.equal((await store.getTask(t.id))!.state, 'running', 'the agent still has time to reconnect');
    clock.advance(1);
    await sched.sweep();
    const after = await store.getTask(t.id);
    assert.equal(after!.state, 'waiting');
    assert.equal((await store.getAttempt(claim.attempt.id))!.state, 'lost');
  });

  it('ends expired leases in batches, all of them', async () => {
    const n = SWEEP_BATCH + 10;
    for (let i = 0; i < n; i++) {
      await submit({ name: `t${i}` });
      assert.ok(await store.claimNext({ id: 'gone', labels: {} }, clock.now(), -1));
    }
    sched.start();
    clock.advance(LEASE);
    await sched.sweep();
    const lost = (await store.listTasks({ state: 'waiting', limit: 1000 })).tasks.length;
    assert.equal(lost, n);
  });

  it('places a task only on a worker whose labels satisfy its requirements', async () => {
    const cpu = new Link('cpu', 2, { gpu: 'no' });
    const gpu = new Link('gpu', 2, { gpu: 'yes' });
    sched.start();
    sched.addLink(cpu);
    const t = await submit({ requires: { gpu: 'yes' } });
    await sched.sweep();
    await sched.whenIdle();
    assert.equal(cpu.attempts.size, 0);
    assert.equal((await store.getTask(t.id))!.state, 'waiting');
    sched.addLink(gpu);
    await sched.whenIdle();
    assert.equal(gpu.attempts.size, 1);
    assert.equal((await store.getTask(t.id))!.state, 'running');
  });

  it('a live session keeps its worker id; a silent one is replaced', () => {
    const first = new Link('w', 1);
    first.lastHeardAt = clock.now();
    sched.addLink(first);
    const second = new Link('w', 1);
    assert.match(sched.canTakeWorkerId('w', second) ?? '', /connected in another session/);
    clock.advance(10_001);
    assert.equal(sched.canTakeWorkerId('w', second), null);
  });
});
