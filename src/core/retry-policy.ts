/**
 * Retry arithmetic (seed: "wait 1 s after the first failure, 2 s after the
 * second, 4 s after the third"). Pure: no clock, no I/O.
 *
 * delay(n) = min(maxDelayMs, baseDelayMs * factor^(n-1)) for the n-th retry (n ≥ 1).
 */
export interface RetryPolicy {
  /** Retries after the first attempt; 0 means run once. */
  maxRetries: number;
  baseDelayMs: number;
  factor: number;
  maxDelayMs: number;
}

export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({
  maxRetries: 3,
  baseDelayMs: 1000,
  factor: 2,
  maxDelayMs: 60 * 60 * 1000,
});

/** Bounds the API enforces; chosen so that arithmetic stays finite and exact. */
export const RETRY_LIMITS = {
  maxRetries: 100,
  maxDelayMs: 7 * 24 * 60 * 60 * 1000,
  maxFactor: 10,
} as const;

export function retryDelayMs(policy: RetryPolicy, retryNumber: number): number {
  if (!Number.isInteger(retryNumber) || retryNumber < 1) throw new RangeError(`retryNumber must be >= 1, got ${retryNumber}`);
  const raw = policy.baseDelayMs * Math.pow(policy.factor, retryNumber - 1);
  return Math.round(Math.min(policy.maxDelayMs, raw));
}

export type FailureDecision = { kind: 'retry'; retryNumber: number; delayMs: number } | { kind: 'fail' };

/** What to do after a failed attempt, given how many retries were already used. */
export function decideAfterFailure(policy: RetryPolicy, retriesUsed: number): FailureDecision {
  if (retriesUsed >= policy.maxRetries) return { kind: 'fail' };
  const retryNumber = retriesUsed + 1;
  return { kind: 'retry', retryNumber, delayMs: retryDelayMs(policy, retryNumber) };
}

/** Lost attempts (worker died) are requeued without using a retry, up to this cap. */
export const DEFAULT_MAX_LOST = 5;
