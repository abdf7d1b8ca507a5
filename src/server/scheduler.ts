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
import type { Clock } from '../core/clock.js';
import { mayExpireLeases } from '../core/lease.js';
import { MAX_TIMEOUT_MS } from '../core/long-timeout.js';
import type { ServerMessage } from '../core/protocol.js';
import type { Attempt, Task } from '../core/task.js';
import type { Store } from '../store/store.js';
import type { ClaimingWorker } from '../store/attempts.js';
import { satisfies } from '../core/placement.js';
import { PRUNE_EVERY_MS, pruneExpired } from './retention.js';
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
  /**
   * Assignments the agent queues beyond its slots (`drover worker --prefetch`,
   * its hello; absent: 0). The scheduler fills slots + prefetch: a worker of
   * short tasks then has its next ones at hand when a slot frees, instead of
   * waiting a round trip and a commit for each refill.
   */
  readonly prefetch?: number;
  readonly labels: Record<string, string>;
  /** How many attempts assigned to this worker have not ended. */
  readonly runningCount: number;
  /** The agent said it is draining: it gets no new work. */
  readonly draining: boolean;
  /** When a frame last came from the agent (server clock). */
  readonly lastHeardAt: number;
  /** Is the attempt assigned to this worker and not ended? */
  has(attemptId: number): boolean;
  /** Pushes a claimed attempt (records its fencing token); false if the socket is gone. */
  assign(task: Task, attempt: Attempt): boolean;
  /** Forgets an attempt the server ended (lease expiry). */
  drop(attemptId: number): void;
  /**
   * The attempts that may still wait in the agent's prefetch queue (not
   * started, not asked back yet), newest first, with their tasks' placement
   * (worker-session.ts says how it guesses). Absent: none (takeBack).
   */
  queuedGuess?(): Array<{ attemptId: number; requires: Readonly<Record<string, string>> }>;
  /** Asks the agent to give queued attempts back (protocol `give_back`), each once. */
  askBack?(attemptIds: number[], reason: string): void;
  /** Attempts asked back whose answer has not come (neither returned nor reported started). */
  askedPending?(): number;
  /** False if the socket is gone. */
  send(msg: ServerMessage): boolean;
  close(reason: string): void;
}

export interface Logger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

/** Tasks one dispatch pass claims at most (over all workers); a pass that fills them all runs again. */
export const MAX_CLAIMS_PER_ROUND = 64;
/** The sweeper lease lasts this many sweep periods: a dead leader is replaced within ~5 s by default. */
const LEADER_TTL_FACTOR = 5;
/** Rows one sweep statement ends or promotes; a sweep repeats it until a batch comes back short. */
export const SWEEP_BATCH = 256;
/** Minute rows older than this are not folded: writes date their deltas with their own time, so old minutes get none. */
const FOLD_WINDOW_MS = 3600_000;
/** Batches per sweep at most, so one sweep cannot monopolize the server (the next sweep goes on). */
const MAX_SWEEP_BATCHES = 16;

export class Scheduler {
  private readonly links = new Map<string, WorkerLink>();
  /** Slots reserved by claims in flight, per link (see freeSlots). */
  private readonly reserved = new Map<WorkerLink, number>();
  private dispatching = false;
  private loop: Promise<void> = Promise.resolve();
  private again = false;
  private wakeTimer: NodeJS.Timeout | null = null;
  private wakeAt = Infinity;
  private sweepTimer: NodeJS.Timeout | null = null;
  private stopped = false;
  private unsubscribe: (() => void) | null = null;
  /** Whether this server held the sweeper lease at its last sweep. */
  leading = false;
  /** When start() ran (server clock): no lease is ended before one full lease after it (core/lease.ts). */
  private startedAt = 0;
  /** When this server last pruned the dashboard's data (retention.ts), as the sweeper's leader. */
  private prunedAt = -Infinity;

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
          // The fast path. The stop order is also stored, and repeated on every heartbeat answer.
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
    this.startedAt = this.clock.now();
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

