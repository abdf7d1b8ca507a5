/**
 * setTimeout for delays past its limit. Node keeps a timer's delay in a signed
 * 32-bit count of milliseconds: anything longer than MAX_TIMEOUT_MS (about
 * 24.8 days) is replaced by 1 ms with a TimeoutOverflowWarning, so a 30-day
 * task timeout would kill the task at once and a wake-up a month away would
 * spin. setLongTimeout runs `fn` once, `ms` after the call, as a chain of
 * timers of at most MAX_TIMEOUT_MS each.
 *
 * The chain counts the remaining delay down by each link's length rather than
 * reading a clock, so it drifts as setTimeout does (never early) and needs no
 * clock passed in; the timer functions are, for tests with a fake clock.
 */

/** The longest delay setTimeout honours: 2^31 − 1 ms. */
export const MAX_TIMEOUT_MS = 2 ** 31 - 1;

export interface TimerFns {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export interface LongTimeout {
  /** Stops the chain; `fn` will not run (harmless after it ran). */
  clear(): void;
}

const nodeTimers: TimerFns = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

/** Runs `fn` once after `ms` (NaN or negative: at once, as setTimeout does; Infinity: never). */
export function setLongTimeout(fn: () => void, ms: number, timers: TimerFns = nodeTimers): LongTimeout {
  let handle: unknown = null;
  let cleared = false;
  const arm = (left: number): void => {
    if (cleared || left === Infinity) return;
    const step = Math.min(Math.max(0, left || 0), MAX_TIMEOUT_MS);
    handle = timers.setTimeout(() => {
      handle = null;
      if (cleared) return;
      if (left > MAX_TIMEOUT_MS) arm(left - MAX_TIMEOUT_MS);
      else fn();
    }, step);
  };
  arm(ms);
  return {
    clear() {
      cleared = true;
      if (handle !== null) timers.clearTimeout(handle);
      handle = null;
    },
  };
}
