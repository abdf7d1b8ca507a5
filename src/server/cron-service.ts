/**
 * The cron firing loop (issue 11): turns due schedules into tasks, through
 * the pure core (core/cron planDue, decideOverlap; cron-burst.ts) and the
 * fencing transaction of the store (store/schedules.ts fireSchedules), one
 * per batch of due schedules.
 *
 * One firer. Only the holder of the `cron` leadership lease fires; it renews
 * the lease every tick (≤ 1 s) for `leaseTtlMs`, and between the batches of a
 * long pass, and passes the lease's epoch into every fireSchedules, which
 * refuses (`not_leader`) once another server took the lease, so a paused
 * former leader cannot fire even once. A server
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
 * poll. A second timer, PREPARE_AHEAD_MS before it, reads and plans what
 * comes due then (prepareAhead), so that the due time's pass starts with the
 * writes. They are re-armed after every pass, and `kick()` (a schedule was
 * created, resumed or run) runs a pass at once, which re-arms them. The tick
 * is also the fallback rescan, catching what another server or process
 * changed.
 *
 * Passes run one at a time (a queue of one: kicks during a pass cause one
 * more pass), so two passes of one server never plan the same schedule at
 * once; across servers the lease and the transaction's optimistic guard
 * (`stale`: re-read, re-plan) keep every slot to one task.
 */
import type { Clock } from '../core/clock.js';
import { ConflictError, InvalidInputError } from '../core/errors.js';
import { newTaskId } from '../core/ids.js';
import { MAX_TIMEOUT_MS } from '../core/long-timeout.js';
import { parseSchedule, type Schedule } from '../core/cron/schedule.js';
import { planDue, type DuePlan } from '../core/cron/plan-due.js';
import { CRON_ACTOR, MAX_FIRE_SCHEDULES, type ActiveRun, MAX_FIRE_TASKS, type FireLeader, type FireResult, type ScheduleFiring, type ScheduleRecord } from '../store/schedules.js';
import type { Store } from '../store/store.js';
import { planBurst, type Burst } from './cron-burst.js';
import type { Logger } from './scheduler.js';

/** The lease's name in the leaders table. */
export const CRON_LEASE = 'cron';
export const DEFAULT_CRON_TICK_MS = 1000;
export const DEFAULT_CRON_LEASE_TTL_MS = 5000;
/** Schedules per store batch at most (storeBatches). */
export const FIRE_GROUP = 500;
/**
 * Store batches of one due batch in flight at once. On PostgreSQL each is a
 * transaction of its own on its own connection, so the database works on
 * two at once (their schedule rows are disjoint; both take the lease row
 * FOR SHARE, which does not conflict); on SQLite both join one group commit.
 * Measured (issue 9; the bench's cron section, 10,000 schedules `* * * * *`
 * on a real server, one slot each, three pairs alternating, 2026-12-04
 * 03:26-03:37 UTC), the slot's slowest run late by:
 *  - PostgreSQL: 1,292-1,664 ms (median 1,349) one store batch of 500 at a
 *    time; 1,112-1,520 ms (median 1,151) two at once;
 *  - SQLite: no different, 765-801 ms (median 794) against 709-967 ms
 *    (median 790).
 * An earlier probe with batches of 250, two or four in flight, measured no
 * faster than one.
 */
export const FIRE_IN_FLIGHT = 2;
/**
 * Due schedules read and planned together per batch; a full batch is
 * followed by another. A batch is fired as store batches (fireSchedules, one
 * transaction each) of at most FIRE_GROUP schedules and MAX_FIRE_TASKS tasks,
 * FIRE_IN_FLIGHT of them at once: one round of store batches per due batch
 * (more when its catch-up bursts make more than MAX_FIRE_TASKS tasks).
 */
export const DUE_BATCH = FIRE_GROUP * FIRE_IN_FLIGHT;
/**
 * How long before a due time the firer reads and plans what comes due then
 * (prepareAhead), so that at the due time only the writes remain. Long
 * enough for 10,000 schedules to be read and planned on this machine (100-300
 * ms on PostgreSQL), short enough that a change in between is rare (and the
 * firing's guard catches it anyway).
 */