  /**
   * Null if `link` may take `workerId`, else why not. A session whose agent
   * was heard from within the liveness bound (two heartbeats) keeps its id:
   * a second session cannot take over a live worker. A silent one (its agent
   * is gone or partitioned, the socket not yet closed) is closed and replaced,
   * so an agent that reconnects after a network blip gets its id back.
   */
  canTakeWorkerId(workerId: string, link: WorkerLink): string | null {
    const old = this.links.get(workerId);
    if (!old || old === link) return null;
    const silentMs = this.clock.now() - old.lastHeardAt;
    if (silentMs <= 2 * this.opts.heartbeatMs) return `worker ${workerId} is connected in another session (heard from ${silentMs} ms ago)`;
    old.close('replaced by a newer connection of the same worker (this one was silent)');
    this.links.delete(workerId);
    return null;
  }

  addLink(link: WorkerLink): void {
    const old = this.links.get(link.workerId);
    if (old && old !== link) old.close('replaced by a newer connection of the same worker');
    this.links.set(link.workerId, link);
    this.kick();
  }

  /** True if `link` was the worker's current link (and is now removed). */
  removeLink(link: WorkerLink): boolean {
    if (this.links.get(link.workerId) !== link) return false;
    this.links.delete(link.workerId);
    return true;
  }

  linkOf(attemptId: number): WorkerLink | undefined {
    for (const l of this.links.values()) if (l.has(attemptId)) return l;
    return undefined;
  }

  workers(): WorkerLink[] {
    return [...this.links.values()];
  }

  /**
   * Slots of `link` (its prefetch included) that neither an attempt holds
   * nor a claim in flight has reserved (0 while it drains). Every claim for a worker, the scheduler's
   * or its session's (worker-session.ts, which refills the slots its exits
   * free), reserves what it asks for until its answer is assigned, so two
   * claims in flight can never together exceed the worker's slots.
   */
  freeSlots(link: WorkerLink, withPrefetch = true, ending = 0): number {
    if (link.draining) return 0;
    const capacity = link.slots + (withPrefetch ? (link.prefetch ?? 0) : 0);
    // `ending`: attempts of the link whose ends are being written now, still counted in runningCount.
    return Math.max(0, capacity - (link.runningCount - ending) - (this.reserved.get(link) ?? 0));
  }

  /** Does a worker other than `link` have a slot free now (its prefetch not counted)? */
  otherHasFreeSlot(link: WorkerLink): boolean {
    for (const l of this.links.values()) if (l !== link && this.freeSlots(l, false) > 0) return true;
    return false;
  }

  /**
   * Called when a claim for free slots came back short (no waiting task fills
   * them): asks workers that hold assignments queued in their prefetch to give
   * back as many as those free slots can run (placement respected), newest
   * first. Their agents report each still queued one `returned` (never
   * started); it waits again, and the next pass, which fills slots before any
   * prefetch, gives it to the free worker. Without this a task could wait
   * behind one agent's long runs while another agent idles. Only this
   * server's workers are seen: a free worker on another server does not take
   * back from a worker here (each server dispatches to its own sessions).
   */
  takeBack(): void {
    if (this.stopped) return;
    const donors = [...this.links.values()].filter((l) => (l.prefetch ?? 0) > 0 && l.runningCount > l.slots && l.queuedGuess && l.askBack);
    if (donors.length === 0) return;
    const free = new Map<WorkerLink, number>();
    let budget = 0;
    for (const l of this.links.values()) {
      const f = this.freeSlots(l, false);
      if (f > 0) free.set(l, f);
      budget += f;
    }
    // Those asked back already and not yet answered are on their way to these free slots: not asked for twice.
    for (const l of this.links.values()) budget -= l.askedPending?.() ?? 0;
    for (const d of donors) {
      if (free.size === 0 || budget <= 0) return;
      const ids: number[] = [];
      for (const q of d.queuedGuess!()) {
        const to = [...free.keys()].find((l) => l !== d && satisfies(l.labels, q.requires));
        if (!to) continue;
        ids.push(q.attemptId);
        const left = free.get(to)! - 1;
        if (left > 0) free.set(to, left);
        else free.delete(to);
        if (free.size === 0 || --budget <= 0) break;
      }
      if (ids.length > 0) d.askBack!(ids, 'another worker has a free slot');
    }
  }

