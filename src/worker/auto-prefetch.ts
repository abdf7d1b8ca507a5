/**
 * The agent's adaptive prefetch (`drover worker --prefetch auto`, the
 * default): whether the agent offers the server its prefetch queue now, as a
 * pure policy fed with what the agent observes (no clock, no I/O: agent.ts
 * passes durations and waits it measured on its monotonic clock).
 *
 * Why: a prefetch queue keeps a worker of short tasks busy through the
 * server's refill (prefetch-queue.ts: PostgreSQL drain 1,543-1,642 tasks/s
 * without, 1,985-2,406/s with `--prefetch 20`), but a task queued behind
 * long-running ones waits for them. Offered only while the tasks are short,
 * and withdrawn as soon as a queued task has waited too long, the queue
 * gives the throughput where it pays and bounds the wait where it does not.
 *
 * Rules:
 * - Off at start (and after each turn-off) until the last `window` attempts
 *   this agent ran all took at most `shortMs` each (start to end on the agent).
 * - On: the server may assign up to `cap` attempts beyond the slots.
 * - Off again at once when an attempt ends after more than `shortMs`, or when
 *   the oldest queued attempt has waited more than `maxQueueWaitMs`. The
 *   agent then tells the server its prefetch is 0, and the server asks back
 *   what it holds queued (protocol `give_back`): those tasks wait in the
 *   store again, visible as `waiting` to every server, and run on the first
 *   free slot anywhere, this worker's included.
 * So a queued task waits at most about `maxQueueWaitMs` plus a round trip
 * before it is back in the shared queue.
 */

export interface AutoPrefetchOptions {
  /** Attempts offered beyond the slots while on. */
  cap: number;
  /** An attempt that runs longer than this (ms) is not short. */
  shortMs: number;
  /** Consecutive short attempts before the queue is offered. */
  window: number;
  /** The longest a queued attempt may wait (ms) before the queue is withdrawn. */
  maxQueueWaitMs: number;
}

/** `--prefetch auto`: twice the slots (the bench's `--prefetch 20` on 10 slots), capped at `maxPrefetch`. */
export function autoPrefetchOptions(slots: number, maxPrefetch: number): AutoPrefetchOptions {
  return { cap: Math.min(2 * slots, maxPrefetch), shortMs: AUTO_SHORT_MS, window: AUTO_WINDOW, maxQueueWaitMs: AUTO_MAX_QUEUE_WAIT_MS };
}

/**
 * 50 ms: a refill (exit reported, end and claim committed, assign pushed)
 * takes about 5 ms at p50 on PostgreSQL here, so the queue saves at most a
 * tenth of a task's time beyond this, while its cost, the wait behind a
 * running task, grows with the task.
 */
export const AUTO_SHORT_MS = 50;
/** 20 attempts in a row: a burst of short tasks, not a lucky few between long ones. */
export const AUTO_WINDOW = 20;
/** Twice AUTO_SHORT_MS: a queue of short tasks moves well within it; one stuck behind a long task is handed back soon. */
export const AUTO_MAX_QUEUE_WAIT_MS = 100;

export class AutoPrefetch {
  private shortRun = 0;
  private on = false;

  constructor(readonly opts: AutoPrefetchOptions) {
    for (const k of ['cap', 'window'] as const) {
      if (!Number.isInteger(opts[k]) || opts[k] < 0) throw new RangeError(`${k} must be a non-negative integer`);
    }
    for (const k of ['shortMs', 'maxQueueWaitMs'] as const) {
      if (!Number.isFinite(opts[k]) || opts[k] < 0) throw new RangeError(`${k} must be a non-negative number of milliseconds`);
    }
  }

  /** What the agent offers now: `cap` or 0. */
  get offered(): number {
    return this.on ? this.opts.cap : 0;
  }

  /** An attempt this agent ran ended after `durationMs`. Returns the new offer when it changed, else null. */
  ended(durationMs: number): number | null {
    if (!(durationMs <= this.opts.shortMs)) return this.turnOff();
    this.shortRun++;
    if (this.on || this.shortRun < this.opts.window || this.opts.cap === 0) return null;
    this.on = true;
    return this.opts.cap;
  }

  /** The oldest queued attempt has waited `waitedMs`. Returns the new offer when it changed, else null. */
  queuedFor(waitedMs: number): number | null {
    return this.on && waitedMs > this.opts.maxQueueWaitMs ? this.turnOff() : null;
  }

  /** When the oldest queued attempt (queued `waitedMs` ago) should be checked again; null: no check needed. */
  nextCheckIn(waitedMs: number): number | null {
    return this.on ? Math.max(0, this.opts.maxQueueWaitMs - waitedMs) + 1 : null;
  }

  private turnOff(): number | null {
    this.shortRun = 0;
    if (!this.on) return null;
    this.on = false;
    return 0;
  }
}