export const PREPARE_AHEAD_MS = 500;
/** Schedules read ahead at most; any beyond are read at the due time, as every due schedule was before. */
export const PREPARE_MAX = 20 * DUE_BATCH;
/** Batches per pass at most, so one pass cannot hold the loop forever; the next pass goes on. */
const MAX_BATCHES = 64;
/** Plans per schedule per pass when the store answers `stale` (another writer moved it). */
const MAX_REPLANS = 3;
/**
 * Active runs read per schedule for the overlap policies (forbid: one is
 * enough to skip; replace: each is cancelled). A schedule with more (many
 * "run now" clicks) has the rest cancelled by its next firings.
 */
export const ACTIVE_SCAN = 100;
/** When something is still due after a pass (a failing schedule), the next pass waits this long. */
const RETRY_MS = 1000;

export interface CronServiceOptions {
  /** This server's name in the lease (unique per server process on a multi-server store). */
  holder: string;
  /** Renewal and rescan period, 1-1000 ms. */
  tickMs?: number;
  /** Lease length; more than tickMs. */
  leaseTtlMs?: number;
}

export interface CronStats {
  /** Runs this service started: tasks, and DAG runs of DAG schedules. */
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
  /** The clock when the lease was last renewed (or a renewal tried). */
  private renewedAt = -Infinity;
  private stopped = false;
  private tickTimer: NodeJS.Timeout | null = null;
  private dueTimer: NodeJS.Timeout | null = null;
  /** The read-ahead's timer (arm), and the due time it, or the read-ahead held now, is for. */
  private aheadTimer: NodeJS.Timeout | null = null;
  private aheadFor: number | null = null;
  /** Schedules read and planned ahead of their due time `at` (prepareAhead), in due batches; taken by the first pass at or after `at`. */
  private ahead: { at: number; batches: Prepared[][] } | null = null;
  /** Compiled schedules by "tz\nexpr" (a Schedule's croner pattern is compiled once per object). */
  private readonly compiled = new Map<string, Schedule>();
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
    if (this.aheadTimer) clearTimeout(this.aheadTimer);
    this.tickTimer = this.dueTimer = this.aheadTimer = null;
    this.ahead = null;
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
    this.renewedAt = this.clock.now();
    let epoch: number | null;
    try {
      epoch = await this.store.acquireLeadershipEpoch(CRON_LEASE, this.holder, this.clock.now(), this.leaseTtlMs);
    } catch (err) {
      // Keep firing under the epoch we have: fireSchedules re-checks the lease itself.
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
    if (this.aheadTimer) clearTimeout(this.aheadTimer);
    this.dueTimer = this.aheadTimer = null;
    this.aheadFor = null;
    this.ahead = null;
  }

  /**
   * Fires every due schedule, a due batch at a time (its store batches, one
   * transaction each, FIRE_IN_FLIGHT at once: store/schedules.ts
   * fireSchedules), then re-arms the timer. A long
   * pass renews the lease between batches, so it is not lost mid-pass
   * (measured before batching: one pass over 10,000 due schedules on
   * PostgreSQL outlived the 5 s lease and was fenced after 1,566 of them).
   */
  private async pass(): Promise<void> {
    this.failedInPass = false;
    // First what was read and planned ahead for this due time (prepareAhead), then whatever else is due.
    let ahead: Prepared[][] = [];
    if (this.ahead !== null && this.ahead.at <= this.clock.now()) {
      ahead = this.ahead.batches;
      this.ahead = null;
    }
    for (const [i, batch] of ahead.entries()) {
      if (i > 0 && this.clock.now() - this.renewedAt >= this.tickMs) await this.renew();
      const leader = this.leader;
      if (!leader) return;
      if (!(await this.fireBatch(batch, leader))) return;
    }
    for (let i = 0; i < MAX_BATCHES; i++) {
      // Between batches only: before the first, a renewal (a write) would only delay the slot's runs.
      if ((i > 0 || ahead.length > 0) && this.clock.now() - this.renewedAt >= this.tickMs) await this.renew();
      const leader = this.leader;
      if (!leader) return;
      const due = await this.store.dueSchedules(this.clock.now(), DUE_BATCH);
      if (due.length > 0 && !(await this.fireBatch(await this.prepare(due), leader))) return;
      if (due.length < DUE_BATCH) break;
      if (i === MAX_BATCHES - 1) this.kick();
    }
    await this.arm();
  }