  /** Reserves `n` slots of `link` (see freeSlots); the returned function releases them, once. */
  reserve(link: WorkerLink, n: number): () => void {
    this.reserved.set(link, (this.reserved.get(link) ?? 0) + n);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.reserved.get(link) ?? 0) - n;
      if (left > 0) this.reserved.set(link, left);
      else this.reserved.delete(link);
    };
  }

  /**
   * A free slot for a task being submitted now (CreateOptions.claimFor): the
   * worker with the most free slots whose labels satisfy `requires`, reserved
   * (see freeSlots) until `release`, which the caller calls once it has sent
   * the assignment or learnt there is none. Null when no worker has a slot.
   */
  reserveForSubmit(requires: Readonly<Record<string, string>>): { link: WorkerLink; worker: ClaimingWorker; leaseMs: number; release: () => void } | null {
    if (this.stopped) return null;
    // A slot that starts the task now first; else a worker's prefetch (see dispatchPass).
    const pick = (withPrefetch: boolean) => {
      let best: WorkerLink | null = null;
      let bestFree = 0;
      for (const l of this.links.values()) {
        const free = this.freeSlots(l, withPrefetch);
        if (free > bestFree && satisfies(l.labels, requires)) [best, bestFree] = [l, free];
      }
      return best;
    };
    const best = pick(false) ?? pick(true);
    if (!best) return null;
    return { link: best, worker: { id: best.workerId, labels: best.labels }, leaseMs: this.opts.leaseMs, release: this.reserve(best, 1) };
  }

  /** Ask for a dispatch pass soon. Coalesces: many kicks during a pass cause one more pass. */
  kick(): void {
    if (this.stopped) return;
    if (this.dispatching) {
      this.again = true;
      return;
    }
    this.dispatching = true;
    this.loop = new Promise<void>((resolve) => queueMicrotask(() => void this.dispatchLoop().finally(resolve)));
  }

  /** Resolves when no dispatch pass is running or asked for (tests; orderly shutdown). */
  async whenIdle(): Promise<void> {
    while (this.dispatching) await this.loop;
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
   * Fill free slots: one claimMany per worker with free slots, for all of
   * them, most free first (so a short queue goes to the least busy worker),
   * all requested before any is awaited. On SQLite the whole round shares
   * one transaction (group commit); on PostgreSQL each worker's claim is one
   * statement however many tasks it takes.
   *
   * Measured (issue 9, 5,000 no-op tasks waiting, one agent with 10 slots,
   * PostgreSQL): claiming one task per statement made the drain 393 tasks/s,
   * with the server waiting on round trips and WAL flushes; a worker's free
   * slots claimed in one statement (and its exits ended in one transaction,
   * worker-session.ts) cut both by up to the slot count.
   *
   * A round that fills every slot it asked for may have left tasks waiting,
   * but then no slot is free; a slot freed meanwhile kicks another pass.
   */
  private async dispatchPass(): Promise<void> {
    // Slots that can start a process now first; a worker's prefetch only when no worker has one free (a
    // short queue must not wait in one agent's prefetch while another agent has an idle slot).
    let asks = this.asks(false);
    const runSlots = asks.length > 0;
    if (!runSlots) asks = this.asks(true);
    if (asks.length === 0) return;
    let total = 0;
    asks.sort((a, b) => b[1] - a[1]);
    const now = this.clock.now();
    const claims = await Promise.all(
      asks.map(async ([l, free]) => {
        const max = Math.min(free, MAX_CLAIMS_PER_ROUND - total);
        total += max;
        if (max <= 0) return [];
        const release = this.reserve(l, max);
        try {
          return await this.store.claimMany({ id: l.workerId, labels: l.labels }, max, now, this.opts.leaseMs);
        } finally {
          release();
        }
      }),
    );
    // The round stopped at the cap with every ask filled: more slots and tasks may be left.
    const filled = claims.reduce((n, b) => n + b.length, 0) === total;
    if (total >= MAX_CLAIMS_PER_ROUND && filled) this.again = true;
    // Every slot asked for was filled: tasks may be left for the prefetch (the next pass asks for it).
    if (runSlots && filled && [...this.links.values()].some((l) => (l.prefetch ?? 0) > 0)) this.again = true;
    const unsent: Attempt[] = [];
    for (const [i, batch] of claims.entries()) {
      const link = asks[i]![0];
      for (const claim of batch) if (!link.assign(claim.task, claim.attempt)) unsent.push(claim.attempt);
    }
    await this.giveBack(unsent);
    // Slots left free with nothing waiting for them: what other workers hold queued may run there.
    if (runSlots && !filled) this.takeBack();
  }

  private asks(withPrefetch: boolean): Array<[WorkerLink, number]> {
    const asks: Array<[WorkerLink, number]> = [];
    for (const l of this.links.values()) {
      const free = this.freeSlots(l, withPrefetch);
      if (free > 0) asks.push([l, free]);
    }
    return asks;
  }

  /**
   * Claimed attempts whose assignment could not be sent (the socket closed
   * after the claim): ended as lost at once, so their tasks run again now
   * rather than after the lease (no process was started).
   */
  async giveBack(attempts: Attempt[]): Promise<void> {
    if (attempts.length) await this.endAllLost(attempts, 'worker connection closed before the assignment was sent');
  }

  /**
   * Ends attempts as lost (no retry used) and requeues their tasks, in one
   * store transaction. With `leaseExpired` the store re-checks each expiry
   * inside that transaction, so a heartbeat that renewed a lease meanwhile
   * wins. Returns those this call ended.
   */
  private async endAllLost(attempts: Attempt[], error: string | ((a: Attempt) => string), leaseExpired = false): Promise<Attempt[]> {
    const end = (a: Attempt) => ({ outcome: 'lost' as const, exitCode: null, signal: null, error: typeof error === 'function' ? error(a) : error, durationMs: null });
    const res = await this.store.endAttempts(
      attempts.map((a) => ({ attemptId: a.id, fencingToken: a.fencingToken, end: end(a), actor: 'scheduler', guard: leaseExpired ? { leaseExpired: true } : {} })),
      this.clock.now(),
    );
    return attempts.filter((_, i) => res[i] !== null);
  }

  /** Called after a task entered `retrying`: wake when its backoff ends. */
  wakeAtTime(at: number): void {
    if (this.stopped || at >= this.wakeAt) return;
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    this.wakeAt = at;
    // At most setTimeout's limit (a task may wait a year): a timer past it would fire after 1 ms and spin;
    // an early wake promotes nothing and re-arms for the same time (promote()).
    this.wakeTimer = setTimeout(() => void this.onWake(), Math.min(Math.max(0, at - this.clock.now()), MAX_TIMEOUT_MS));
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
    // Each promoted task is signalled (wake + task) by the store. In batches, so a
    // backlog of due retries costs bounded statements.
    for (let i = 0; i < MAX_SWEEP_BATCHES; i++) {
      const ids = await this.store.promoteDue(this.clock.now(), SWEEP_BATCH);
      if (ids.length < SWEEP_BATCH) break;
    }
    const next = await this.store.nextDueAt();
    if (next !== null) this.wakeAtTime(next);
  }

  /** Ends, in bounded batches (one transaction each), the attempts whose lease expired; each end re-checks the expiry itself. */
  private async expireLeases(now: number): Promise<void> {
    for (let i = 0; i < MAX_SWEEP_BATCHES; i++) {
      const expired = await this.store.expiredAttempts(now, SWEEP_BATCH);
      if (expired.length === 0) return;
      const ended = await this.endAllLost(expired, (a) => `lease expired: worker ${a.workerId} silent for ${this.opts.leaseMs} ms`, true);
      for (const a of ended) {
        this.linkOf(a.id)?.drop(a.id);
        this.log.warn({ attemptId: a.id, taskId: a.taskId, workerId: a.workerId }, 'lease expired: attempt lost');
      }
      if (expired.length < SWEEP_BATCH) return;
    }
  }

  /** Old changes, minute stats and expired web sessions (retention.ts). A failure is logged and does not stop the sweep. */
  private async prune(now: number): Promise<void> {
    this.prunedAt = now;
    try {
      await pruneExpired(this.store, now);
    } catch (err) {
      this.log.warn({ err }, 'pruning old dashboard data failed; the next sweep tries again');
    }
  }

  /** Folds the counters' delta rows (store/task-views.ts foldCounters). A failure is logged; reads stay right without it. */
  private async fold(now: number): Promise<void> {
    try {
      await this.store.foldCounters(now - FOLD_WINDOW_MS);
    } catch (err) {
      this.log.warn({ err }, 'folding the task counters failed; the next sweep tries again');
    }
  }

  /** The fallback: expire leases, promote due retries, dispatch what may have been missed, prune (leader). */
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
      // A server that just started gives agents one lease to reconnect before ending any.
      if (leading && mayExpireLeases(this.startedAt, now, this.opts.leaseMs)) await this.expireLeases(now);
      if (leading && now - this.prunedAt >= PRUNE_EVERY_MS) await this.prune(now);
      if (leading) await this.fold(now);
      await this.promote();
      this.kick();
    } catch (err) {
      this.log.error({ err }, 'sweep failed');
    }
  }
}
