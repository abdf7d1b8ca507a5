/**
 * Assignments an agent holds beyond its slots (`drover worker --prefetch N`,
 * AgentOptions.prefetch), in arrival order, until a slot frees.
 *
 * Why: a worker of short tasks otherwise idles a slot for a whole refill
 * (its exit reported, the server's end-and-claim committed, the assignment
 * pushed) after every task. With N queued, the next task starts the moment
 * a slot frees while the refill happens in the background. Measured (issue
 * 9; 20,000 no-op tasks waiting, then one `--executor noop --slots 10` agent,
 * the bench's drain method, runs alternating): PostgreSQL 1,543, 1,447 and
 * 1,642 tasks/s without prefetch against 2,406, 2,064 and 1,985/s with
 * `--prefetch 20` (the server waits on the database between refills, and
 * the queue keeps the slots busy meanwhile); SQLite 3,632, 2,870 and 3,246/s
 * against 3,188, 4,111 and 3,577/s, within the noise (there the server's
 * own CPU is the bound, not the wait).
 * Looked at and not taken (2026-12-05, 2,000 `/bin/true`, one 8-slot agent
 * with --prefetch 16, SQLite, three pairs alternating): holding an exit report
 * back for 2 ms while the queue is not empty, so the server's group commit
 * gets more ends at once (its refill is not on a slot's path then): 791, 879
 * and 848 tasks/s as is against 868, 898 and 945/s; the server's CPU 1.20-1.37
 * s against 1.03-1.20 s. 1 ms and 5 ms: no clearer. Within the spread, and
 * each end would reach the server and the user later.
 * The cost: a queued task waits behind this agent's running ones. So the
 * AgentOptions default is 0 (none), and `drover worker`'s is `auto`
 * (auto-prefetch.ts: offered only while the tasks are short, withdrawn when
 * the queue stops moving); the server fills a worker's prefetch only when no
 * worker has a free slot (scheduler.ts dispatchPass, worker-session.ts
 * refill); and when one of its workers has a free slot that no waiting task
 * fills, it asks back what other workers hold queued (give_back below).
 *
 * Contract (the agent, agent.ts, keeps it):
 * - A queued attempt is leased to this worker like a running one: listed in
 *   `hello.running` and `heartbeat.running`, its `leaseConfirmedAt` updated
 *   by the answers, self-fenced (dropped here, reported in the next hello as
 *   `killed`) when no server confirmed its lease in time.
 * - It starts (becomes a HeldAttempt) when a slot frees, oldest first.
 * - It never runs after a stop order: a cancel reports it `cancelled`
 *   without starting it; a `report: false` stop drops it.
 * - A drain or a shutdown gives every queued attempt back at once, reported
 *   `lost`, so the server runs it elsewhere without using a retry.
 * - A `give_back` from the server (another of its workers has a free slot
 *   and no task waits for it) takes the named attempts still queued out,
 *   reported `returned`: they run on that worker, without using a retry or
 *   counting as lost. One that started meanwhile is kept: the agent, which
 *   holds the queue, decides, so a give-back never stops a running process.
 */
import type { AssignedAttempt } from '../core/protocol.js';

export interface Queued {
  readonly attempt: AssignedAttempt;
  /** As HeldAttempt.leaseConfirmedAt (held-attempt.ts): the agent's monotonic clock. */
  leaseConfirmedAt: number;
}

export class PrefetchQueue {
  /** By attempt id; a Map iterates in insertion order, which is the queue's order. */
  private readonly items = new Map<number, Queued>();

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 0) throw new RangeError('prefetch must be a non-negative integer');
  }

  get size(): number {
    return this.items.size;
  }

  has(attemptId: number): boolean {
    return this.items.has(attemptId);
  }

  /** Queues `attempt` unless the queue is full (false). */
  push(attempt: AssignedAttempt, leaseConfirmedAt: number): boolean {
    if (this.items.size >= this.capacity) return false;
    this.items.set(attempt.attemptId, { attempt, leaseConfirmedAt });
    return true;
  }

  /** The oldest queued attempt, removed. */
  shift(): Queued | undefined {
    for (const [id, q] of this.items) {
      this.items.delete(id);
      return q;
    }
    return undefined;
  }

  /** Removes and returns one attempt (a stop order, self-fencing). */
  take(attemptId: number): Queued | undefined {
    const q = this.items.get(attemptId);
    this.items.delete(attemptId);
    return q;
  }

  /** Every queued attempt, oldest first. */
  values(): Queued[] {
    return [...this.items.values()];
  }

  /** A server renewed the lease of `attemptId` after `sentAt` (agent.ts confirm). */
  confirm(attemptId: number, sentAt: number): void {
    const q = this.items.get(attemptId);
    if (q) q.leaseConfirmedAt = Math.max(q.leaseConfirmedAt, sentAt);
  }

  /** Empties the queue, returning what it held, oldest first. */
  clear(): Queued[] {
    const all = this.values();
    this.items.clear();
    return all;
  }
}
