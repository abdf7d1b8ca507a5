/**
 * Gives freed C heap back to the kernel in the long-running commands (server,
 * worker, dev): after a full GC, at most once per MIN_INTERVAL_MS, the
 * drover_memory addon (native/memory.c) calls glibc's malloc_trim(0).
 *
 * Why after a full GC: the C heap a Node process frees in bulk is mostly what
 * a GC finalises (Buffer and ArrayBuffer backing stores, SQLite statements'
 * scratch), and V8's memory reducer runs a full GC by itself some seconds
 * after a busy process turns idle, so a trim that follows it catches the
 * memory a finished load left behind. Under load full GCs are seconds apart;
 * the interval keeps trims rarer than that, so memory trimmed away is not
 * paged back in at once.
 *
 * Measured (a server after 100,000 noop tasks drained by a 10-slot noop
 * agent, the bench's memory method; kB figures of /proc/<pid>/status): VmRSS
 * at the end of the drain 103.8-105.8 MB with the trims, 107.7-110.3 MB
 * without; 30 s later, after V8's idle GC, 89.6-90.1 MB with, 97.5 MB
 * without. A trim takes 1.1-3.7 ms on the main thread and releases 0.1-1.7 MB
 * when it follows a GC under load; under load full GCs come every 2-3 s, so
 * the interval makes it one trim per 10 s.
 *
 * Without the addon (not Linux, not built, or not glibc) nothing is done: the
 * process behaves as before, with the larger RSS.
 */
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { loadAddon } from '../worker/package-root.js';

/** The least time between two trims. */
export const MIN_INTERVAL_MS = 10_000;
/** From a full GC to the trim after it, at the least. */
export const SETTLE_MS = 100;
/** From start to the first trim. */
export const STARTUP_TRIM_MS = 5_000;

/** The addon's contract (native/memory.c). */
export interface MemoryBinding {
  trim(): boolean;
  supported: boolean;
}

/** The addon, or null where it is not built, does not load, or cannot release anything (not glibc). */
export function loadMemoryBinding(): MemoryBinding | null {
  const r = loadAddon<MemoryBinding>('drover_memory', 'the heap trimmer');
  return 'binding' in r && r.binding.supported ? r.binding : null;
}

/**
 * How long after a full GC seen at `gcAt` to trim, given the last trim's time
 * (null: none yet): SETTLE_MS (the GC's sweeping of backing stores may still be
 * finishing), or later so that trims stay MIN_INTERVAL_MS apart. A GC is never
 * left without a trim after it: one that comes soon after a trim (the idle GC
 * that follows a load's last one) gets a deferred trim, not none.
 */
export function trimDelay(gcAt: number, lastTrimAt: number | null): number {
  return lastTrimAt === null ? SETTLE_MS : Math.max(SETTLE_MS, lastTrimAt + MIN_INTERVAL_MS - gcAt);
}

export interface MemoryTrimOptions {
  /** The addon (default: loadMemoryBinding()); null: trimming is off. */
  binding?: MemoryBinding | null;
  /** The clock, in ms (default performance.now). */
  now?: () => number;
  /** From start to the first trim (default STARTUP_TRIM_MS). */
  startupMs?: number;
}

/**
 * Starts trimming: once `startupMs` after the call (start-up frees much of
 * what loading the modules allocated), then after full GCs. Returns the
 * handle that stops it, or null when there is no addon (nothing to do).
 */
export function startMemoryTrim(opts: MemoryTrimOptions = {}): { stop(): void } | null {
  const binding = opts.binding === undefined ? loadMemoryBinding() : opts.binding;
  if (!binding) return null;
  const now = opts.now ?? (() => performance.now());
  let lastTrimAt: number | null = null;
  let timer: NodeJS.Timeout | null = null;
  const schedule = (delayMs: number) => {
    if (timer) return; // the pending trim covers this GC too
    timer = setTimeout(() => {
      timer = null;
      lastTrimAt = now();
      binding.trim();
    }, delayMs).unref();
  };
  schedule(opts.startupMs ?? STARTUP_TRIM_MS);
  const obs = new PerformanceObserver((list) => {
    if (list.getEntries().some((e) => (e as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR)) {
      schedule(trimDelay(now(), lastTrimAt));
    }
  });
  obs.observe({ entryTypes: ['gc'] });
  return {
    stop() {
      obs.disconnect();
      if (timer) clearTimeout(timer);
      timer = null;
    },
  };
}
