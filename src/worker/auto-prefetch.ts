/**
 * The agent's adaptive prefetch (`drover worker --prefetch auto`, the
 * default): whether the agent offers the server its prefetch queue now, as a
 * pure policy fed with what the agent observes (no clock, no I/O: agent.ts
 * passes durations and stalls it measured on its monotonic clock).
 *
 * Why: a prefetch queue keeps a worker of short tasks busy through the
 * server's refill (prefetch-queue.ts: PostgreSQL drain 1,543-1,642 tasks/s
 * without, 1,985-2,406/s with `--prefetch 20`), but a task queued behind
 * long-running ones waits for them. Offered only while the tasks are short,
 * and withdrawn as soon as the queue stops moving, the queue gives the
 * throughput where it pays and bounds the wait where it does not.
 *
 * Rules:
 * - Off at start (and after each turn-off) until the last `window` attempts
 *   this agent ran each took at most `shortMs` (spawn to exit on the agent).
 * - On: the server may assign up to `cap` attempts beyond the slots.
 * - Off again when the queue has not moved for `maxStallMs` (something is
 *   queued, and no queued attempt started since it was queued or since the
 *   last one started: every slot is held by an attempt that outlasts that),
 *   or when an attempt ran longer than `longMs` (the tasks are not short any
 *   more). The agent then tells the server its prefetch is 0, and the server
 *   asks back what it holds queued (protocol `give_back`): those tasks wait
 *   in the store again, visible as `waiting` to every server, and run on the
 *   first free slot anywhere, this worker's included.
 * So a queue stuck behind long tasks is back in the shared queue within about
 * `maxStallMs` plus a round trip.
 *
 * Why a stall rather than a queued task's age: while every worker is busy
 * with short tasks (the server fills a prefetch only then) a queued task
 * waits its turn wherever it is; its age grows with the machine's load, not
 * with the harm. Seen in `npm run bench` (1,000-step DAG fan-out of
 * /bin/true, one 8-slot agent, PostgreSQL) with the first rules (withdrawn
 * once a queued attempt was 100 ms old or an attempt ran over 50 ms): steps
 * given back mid-run, each then run as attempt 2. A full stall of the queue
 * is what a long task causes, and it is what is checked; a single attempt
 * over 50 ms on a loaded machine only restarts the count.
 */

import { PREFETCH_RERAISE_RUNS } from '../core/protocol.js';

export interface AutoPrefetchOptions {
  /** Attempts offered beyond the slots while on. */
  cap: number;
  /** An attempt that ran at most this long (ms) counts toward the window. */
  shortMs: number;
  /** An attempt that ran longer than this (ms) withdraws the offer. */
  longMs: number;
  /** Consecutive short attempts before the queue is offered. */
  window: number;
  /** The longest the queue may go without a start (ms) before the offer is withdrawn. */
  maxStallMs: number;
}

/** `--prefetch auto`: twice the slots (the bench's `--prefetch 20` on 10 slots), capped at `maxPrefetch`. */
export function autoPrefetchOptions(slots: number, maxPrefetch: number): AutoPrefetchOptions {
  return { cap: Math.min(2 * slots, maxPrefetch), shortMs: AUTO_SHORT_MS, longMs: AUTO_LONG_MS, window: AUTO_WINDOW, maxStallMs: AUTO_MAX_STALL_MS };
}

/**
 * 50 ms: a refill (exit reported, end and claim committed, assign pushed)
 * takes about 5 ms at p50 on PostgreSQL here, so the queue saves at most a
 * tenth of a task's time beyond this.
 */
export const AUTO_SHORT_MS = 50;
/** 1 s: twenty times the short bound; a task that long is not one a queue helps, whatever the load. */
export const AUTO_LONG_MS = 1_000;
/**
 * 20 attempts in a row: a burst of short tasks, not a lucky few between long
 * ones. The server applies a raise only after as many runs since a lowering
 * (PREFETCH_RERAISE_RUNS), so this must not be smaller.
 */
export const AUTO_WINDOW = PREFETCH_RERAISE_RUNS;
/** 200 ms without a start from the queue: far more than short tasks leave between two starts, even on a loaded machine. */
export const AUTO_MAX_STALL_MS = 200;

export class AutoPrefetch {
  private shortRun = 0;
  private on = false;

  constructor(readonly opts: AutoPrefetchOptions) {
    for (const k of ['cap', 'window'] as const) {
      if (!Number.isInteger(opts[k]) || opts[k] < 0) throw new RangeError(`${k} must be a non-negative integer`);
    }
    for (const k of ['shortMs', 'longMs', 'maxStallMs'] as const) {
      if (!Number.isFinite(opts[k]) || opts[k] < 0) throw new RangeError(`${k} must be a non-negative number of milliseconds`);
    }
  }

  /** What the agent offers now: `cap` or 0. */
  get offered(): number {
    return this.on ? this.opts.cap : 0;
  }

  /** An attempt this agent ran ended after `durationMs`. Returns the new offer when it changed, else null. */
  ended(durationMs: number): number | null {
    if (!(durationMs <= this.opts.longMs)) return this.turnOff();
    if (durationMs > this.opts.shortMs) {
      this.shortRun = 0;
      return null;
    }
    this.shortRun++;
    if (this.on || this.shortRun < this.opts.window || this.opts.cap === 0) return null;
    this.on = true;
    return this.opts.cap;
  }

  /** The queue holds something and has not moved for `stalledMs`. Returns the new offer when it changed, else null. */
  stalledFor(stalledMs: number): number | null {
    return this.on && stalledMs > this.opts.maxStallMs ? this.turnOff() : null;
  }

  /** When to check a queue that has not moved for `stalledMs` again (ms); null: no check needed (nothing offered). */
  nextCheckIn(stalledMs: number): number | null {
    return this.on ? Math.max(0, this.opts.maxStallMs - stalledMs) + 1 : null;
  }

  private turnOff(): number | null {
    this.shortRun = 0;
    if (!this.on) return null;
    this.on = false;
    return 0;
  }
}
