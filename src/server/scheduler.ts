/**
 * The scheduler (the seed's informer): pushes waiting tasks to connected
 * workers with free slots, wakes retrying tasks when their backoff ends, and
 * ends attempts whose lease ran out as `lost`.
 *
 * The store is the source of truth; this object only holds what is about live
 * connections (which worker has how many free slots, which attempt runs where).
 * Every decision that changes a task is an atomic store call, so a crash of
 * this process at any point loses nothing acknowledged.
 *
 * Dispatch is event driven: `kick()` after a submit, a finished attempt, a new
 * worker or a promoted retry. A slow periodic sweep (sweepMs) is the fallback
 * that also catches what another process changed.
 */
import type { AssignedAttempt } from '../core/protocol.js';
import type { Clock } from '../core/clock.js';
import type { Attempt, Task } from '../core/task.js';
import type { Store } from '../store/store.js';
import type { TaskBus } from './task-bus.js';

export interface SchedulerOptions {
  leaseMs: number;
  heartbeatMs: number;
  /** Period of the fallback sweep: expired leases, due retries, missed kicks. */
  sweepMs: number;
  /** Unique per server process: the holder name in leadership leases. */
  serverId: string;
}

/** What the scheduler needs of a live worker connection. */
export interface WorkerLink {
  readonly workerId: string;
  readonly slots: number;
  /** Attempts assigned to this worker that have not ended. */
  readonly running: Set<number>;
  /** The agent said it is draining: it gets no new work. */
  readonly draining: boolean;
  /** False if the socket is gone. */
  send(msg: import('../core/protocol.js').ServerMessage): boolean;
  close(reason: string): void;
}

export interface Logger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

/** Bounds the work of one dispatch round when many slots are free and the queue is empty. */
const MAX_CLAIMS_PER_ROUND = 64;
/** The sweeper lease lasts this many sweep periods: a dead leader is replaced within ~5 s by default. */
const LEADER_TTL_FACTOR = 5;

