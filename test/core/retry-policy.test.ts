import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decideAfterFailure, DEFAULT_MAX_LOST, DEFAULT_RETRY_POLICY, RETRY_LIMITS, retryDelayMs, type RetryPolicy } from '../../src/core/retry-policy.js';

const policy = (o: Partial<RetryPolicy>): RetryPolicy => ({ ...DEFAULT_RETRY_POLICY, ...o });

describe('retry policy', () => {
  it('defaults to 3 retries after 1 s, 2 s, 4 s (seed)', () => {
    assert.deepEqual({ ...DEFAULT_RETRY_POLICY }, { maxRetries: 3, baseDelayMs: 1000, factor: 2, maxDelayMs: 3_600_000 });
    assert.deepEqual(
      [1, 2, 3].map((n) => retryDelayMs(DEFAULT_RETRY_POLICY, n)),
      [1000, 2000, 4000],
    );
    assert.ok(Object.isFrozen(DEFAULT_RETRY_POLICY));
    assert.equal(DEFAULT_MAX_LOST, 5);
  });

  it('multiplies by the factor', () => {
    const p = policy({ baseDelayMs: 500, factor: 3 });
    assert.deepEqual(
      [1, 2, 3, 4].map((n) => retryDelayMs(p, n)),
      [500, 1500, 4500, 13_500],
    );
    const constant = policy({ baseDelayMs: 700, factor: 1 });
    assert.deepEqual(
      [1, 2, 10].map((n) => retryDelayMs(constant, n)),
      [700, 700, 700],
    );
  });

  it('rounds fractional delays to whole milliseconds', () => {
    const p = policy({ baseDelayMs: 1000, factor: 1.5 });
    assert.deepEqual(
      [1, 2, 3, 4, 5].map((n) => retryDelayMs(p, n)),
      [1000, 1500, 2250, 3375, 5063],
    );
  });

  it('caps at maxDelayMs', () => {
    const p = policy({ baseDelayMs: 1000, factor: 2, maxDelayMs: 5000 });
    assert.deepEqual(
      [1, 2, 3, 4, 5, 50].map((n) => retryDelayMs(p, n)),
      [1000, 2000, 4000, 5000, 5000, 5000],
    );
    assert.equal(retryDelayMs(policy({ baseDelayMs: 9000, maxDelayMs: 5000 }), 1), 5000);
  });

  it('stays finite and capped at the API limits', () => {
    const p: RetryPolicy = { maxRetries: RETRY_LIMITS.maxRetries, baseDelayMs: RETRY_LIMITS.maxDelayMs, factor: RETRY_LIMITS.maxFactor, maxDelayMs: RETRY_LIMITS.maxDelayMs };
    for (let n = 1; n <= RETRY_LIMITS.maxRetries; n++) assert.equal(retryDelayMs(p, n), RETRY_LIMITS.maxDelayMs);
  });

  it('rejects retry numbers below 1 or not integers', () => {
    for (const n of [0, -1, 1.5, Number.NaN]) assert.throws(() => retryDelayMs(DEFAULT_RETRY_POLICY, n), RangeError, String(n));
  });

  it('decideAfterFailure retries until the budget is used, then fails', () => {
    assert.deepEqual(decideAfterFailure(DEFAULT_RETRY_POLICY, 0), { kind: 'retry', retryNumber: 1, delayMs: 1000 });
    assert.deepEqual(decideAfterFailure(DEFAULT_RETRY_POLICY, 1), { kind: 'retry', retryNumber: 2, delayMs: 2000 });
    assert.deepEqual(decideAfterFailure(DEFAULT_RETRY_POLICY, 2), { kind: 'retry', retryNumber: 3, delayMs: 4000 });
    assert.deepEqual(decideAfterFailure(DEFAULT_RETRY_POLICY, 3), { kind: 'fail' });
    assert.deepEqual(decideAfterFailure(DEFAULT_RETRY_POLICY, 4), { kind: 'fail' });
  });

  it('maxRetries 0 runs once', () => {
    assert.deepEqual(decideAfterFailure(policy({ maxRetries: 0 }), 0), { kind: 'fail' });
  });

  it('decideAfterFailure uses the policy delay', () => {
    assert.deepEqual(decideAfterFailure(policy({ maxRetries: 10, baseDelayMs: 100, factor: 10, maxDelayMs: 50_000 }), 3), { kind: 'retry', retryNumber: 4, delayMs: 50_000 });
  });
});
