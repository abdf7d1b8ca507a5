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
import { FEED_RETENTION_MS, MINUTE_STATS_RETENTION_MS, PRUNE_EVERY_MS } from '../../src/server/retention.js';
import { MAX_CLAIMS_PER_ROUND, Scheduler, SWEEP_BATCH, type WorkerLink } from '../../src/server/scheduler.js';
import { CursorExpiredError } from '../../src/core/errors.js';
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
    readonly prefetch = 0,
  ) {}
  get runningCount() {
    return this.attempts.size;
  }
  has(id: number) {
    return this.attempts.has(id);
  }
  assign(task: Task, attempt: Attempt) {
    this.attempts.set(attempt.id, attempt.fencingToken);
    this.requires.set(attempt.id, task.requires);
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
  /** The placement of each assigned attempt's task, and what was asked back (as worker-session.ts keeps them). */
  readonly requires = new Map<number, Record<string, string>>();
  readonly askedBack: number[][] = [];
  queuedGuess() {
    const asked = new Set(this.askedBack.flat());
    const held = [...this.attempts.keys()].filter((id) => this.attempts.has(id));
    let room = held.length - this.slots - held.filter((id) => asked.has(id)).length;
    const out: Array<{ attemptId: number; requires: Record<string, string> }> = [];
    for (const id of held.reverse()) {
      if (room <= 0) break;
      if (asked.has(id) || this.started.has(id)) continue;
      out.push({ attemptId: id, requires: this.requires.get(id) ?? {} });
      room--;
    }
    return out;
  }
  askBack(ids: number[]) {
    this.askedBack.push(ids);
  }
  /** What the fake's agent reported started. */
  readonly started = new Set<number>();
  /** Asked back, still held and not reported started (the fake's agent never returns one). */
  askedPending() {
    return this.askedBack.flat().filter((id) => this.attempts.has(id) && !this.started.has(id)).length;
  }
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

  it('a wake a month away arms no timer past setTimeout\'s limit (Node would fire it after 1 ms, and the scheduler would spin)', async () => {
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on('warning', onWarning);
    try {
      sched.start();
      sched.wakeAtTime(clock.now() + 30 * 86_400_000);
      // A TimeoutOverflowWarning is emitted when the timer is made, and delivered on the next tick.
      await new Promise((r) => setImmediate(r));
      assert.deepEqual(warnings.filter((w) => w.name === 'TimeoutOverflowWarning').map((w) => w.message), []);
    } finally {
      process.off('warning', onWarning);
    }
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

  it('the leading sweeper prunes old changes, old minute stats and expired web sessions, at most every PRUNE_EVERY_MS', async () => {
    const t0 = clock.now();
    const early = await store.feedHead();
    const token = await store.createToken({ id: '0123456789abcdef', name: 'n', user: 'u', role: 'user', secretHash: 'f'.repeat(64), createdAt: t0 });
    assert.equal(token.id, '0123456789abcdef');
    await submit();
    assert.ok(await store.claimNext({ id: 'w', labels: {} }, clock.now(), LEASE));
    await store.createWebSession({ idHash: 'a'.repeat(64), tokenId: '0123456789abcdef', createdAt: t0, expiresAt: t0 + 1000 });
    const minutes = () => store.minuteStats(t0 - 3600_000, t0 + 3600_000);
    assert.equal((await minutes()).length, 1);
    sched.start();
    await sched.sweep();
    assert.ok((await store.readChanges(early, 10)).changes.length > 0, 'nothing is old yet');
    clock.advance(FEED_RETENTION_MS + 1);
    await sched.sweep();
    await assert.rejects(store.readChanges(early, 10), CursorExpiredError);
    assert.equal(await store.getWebSession('a'.repeat(64), t0), null, 'the expired session is gone');
    assert.equal((await minutes()).length, 1, 'minute stats are kept for 48 h');
    // Within PRUNE_EVERY_MS of the last prune, nothing is pruned.
    const t1 = clock.now();
    await store.createWebSession({ idHash: 'b'.repeat(64), tokenId: '0123456789abcdef', createdAt: t1, expiresAt: t1 + 1 });
    clock.advance(Math.min(2, PRUNE_EVERY_MS - 1));
    await sched.sweep();
    assert.ok(await store.getWebSession('b'.repeat(64), t1), 'not pruned again so soon');
    clock.advance(MINUTE_STATS_RETENTION_MS);
    await sched.sweep();
    assert.equal(await store.getWebSession('b'.repeat(64), t1), null);
    assert.equal((await minutes()).length, 0, 'minute stats older than 48 h are gone');
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

  it('free slots: a reservation holds slots until released (once); a draining worker has none', () => {
    const l = new Link('w', 4);
    l.attempts.set(1, 't');
    assert.equal(sched.freeSlots(l), 3);
    const a = sched.reserve(l, 2);
    const b = sched.reserve(l, 1);
    assert.equal(sched.freeSlots(l), 0);
    a();
    a();
    assert.equal(sched.freeSlots(l), 2, 'a second release changes nothing');
    b();
    assert.equal(sched.freeSlots(l), 3);
    l.draining = true;
    assert.equal(sched.freeSlots(l), 0);
  });

  it('reserveForSubmit: the worker with the most free slots whose labels satisfy the task, one slot held until released; none when full or draining', () => {
    const small = new Link('small', 2, { gpu: 'yes' });
    const big = new Link('big', 4);
    sched.addLink(small);
    sched.addLink(big);
    const any = sched.reserveForSubmit({});
    assert.equal(any?.link, big);
    assert.deepEqual(any?.worker, { id: 'big', labels: {} });
    assert.equal(any?.leaseMs, LEASE);
    assert.equal(sched.freeSlots(big), 3);
    any!.release();
    assert.equal(sched.freeSlots(big), 4);
    const gpu = sched.reserveForSubmit({ gpu: 'yes' });
    assert.equal(gpu?.link, small, 'only the worker whose labels satisfy the requirement');
    const gpu2 = sched.reserveForSubmit({ gpu: 'yes' });
    assert.equal(gpu2?.link, small);
    assert.equal(sched.reserveForSubmit({ gpu: 'yes' }), null, 'its two slots are held');
    gpu!.release();
    gpu2!.release();
    small.draining = true;
    assert.equal(sched.reserveForSubmit({ gpu: 'yes' }), null, 'a draining worker takes no new work');
    assert.equal(sched.reserveForSubmit({ os: 'windows' }), null);
  });

  it('prefetch: free slots count it; a slot that starts a task now goes first, on submit and in a dispatch pass', async () => {
    const queueing = new Link('queueing', 1, {}, 3);
    const plain = new Link('plain', 1);
    assert.equal(sched.freeSlots(queueing), 4);
    assert.equal(sched.freeSlots(queueing, false), 1);
    sched.addLink(queueing);
    sched.addLink(plain);
    await sched.whenIdle();
    // Submits: one to each worker's slot before any waits in the prefetch.
    const first = sched.reserveForSubmit({})!;
    const second = sched.reserveForSubmit({})!;
    assert.notEqual(first.link, second.link);
    const third = sched.reserveForSubmit({})!;
    assert.equal(third.link, queueing, 'then the prefetch');
    for (const r of [first, second, third]) r.release();
    // A pass with two tasks waiting and both workers idle: one each, none queued behind the other.
    sched.start();
    for (let i = 0; i < 2; i++) await submit({ name: `short${i}` });
    sched.kick();
    await sched.whenIdle();
    assert.deepEqual([queueing.attempts.size, plain.attempts.size], [1, 1]);
    // More than the slots: the rest fills the prefetch (in the pass the filled slots ask for), never beyond it.
    for (let i = 0; i < 5; i++) await submit({ name: `more${i}` });
    sched.kick();
    await sched.whenIdle();
    assert.deepEqual([queueing.attempts.size, plain.attempts.size], [4, 1]);
    assert.equal((await store.listTasks({ state: 'waiting', limit: 10 })).tasks.length, 2);
  });

  it('take-back: a slot left free with nothing waiting asks another worker for its queued attempts, newest first, placement respected, each once', async () => {
    const busy = new Link('busy', 1, { gpu: 'yes' }, 4);
    sched.start();
    sched.addLink(busy);
    await sched.whenIdle();
    const tasks = [];
    for (let i = 0; i < 5; i++) tasks.push(await submit({ name: `q${i}`, ...(i === 4 ? { requires: { gpu: 'yes' } } : {}) }));
    sched.kick();
    await sched.whenIdle();
    assert.equal(busy.attempts.size, 5, 'one running, four queued on busy');
    assert.deepEqual(busy.askedBack, [], 'nobody to give them to');
    const [q0, q1, q2, q3, q4] = await Promise.all(tasks.map(async (t) => (await store.getTask(t.id))!.currentAttemptId!));
    // A worker with two free slots and no gpu label: nothing waits, so it asks busy for two of the queued,
    // the newest it can run (q4 needs a gpu; q0 was first, so it is the one running).
    const idle = new Link('idle', 2);
    sched.addLink(idle);
    await sched.whenIdle();
    assert.deepEqual(busy.askedBack, [[q3, q2]]);
    assert.equal(idle.attempts.size, 0);
    // Another pass before the answer: those two are on their way to the two free slots, so nothing more is asked.
    sched.kick();
    await sched.whenIdle();
    assert.deepEqual(busy.askedBack, [[q3, q2]]);
    // The agent had started both meanwhile (its `started` reports): the slots are still free, so the next is asked.
    busy.started.add(q3!).add(q2!);
    sched.kick();
    await sched.whenIdle();
    assert.deepEqual(busy.askedBack, [[q3, q2], [q1]]);
    // What is left queued (q4) needs a gpu: a free worker with one asks for it.
    const gpu = new Link('gpu', 1, { gpu: 'yes' });
    sched.addLink(gpu);
    await sched.whenIdle();
    assert.deepEqual(busy.askedBack, [[q3, q2], [q1], [q4]]);
    assert.ok((busy.askedBack as number[][]).every((ids) => !ids.includes(q0!)), 'the running one is never asked');
    // A worker's own free slots never ask itself, and a worker without a prefetch is never asked.
    assert.deepEqual([idle, gpu].map((l) => l.askedBack), [[], []]);
  });

  it('one pass fills every free slot of every worker, most free first, never beyond its slots', async () => {
    for (let i = 0; i < 20; i++) await submit({ name: `t${i}` });
    const big = new Link('big', 6);
    const small = new Link('small', 2);
    sched.start();
    sched.addLink(small);
    sched.addLink(big);
    await sched.whenIdle();
    assert.equal(big.attempts.size, 6);
    assert.equal(small.attempts.size, 2);
    assert.equal((await store.listTasks({ state: 'running', limit: 100 })).tasks.length, 8);
    // A pass while a claim for `big` is in flight (its slots reserved) claims nothing more for it.
    big.attempts.clear();
    const release = sched.reserve(big, 6);
    sched.kick();
    await sched.whenIdle();
    assert.equal(big.attempts.size, 0);
    release();
  });

  it('a pass larger than MAX_CLAIMS_PER_ROUND runs again until the slots are full', async () => {
    for (let i = 0; i < MAX_CLAIMS_PER_ROUND + 30; i++) await submit({ name: `t${i}` });
    const l = new Link('w', MAX_CLAIMS_PER_ROUND + 20);
    sched.start();
    sched.addLink(l);
    await sched.whenIdle();
    assert.equal(l.attempts.size, MAX_CLAIMS_PER_ROUND + 20);
  });
});