  /**
   * Reads the schedules that come due by `at` (at most PREPARE_MAX) and
   * plans them as of `at` (prepare: reads only; nothing is written or
   * cancelled), for the first pass at or after `at` to fire without reading
   * or planning first. arm() runs it PREPARE_AHEAD_MS before the earliest
   * due time; tests call it directly with a fake clock. Only schedules with
   * overlap `allow`: the other policies depend on what is running at the
   * firing itself, so those are read at the due time as before. A schedule
   * paused, changed or fired by another server in between is answered
   * `stale` by the firing's guard, re-read and planned again (fireBatch); one
   * created in between is read at the due time. Does nothing when this
   * server does not hold the lease.
   *
   * Measured (issue 9; 10,000 schedules \`* * * * *\`): reading and planning
   * were about a fifth of a slot's pass (measure-cron-pass.ts, SQLite: 70 ms
   * of reads and 55 ms of planning in a 600 ms pass; timestamps in a real
   * PostgreSQL server: reads 8-51 ms and planning 4-27 ms per 1,000, 0.27 s of
   * a 1.45 s slot). The bench's cron run (everyMinute of bench/sections/cron.ts,
   * a real server, one slot each), alternating with the build before,
   * 2026-12-04 13:37-13:46 UTC: the slot's slowest run late by 753 and 820 ms
   * before, 608 and 572 ms after on SQLite; 1,143 and 1,261 ms before, 930 and
   * 1,039 ms after on PostgreSQL. Tried before this and left out: reading the
   * next due batch while the one before fires (the database's CPU is the bound
   * on PostgreSQL: 1,052-1,091 ms a pass before, 1,097-1,130 ms with it), and
   * 1, 3 or 4 store batches in flight, or batches of 250 or 1,000 (all within
   * 1.0-1.35 s).
   */
  async prepareAhead(at: number): Promise<void> {
    if (!this.leader) return;
    const due = (await this.store.dueSchedules(at, PREPARE_MAX)).filter((s) => s.overlap === 'allow');
    const batches: Prepared[][] = [];
    for (let i = 0; i < due.length; i += DUE_BATCH) batches.push(await this.prepare(due.slice(i, i + DUE_BATCH), at));
    // The lease may have moved during the reads (lose() cleared aheadFor then): keep nothing.
    if (this.leader) this.ahead = { at, batches };
  }