export class Scheduler {
  private readonly links = new Map<string, WorkerLink>();
  private dispatching = false;
  private again = false;
  private wakeTimer: NodeJS.Timeout | null = null;
  private wakeAt = Infinity;
  private sweepTimer: NodeJS.Timeout | null = null;
  private stopped = false;
  private unsubscribe: (() => void) | null = null;
  /** Whether this server held the sweeper lease at its last sweep. */
  leading = false;

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly bus: TaskBus,
    private readonly log: Logger,
    readonly opts: SchedulerOptions,
  ) {}

  start(): void {
    // The store's signals are the one way news reaches the scheduler, from this
    // server's writes and (PostgreSQL) from every other server's.
    this.unsubscribe = this.store.onSignal((sig) => {
      switch (sig.kind) {
        case 'wake':
          return this.kick();
        case 'task':
          return this.bus.notify(sig.taskId);
        case 'cancel':
          this.linkOf(sig.attemptId)?.send({ type: 'cancel', attemptId: sig.attemptId, reason: 'task cancelled' });
          return;
        case 'drain':
          this.links.get(sig.workerId)?.send({ type: 'drain', reason: sig.reason });
          return;
        default: {
          const never: never = sig;
          this.log.warn({ signal: never }, 'unknown store signal; ignored');
        }
      }
    });
    this.sweepTimer = setInterval(() => void this.sweep(), this.opts.sweepMs);
    this.sweepTimer.unref();
    void this.sweep();
  }

  stop(): void {
    this.stopped = true;
    this.unsubscribe?.();
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
  }

  addLink(link: WorkerLink): void {
    const old = this.links.get(link.workerId);
    if (old && old !== link) old.close('replaced by a newer connection of the same worker');
    this.links.set(link.workerId, link);
    this.kick();
  }

  removeLink(link: WorkerLink): void {
    if (this.links.get(link.workerId) === link) this.links.delete(link.workerId);
  }

  linkOf(attemptId: number): WorkerLink | undefined {
    for (const l of this.links.values()) if (l.running.has(attemptId)) return l;
    return undefined;
  }

  workers(): WorkerLink[] {
    return [...this.links.values()];
  }

  /** Ask for a dispatch pass soon. Coalesces: many kicks during a pass cause one more pass. */
  kick(): void {
    if (this.stopped) return;
    if (this.dispatching) {
      this.again = true;
      return;
    }
    this.dispatching = true;
    queueMicrotask(() => void this.dispatchLoop());
  }

  private async dispatchLoop(): Promise<void> {
    try {
      do {
        this.again = false;
        await this.dispatchPass();
      } while (this.again && !this.stopped);
    } catch (err) {
      this.log.error({ err }, 'dispatch failed');
    } finally {
      this.dispatching = false;
    }
  }

  /**
   * Fill free slots. Each claim is one atomic store call. Slots are taken
   * round-robin, most free first, so a short queue spreads over the workers.
   *
   * How many claims a round issues at once: on a store with group commit
   * (SQLite) a whole round shares one transaction, so it asks for every free
   * slot. Elsewhere (PostgreSQL) each claim is its own transaction, and asking
   * for 32 slots when one task was submitted would cost 31 empty claims; so a
   * pass starts with one claim and doubles the round while every claim of the
   * last round found a task. A round that finds fewer tasks than it asked for
   * ends the pass.
   */
  private async dispatchPass(): Promise<void> {
    let roundSize = this.store.capabilities.groupCommit ? MAX_CLAIMS_PER_ROUND : 1;
    for (;;) {
      const free = new Map<WorkerLink, number>();
      for (const l of this.links.values()) if (!l.draining && l.slots > l.running.size) free.set(l, l.slots - l.running.size);
      const order: WorkerLink[] = [];
      const byFree = [...free.entries()].sort((a, b) => b[1] - a[1]);
      for (let round = 0; order.length < roundSize; round++) {
        const before = order.length;
        for (const [l, n] of byFree) if (n > round && order.length < roundSize) order.push(l);
        if (order.length === before) break;
      }
      if (order.length === 0) return;
      const now = this.clock.now();
      const claims = await Promise.all(order.map((l) => this.store.claimNext(l.workerId, now, this.opts.leaseMs)));
      let got = 0;
      for (const [i, claim] of claims.entries()) {
        if (!claim) continue;
        got++;
        const link = order[i]!;
        link.running.add(claim.attempt.id);
        if (!link.send({ type: 'assign', attempt: assignment(claim.task, claim.attempt) })) {
          // The socket closed between choosing and sending: give the task back now
          // rather than after the lease runs out.
          link.running.delete(claim.attempt.id);
          await this.endLost(claim.attempt, 'worker connection closed before the assignment was sent');
        }
      }
      if (got < order.length) return;
      roundSize = Math.min(MAX_CLAIMS_PER_ROUND, roundSize * 2);
    }
  }

  /** Ends an attempt as lost (no retry used) and requeues its task. */
  async endLost(attempt: Attempt, error: string): Promise<void> {
    // The store signals the task, and wake when it is requeued.
    await this.store.endAttempt(attempt.id, attempt.id, { outcome: 'lost', exitCode: null, signal: null, error, durationMs: null }, 'scheduler', this.clock.now());
  }

  /** Called after a task entered `retrying`: wake when its backoff ends. */
  wakeAtTime(at: number): void {
    if (this.stopped || at >= this.wakeAt) return;
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    this.wakeAt = at;
    this.wakeTimer = setTimeout(() => void this.onWake(), Math.max(0, at - this.clock.now()));
  }

  private async onWake(): Promise<void> {
    this.wakeTimer = null;
    this.wakeAt = Infinity;
    try {
      await this.promote();
    } catch (err) {
      this.log.error({ err }, 'promoting due retries failed');
    }
  }

  private async promote(): Promise<void> {
    // Each promoted task is signalled (wake + task) by the store.
    await this.store.promoteDue(this.clock.now());
    const next = await this.store.nextDueAt();
    if (next !== null) this.wakeAtTime(next);
  }

  /** The fallback: expire leases, promote due retries, dispatch what may have been missed. */
  async sweep(): Promise<void> {
    if (this.stopped) return;
    try {
      // Ending expired leases is a singleton duty: one elected server does it, and
      // another takes over within LEADER_TTL_FACTOR sweeps if that one dies.
      // (The fenced endAttempt would make doubles harmless; election keeps the
      // events and the load single.) Promotion and dispatch run everywhere.
      const now = this.clock.now();
      const leading = await this.store.acquireLeadership('lease-sweeper', this.opts.serverId, now, this.opts.sweepMs * LEADER_TTL_FACTOR);
      if (leading !== this.leading) this.log.info({ serverId: this.opts.serverId }, leading ? 'now leading the lease sweeper' : 'no longer leading the lease sweeper');
      this.leading = leading;
      const expired = leading ? await this.store.expiredAttempts(now) : [];
      for (const a of expired) {
        this.linkOf(a.id)?.running.delete(a.id);
        this.log.warn({ attemptId: a.id, taskId: a.taskId, workerId: a.workerId }, 'lease expired: attempt lost');
        await this.endLost(a, `lease expired: worker ${a.workerId} silent for ${this.opts.leaseMs} ms`);
      }
      await this.promote();
      this.kick();
    } catch (err) {
      this.log.error({ err }, 'sweep failed');
    }
  }
}

export function assignment(task: Task, attempt: Attempt): AssignedAttempt {
  return {
    attemptId: attempt.id,
    fencingToken: attempt.id,
    taskId: task.id,
    number: attempt.number,
    command: task.command,
    args: task.args,
    script: task.script,
    interpreter: task.interpreter,
    env: task.env,
    timeoutMs: task.timeoutMs,
  };
}
