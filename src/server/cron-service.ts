/**
 * The cron firing loop (issue 11): turns due schedules into tasks, through
 * the pure core (core/cron planDue, decideOverlap; cron-burst.ts) and the one
 * fencing transaction of the store (store/schedules.ts fireSchedule).
 *
 * One firer. Only the holder of the `cron` leadership lease fires; it renews
 * the lease every tick (≤ 1 s) for `leaseTtlMs`, and passes the lease's epoch
 * into every fireSchedule, which refuses (`not_leader`) once another server
 * took the lease, so a paused former leader cannot fire even once. A server
 * that is told `not_leader`, or fails to renew, stops firing until a later
 * renewal makes it the leader again. When the leader dies, another server's
 * tick takes the expired lease within leaseTtlMs + one tick and fires what
 * came due in between per each schedule's catch-up policy.
 *
 * States: follower (leader === null) ⇄ leader (leader = {epoch}). follower →
 * leader on a renewal that returns an epoch; leader → follower on a renewal
 * that returns null or a firing answered `not_leader`.
 *
 * Timing. A timer is armed on the earliest next fire time of any schedule
 * (store.nextScheduleDueAt: the head of an index, the seed's priority queue),
 * so a run's task is created within milliseconds of its slot, not at the next
 * poll. It is re-armed after every pass, and `kick()` (a schedule was created,
 * resumed or run) runs a pass at once, which re-arms it. The tick is also the
 * fallback rescan, catching what another server or process changed.
 *
 * Passes run one at a time (a queue of one: kicks during a pass cause one
 * more pass), so two passes of one server never plan the same schedule at
 * once; across servers the lease and the transaction's optimistic guard
 * (`stale`: re-read, re-plan) keep every slot to one task.
 */
import type { Clock } from '../core/clock.js';
import { ConflictError, InvalidInputError } from '../core/errors.js';
import { newTaskId } from '../core/ids.js';
import { parseSchedule, type Schedule } from '../core/cron/schedule.js';
import { planDue } from '../core/cron/plan-due.js';
import { isTerminal } from '../core/task-state.js';
import { CRON_ACTOR, type FireLeader, type ScheduleRecord } from '../store/schedules.js';
import type { Store } from '../store/store.js';
import { planBurst } from './cron-burst.js';
import type { Logger } from './scheduler.js';

/** The lease's name in the leaders table. */
export const CRON_LEASE = 'cron';
export const DEFAULT_CRON_TICK_MS = 1000;
export const DEFAULT_CRON_LEASE_TTL_MS = 5000;
/** Due schedules read (and fired concurrently) per batch; a full batch is followed by another. */
export const DUE_BATCH = 256;
/** Batches per pass at most, so one pass cannot hold the loop forever; the next pass goes on. */
const MAX_BATCHES = 64;
/** Plans per schedule per pass when the store answers `stale` (another writer moved it). */
const MAX_REPLANS = 3;
/** Run records read to find the previous fired run (overlap forbid/replace); skipped ones come between. */
export const RUN_SCAN = 100;
/** When something is still due after a pass (a failing schedule), the next pass waits this long. */
const RETRY_MS = 1000;
/** setTimeout's maximum delay. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface CronServiceOptions {
  /** This server's name in the lease (unique per server process on a multi-server store). */
  holder: string;
  /** Renewal and rescan period, 1-1000 ms. */
  tickMs?: number;
  /** Lease length; more than tickMs. */
  leaseTtlMs?: number;
}

export interface CronStats {
  /** Tasks this service created. */
  fired: number;
  /** Skipped runs it recorded. */
  skipped: number;
  /** Firings refused as stale and re-planned. */
  replans: number;
}