  private async arm(): Promise<void> {
    if (!this.started || this.stopped || !this.leader) return;
    const next = await this.store.nextScheduleDueAt();
    if (this.dueTimer) clearTimeout(this.dueTimer);
    this.dueTimer = null;
    if (next === null) return;
    const wait = next - this.clock.now();
    // Still due after a pass: came due during it (go on now), or failed to fire (logged: do not spin on it).
    const delay = wait > 0 ? Math.min(wait, MAX_TIMEOUT_MS) : this.failedInPass ? RETRY_MS : 0;
    this.dueTimer = setTimeout(() => this.kick(), delay);
    this.dueTimer.unref();
    // The read-ahead for this due time, once (arm runs after every pass, every tick): queued like a pass.
    if (next !== this.aheadFor && wait > PREPARE_AHEAD_MS && wait <= MAX_TIMEOUT_MS) {
      if (this.aheadTimer) clearTimeout(this.aheadTimer);
      this.aheadFor = next;
      this.aheadTimer = setTimeout(() => {
        this.aheadTimer = null;
        void this.enqueue(() => this.prepareAhead(next));
      }, wait - PREPARE_AHEAD_MS);
      this.aheadTimer.unref();
    }
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

  /**
   * Completes the plans of a batch of due schedules (complete), fires them in
   * store batches (at most MAX_FIRE_TASKS tasks and FIRE_GROUP schedules
   * each, FIRE_IN_FLIGHT at once; a lease lost in any of them ends the batch
   * and the pass: false), and re-reads and re-plans the ones answered
   * `stale`, up to MAX_REPLANS rounds. A schedule that cannot be planned is
   * logged and left for the next pass; a store batch that fails is logged and
   * the rest go on.
   */
  private async fireBatch(due: Prepared[], leader: FireLeader): Promise<boolean> {
    let todo = due;
    for (let round = 0; todo.length > 0; round++) {
      if (round === MAX_REPLANS) {
        this.failedInPass = true;
        for (const { s } of todo) this.log.warn({ schedule: s.name, scheduleId: s.id }, `cron: schedule kept changing while firing (${MAX_REPLANS} plans); the next pass tries again`);
        return true;
      }
      const planned = await this.complete(todo);
      const stale: string[] = [];
      const groups = storeBatches(planned, FIRE_GROUP);
      for (let i = 0; i < groups.length; i += FIRE_IN_FLIGHT) {
        const answers = await Promise.all(groups.slice(i, i + FIRE_IN_FLIGHT).map((group) => this.fireGroup(group, leader, stale)));
        if (answers.includes(false)) return false;
      }
      this.stats.replans += stale.length;
      if (stale.length === 0) break;
      todo = await this.prepare((await Promise.all(stale.map((id) => this.store.getSchedule(id)))).filter((s): s is ScheduleRecord => s !== null && !s.paused));
    }
    return true;
  }

  /** One store batch; the ids answered `stale` go to `stale`. False when the lease moved (not_leader). */
  private async fireGroup(group: Planned[], leader: FireLeader, stale: string[]): Promise<boolean> {
    const now = this.clock.now();
    let results: FireResult[];
    try {
      results = await this.store.fireSchedules({ leader, now, requests: group.map((p) => p.request) });
    } catch (err) {
      this.failedInPass = true;
      this.log.error({ err, schedules: group.length }, 'firing a batch of cron schedules failed; the next pass tries again');
      return true;
    }
    for (const [k, res] of results.entries()) {
      const p = group[k]!;
      if (res.ok) this.fired(p, res);
      else if (res.reason === 'stale') stale.push(p.s.id);
      else {
        if (this.leader === leader) this.lose('the lease moved (fireSchedules: not_leader)');
        return false;
      }
    }
    return true;
  }

  /**
   * The first half of planning, which changes nothing: each schedule's due
   * plan as of `now` (paused ones, and ones that fail to plan, are left out:
   * logged, and the next pass tries again) and, for the overlap policies
   * other than allow, its active runs, its slots' and its run-now ones, from
   * one store read for the whole batch (activeScheduleRuns). complete() does
   * the rest at the firing.
   */
  private async prepare(schedules: ScheduleRecord[], now = this.clock.now()): Promise<Prepared[]> {
    const plans: Array<{ s: ScheduleRecord; plan: DuePlan }> = [];
    for (const s of schedules) {
      if (s.paused) continue;
      try {
        plans.push({ s, plan: planDue({ schedule: this.schedule(s), lastSlotMs: s.lastSlotAt, createdAtMs: s.createdAt, nowMs: now, catchup: s.catchup, maxCatchup: s.maxCatchup }) });
      } catch (err) {
        this.failedInPass = true;
        this.log.error({ err, schedule: s.name, scheduleId: s.id }, 'planning a cron schedule failed; the next pass tries again');
      }
    }
    // Only a policy other than allow, with a slot to fire, needs to know what is running.
    const asks = plans.filter((p) => p.s.overlap !== 'allow' && p.plan.fire.length > 0).map((p) => p.s.id);
    const active = new Map<string, ActiveRun[]>();
    if (asks.length > 0) for (const r of await this.store.activeScheduleRuns(asks, ACTIVE_SCAN)) active.set(r.scheduleId, [...(active.get(r.scheduleId) ?? []), r]);
    return plans.map(({ s, plan }) => ({ s, plan, running: active.get(s.id) ?? [] }));
  }

  /**
   * The firing of each prepared schedule, at the firing: its burst (overlap
   * and catch-up) and new task ids; `replace` cancels every active run (at
   * most ACTIVE_SCAN per firing) before the new run is created, and a
   * schedule whose run to replace could not be cancelled is left out
   * (logged; the next pass tries again).
   */
  private async complete(prepared: Prepared[]): Promise<Planned[]> {
    const now = this.clock.now();
    const out = await Promise.all(
      prepared.map(async ({ s, plan, running }): Promise<Planned | null> => {
        const burst = planBurst(plan, s.catchup, s.overlap, running.length > 0);
        if (burst.cancelPrevious && !(await this.cancelAll(running, s, now))) return null;
        const fire = burst.fire.map((slot) => ({ slot, taskId: newTaskId(now) }));
        const request: ScheduleFiring = { scheduleId: s.id, expectedLastSlotAt: s.lastSlotAt, fire, skipped: burst.skipped, lastSlotAt: plan.lastSlotMs, nextFireAt: plan.nextAfterMs, schedule: s };
        return { s, burst, request };
      }),
    );
    return out.filter((p): p is Planned => p !== null);
  }

  private fired(p: Planned, res: Extract<FireResult, { ok: true }>): void {
    this.stats.fired += res.created.length + res.dagRuns.length;
    for (const u of res.unstarted) {
      this.log.warn({ schedule: p.s.name, scheduleId: p.s.id, dag: p.s.dag?.name, slot: new Date(u.slot).toISOString(), reason: u.reason, detail: u.detail }, 'cron: the DAG run of this slot could not start; recorded as skipped');
    }
    this.stats.skipped += p.burst.skipped.length;
    const { catchup } = p.burst;
    if (catchup.count > 0) {
      const msg = catchup.reason === 'catchup_capped' ? 'catch-up capped: missed runs dropped (the oldest ones)' : 'missed runs skipped by the catch-up policy';
      this.log.warn({ schedule: p.s.name, scheduleId: p.s.id, catchup: p.s.catchup, dropped: catchup.count, exact: catchup.exact, recorded: 'first and last' }, msg);
    }
  }

  /**
   * overlap=replace: cancels the schedule's active runs. One that ended
   * meanwhile is fine (ConflictError: already terminal). False, logged, when
   * another error left one running: the schedule is not fired this pass.
   */
  private async cancelAll(runs: ActiveRun[], s: ScheduleRecord, now: number): Promise<boolean> {
    // A DAG run is cancelled as a whole (its running steps get stop orders, as a task's cancel gives one).
    const results = await Promise.allSettled(
      runs.map((r) => (r.dagRunId !== undefined ? this.store.cancelDagRun(r.dagRunId, CRON_ACTOR, now) : this.store.cancelTask(r.taskId, CRON_ACTOR, now))),
    );
    let ok = true;
    for (const [i, r] of results.entries()) {
      const run = runs[i]!.dagRunId !== undefined ? { dagRunId: runs[i]!.dagRunId } : { taskId: runs[i]!.taskId };
      if (r.status === 'fulfilled') this.log.info({ schedule: s.name, ...run }, 'cron: previous run cancelled (overlap replace)');
      else if (!(r.reason instanceof ConflictError)) {
        ok = false;
        this.failedInPass = true;
        this.log.error({ err: r.reason, schedule: s.name, scheduleId: s.id, ...run }, 'cron: cancelling the previous run failed (overlap replace); the next pass tries again');
      }
    }
    return ok;
  }
}

/** A due schedule's plan and active runs (CronService.prepare), before its firing is completed. */
interface Prepared {
  s: ScheduleRecord;
  plan: DuePlan;
  running: ActiveRun[];
}

/** A schedule's planned firing, before the store has it. */
interface Planned {
  s: ScheduleRecord;
  burst: Burst;
  request: ScheduleFiring;
}

/**
 * Splits planned firings into store batches of at most `maxSchedules`
 * schedules (capped at fireSchedules' MAX_FIRE_SCHEDULES) and MAX_FIRE_TASKS
 * tasks, in order.
 */
export function storeBatches<P extends { request: ScheduleFiring }>(planned: readonly P[], maxSchedules = MAX_FIRE_SCHEDULES): P[][] {
  const limit = Math.min(maxSchedules, MAX_FIRE_SCHEDULES);
  if (!Number.isInteger(limit) || limit < 1) throw new InvalidInputError('maxSchedules', `expected an integer 1-${MAX_FIRE_SCHEDULES}`);
  const out: P[][] = [];
  let cur: P[] = [];
  let tasks = 0;
  for (const p of planned) {
    const n = p.request.fire.length;
    if (cur.length > 0 && (cur.length === limit || tasks + n > MAX_FIRE_TASKS)) {
      out.push(cur);
      cur = [];
      tasks = 0;
    }
    cur.push(p);
    tasks += n;
  }
  if (cur.length > 0) out.push(cur);
  return out;
}
