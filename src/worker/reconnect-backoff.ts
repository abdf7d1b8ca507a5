/**
 * Delay before the next connection try: exponential (base doubling up to max)
 * with jitter in [d/2, d], so many agents that lost one server do not all
 * come back in the same millisecond.
 */
export interface BackoffOptions {
  baseMs: number;
  maxMs: number;
}

export const DEFAULT_BACKOFF: BackoffOptions = { baseMs: 100, maxMs: 5_000 };

/** `failures` = tries that failed since the last healthy connection (0 for the first retry). */
export function reconnectDelay(failures: number, opts: BackoffOptions = DEFAULT_BACKOFF, random: () => number = Math.random): number {
  const d = Math.min(opts.maxMs, opts.baseMs * 2 ** Math.min(failures, 30));
  return Math.round(d / 2 + (random() * d) / 2);
}