export class CronService {
  private readonly holder: string;
  private readonly tickMs: number;
  private readonly leaseTtlMs: number;
  private leader: FireLeader | null = null;
  private chain: Promise<void> = Promise.resolve();
  private passQueued = false;
  private queuedTick: Promise<void> | null = null;
  /** A schedule of the current pass failed to fire (or kept changing): the timer then backs off. */
  private failedInPass = false;
  private started = false;
  private stopped = false;
  private tickTimer: NodeJS.Timeout | null = null;
  private dueTimer: NodeJS.Timeout | null = null;
  /** Compiled schedules by "tz\nexpr" (a Schedule's croner pattern is compiled once per object). */
  private readonly compiled = new Map<string, Schedule>();
  /** The task this server last fired per schedule: the previous run when the run records hold none within RUN_SCAN. */
  private readonly lastFired = new Map<string, string>();
  readonly stats: CronStats = { fired: 0, skipped: 0, replans: 0 };

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly log: Logger,
    opts: CronServiceOptions,
  ) {
    if (typeof opts.holder !== 'string' || opts.holder === '') throw new InvalidInputError('holder', 'expected a non-empty server name');
    this.holder = opts.holder;
    this.tickMs = opts.tickMs ?? DEFAULT_CRON_TICK_MS;
    this.leaseTtlMs = opts.leaseTtlMs ?? DEFAULT_CRON_LEASE_TTL_MS;
    if (!Number.isInteger(this.tickMs) || this.tickMs < 1 || this.tickMs > 1000) throw new InvalidInputError('tickMs', 'expected an integer 1-1000 (ms)');
    if (!Number.isInteger(this.leaseTtlMs) || this.leaseTtlMs <= this.tickMs) throw new InvalidInputError('leaseTtlMs', `expected an integer above tickMs (${this.tickMs} ms)`);
  }

  /** True while this server holds the cron lease (as of its last renewal or firing). */
  get leading(): boolean {
    return this.leader !== null;
  }

  /** Starts the tick (renew + rescan) and the due timer; the first tick runs now. */
  start(): void {
    if (this.started || this.stopped) return;
    this.started = true;
    this.tickTimer = setInterval(() => void this.tick(), this.tickMs);
    this.tickTimer.unref();
    void this.tick();
  }

  /** Stops firing. The lease is not released: it expires, and another server takes it then. */
  stop(): void {
    this.stopped = true;
    if (this.tickTimer) clearInterval(this.tickTimer);
    if (this.dueTimer) clearTimeout(this.dueTimer);
    this.tickTimer = this.dueTimer = null;
  }

  /** A schedule was created, resumed or changed: plan now and re-arm the timer. Coalesces. */
  kick(): void {
    if (this.stopped || this.passQueued) return;
    this.passQueued = true;
    this.enqueue(async () => {
      this.passQueued = false;
      await this.pass();
    });
  }

  /**
   * Renews (or takes) the lease, then fires what is due. Tests call it with a
   * fake clock instead of start(). Coalesces: a tick asked for while one is
   * still queued is that one, so a slow store does not pile ticks up.
   */
  tick(): Promise<void> {
    if (this.queuedTick) return this.queuedTick;
    const run = this.enqueue(async () => {
      this.queuedTick = null;
      await this.renew();
      await this.pass();
    });
    this.queuedTick = run;
    return run;
  }

  /** Resolves when no pass is running or queued. */
  async whenIdle(): Promise<void> {
    let seen: Promise<void>;
    do {
      seen = this.chain;
      await seen;
    } while (seen !== this.chain);
  }

  private enqueue(fn: () => Promise<void>): Promise<void> {
    const run = this.chain.then(async () => {
      if (this.stopped) {
        this.queuedTick = null;
        return;
      }
      try {
        await fn();
      } catch (err) {
        this.log.error({ err }, 'cron pass failed; the next tick tries again');
      }
    });
    this.chain = run;
    return run;
  }

  private async renew(): Promise<void> {
    let epoch: number | null;
    try {
      epoch = await this.store.acquireLeadershipEpoch(CRON_LEASE, this.holder, this.clock.now(), this.leaseTtlMs);
    } catch (err) {
      // Keep firing under the epoch we have: fireSchedule re-checks the lease itself.
      this.log.warn({ err }, 'renewing the cron lease failed');
      return;
    }
    if (epoch === null) {
      if (this.leader) this.lose('another server holds the cron lease');
      return;
    }
    if (!this.leader || this.leader.epoch !== epoch) this.log.info({ holder: this.holder, epoch }, 'now firing cron schedules');
    this.leader = { name: CRON_LEASE, holder: this.holder, epoch };
  }

  private lose(why: string): void {
    this.log.info({ holder: this.holder, epoch: this.leader?.epoch }, `no longer firing cron schedules: ${why}`);
    this.leader = null;
    if (this.dueTimer) clearTimeout(this.dueTimer);
    this.dueTimer = null;
  }

  /** Fires every due schedule (in batches, each batch concurrently), then re-arms the timer. */
  private async pass(): Promise<void> {
    this.failedInPass = false;
    for (let i = 0; i < MAX_BATCHES; i++) {
      const leader = this.leader;
      if (!leader) return;
      const due = await this.store.dueSchedules(this.clock.now(), DUE_BATCH);
      await Promise.all(due.map((s) => this.fireOne(s, leader)));
      if (due.length < DUE_BATCH) break;
      if (i === MAX_BATCHES - 1) this.kick();
    }
    await this.arm();
  }

  private async arm(): Promise<void> {
    if (!this.started || this.stopped || !this.leader) return;
    const next = await this.store.nextScheduleDueAt();
    if (this.dueTimer) clearTimeout(this.dueTimer);
    this.dueTimer = null;
    if (next === null) return;
    const wait = next - this.clock.now();
    // Still due after a pass: came due during it (go on now), or failed to fire (logged: do not spin on it).
    const delay = wait > 0 ? Math.min(wait, MAX_TIMER_MS) : this.failedInPass ? RETRY_MS : 0;
    this.dueTimer = setTimeout(() => this.kick(), delay);
    this.dueTimer.unref();
  }

  private schedule(s: ScheduleRecord): Schedule {
    const key = `${s.tz}\n${s.expr}`;
    let c = this.compiled.get(key);
    if (!c) {
      if (this.compiled.size >= 100_000) this.compiled.clear();
      c = parseSchedule({ expr: s.expr, tz: s.tz });
      this.compiled.set(key, c);
    }
    return c;
  }

  /** Plans and fires one schedule; re-reads and re-plans on `stale`. Errors are logged, not thrown (the batch goes on). */
  private async fireOne(first: ScheduleRecord, leader: FireLeader): Promise<void> {
    let s: ScheduleRecord | null = first;
    try {
      for (let n = 0; s && n < MAX_REPLANS; n++) {
        if (s.paused) return;
        const now = this.clock.now();
        const plan = planDue({ schedule: this.schedule(s), lastSlotMs: s.lastSlotAt, createdAtMs: s.createdAt, nowMs: now, catchup: s.catchup, maxCatchup: s.maxCatchup });
        const prev = s.overlap === 'allow' || plan.fire.length === 0 ? { active: false, taskId: null } : await this.previousRun(s);
        const burst = planBurst(plan, s.catchup, s.overlap, prev.active);
        if (burst.cancelPrevious && prev.taskId !== null) await this.cancel(prev.taskId, s, now);
        const fire = burst.fire.map((slot) => ({ slot, taskId: newTaskId(now) }));
        const res = await this.store.fireSchedule({
          scheduleId: s.id,
          leader,
          expectedLastSlotAt: s.lastSlotAt,
          fire,
          skipped: burst.skipped,
          lastSlotAt: plan.lastSlotMs,
          nextFireAt: plan.nextAfterMs,
          now,
        });
        if (res.ok) {
          const newest = res.created[res.created.length - 1];
          if (newest) this.lastFired.set(s.id, newest.id);
          this.stats.fired += res.created.length;
          this.stats.skipped += burst.skipped.length;
          if (burst.catchup.count > 0) {
            const msg = burst.catchup.reason === 'catchup_capped' ? 'catch-up capped: missed runs dropped (the oldest ones)' : 'missed runs skipped by the catch-up policy';
            this.log.warn({ schedule: s.name, scheduleId: s.id, catchup: s.catchup, dropped: burst.catchup.count, exact: burst.catchup.exact, recorded: 'first and last' }, msg);
          }
          return;
        }
        if (res.reason === 'not_leader') {
          if (this.leader === leader) this.lose('the lease moved (fireSchedule: not_leader)');
          return;
        }
        this.stats.replans++;
        s = await this.store.getSchedule(s.id);
      }
      if (s) {
        this.failedInPass = true;
        this.log.warn({ schedule: s.name, scheduleId: s.id }, `cron: schedule kept changing while firing (${MAX_REPLANS} plans); the next pass tries again`);
      }
    } catch (err) {
      this.failedInPass = true;
      this.log.error({ err, schedule: first.name, scheduleId: first.id }, 'firing a cron schedule failed');
    }
  }

  /** The schedule's latest fired run and whether its task is still active (not terminal). */
  private async previousRun(s: ScheduleRecord): Promise<{ active: boolean; taskId: string | null }> {
    const fired = (await this.store.scheduleRuns(s.id, RUN_SCAN)).find((r) => r.outcome === 'fired');
    if (fired) return { active: fired.taskState !== null && !isTerminal(fired.taskState), taskId: fired.taskId };
    const remembered = this.lastFired.get(s.id);
    if (remembered === undefined) return { active: false, taskId: null };
    const t = await this.store.getTask(remembered);
    return { active: t !== null && !isTerminal(t.state), taskId: remembered };
  }

  /** overlap=replace: cancel the running run; one that ended meanwhile is fine (ConflictError: already terminal). */
  private async cancel(taskId: string, s: ScheduleRecord, now: number): Promise<void> {
    try {
      await this.store.cancelTask(taskId, CRON_ACTOR, now);
      this.log.info({ schedule: s.name, taskId }, 'cron: previous run cancelled (overlap replace)');
    } catch (err) {
      if (!(err instanceof ConflictError)) throw err;
    }
  }
}
