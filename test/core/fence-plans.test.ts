/** The pure fence, cancel/retry plans, placement and lease arithmetic (no I/O, no clock). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { planCancel, planRetry } from '../../src/core/cancel-plan.js';
import { ConflictError } from '../../src/core/errors.js';
import { checkFence } from '../../src/core/fence.js';
import { newFencingToken, FENCING_TOKEN_PATTERN } from '../../src/core/ids.js';
import { leaseSafetyMs, mayExpireLeases, selfFencePlan } from '../../src/core/lease.js';
import { satisfies } from '../../src/core/placement.js';

describe('checkFence', () => {
  const token = newFencingToken();
  const a = { id: 7, workerId: 'w1', fencingToken: token, state: 'running' as const };
  it('accepts the worker, its token, a running current attempt', () => {
    assert.deepEqual(checkFence(a, 7, { fencingToken: token, workerId: 'w1' }), { ok: true });
  });
  it('names the first reason that fails', () => {
    assert.deepEqual(checkFence(null, 7, { fencingToken: token, workerId: 'w1' }), { ok: false, reason: 'unknown_attempt' });
    assert.deepEqual(checkFence(a, 7, { fencingToken: token, workerId: 'w2' }), { ok: false, reason: 'wrong_worker' });
    assert.deepEqual(checkFence(a, 7, { fencingToken: newFencingToken(), workerId: 'w1' }), { ok: false, reason: 'stale_token' });
    assert.deepEqual(checkFence(a, 7, { fencingToken: '7', workerId: 'w1' }), { ok: false, reason: 'stale_token' });
    assert.deepEqual(checkFence({ ...a, state: 'lost' }, 7, { fencingToken: token, workerId: 'w1' }), { ok: false, reason: 'attempt_ended' });
    assert.deepEqual(checkFence(a, 8, { fencingToken: token, workerId: 'w1' }), { ok: false, reason: 'not_current' });
  });
  it('tokens are 128 random bits, never repeated', () => {
    const seen = new Set(Array.from({ length: 1000 }, () => newFencingToken()));
    assert.equal(seen.size, 1000);
    for (const t of seen) assert.match(t, new RegExp(FENCING_TOKEN_PATTERN));
  });
});

describe('planCancel / planRetry', () => {
  it('cancel stores a stop order for the running attempt', () => {
    const p = planCancel({ id: 't', state: 'running' }, { id: 3 });
    assert.equal(p.event.to, 'cancelled');
    assert.deepEqual(p.stop, { attemptId: 3, reason: 'task cancelled' });
    assert.equal(planCancel({ id: 't', state: 'waiting' }, null).stop, null);
  });
  it('cancel of a terminal task is a conflict', () => {
    for (const state of ['succeeded', 'failed', 'cancelled'] as const) assert.throws(() => planCancel({ id: 't', state }, null), ConflictError);
  });
  it('retry keeps the old attempt stopping and records that it waits for it', () => {
    const p = planRetry({ id: 't', state: 'cancelled', result: null }, { id: 3, stopReason: 'task cancelled' });
    assert.equal(p.event.to, 'ready', 'not eligible until the old attempt has ended');
    assert.deepEqual(p.stop, { attemptId: 3, reason: 'task cancelled' });
    assert.equal(p.event.detail?.waitsForAttemptId, 3);
    assert.equal(planRetry({ id: 't', state: 'failed', result: null }, null).stop, null);
    assert.equal(planRetry({ id: 't', state: 'failed', result: null }, null).event.to, 'waiting');
    assert.throws(() => planRetry({ id: 't', state: 'running', result: null }, null), ConflictError);
  });
});

describe('satisfies', () => {
  it('needs every required pair with the same value', () => {
    assert.equal(satisfies({}, {}), true);
    assert.equal(satisfies({ gpu: 'yes', zone: 'a' }, { gpu: 'yes' }), true);
    assert.equal(satisfies({ gpu: 'no' }, { gpu: 'yes' }), false);
    assert.equal(satisfies({}, { gpu: 'yes' }), false);
    assert.equal(satisfies({ gpu: 'yes' }, { gpu: 'yes', zone: 'a' }), false);
    assert.equal(satisfies({}, { toString: 'x' }), false, 'prototype keys are not labels');
  });
});

describe('lease arithmetic', () => {
  it('the agent SIGKILLs before the lease can end, whatever the grace', () => {
    for (const [lease, grace] of [[15_000, 5_000], [3_000, 5_000], [1_500, 300], [500, 5_000]] as const) {
      const p = selfFencePlan(1_000, lease, grace);
      assert.ok(p.graceMs <= grace);
      assert.ok(p.stopAt >= 1_000, 'not before the confirmed send');
      assert.ok(p.stopAt + p.graceMs <= 1_000 + lease - leaseSafetyMs(lease), `lease ${lease}, grace ${grace}: kill by ${p.stopAt + p.graceMs}`);
    }
    assert.deepEqual(selfFencePlan(0, 15_000, 5_000), { stopAt: 9_000, graceMs: 5_000 });
  });
  it('a server waits one lease after starting before it ends any', () => {
    assert.equal(mayExpireLeases(100, 100 + 14_999, 15_000), false);
    assert.equal(mayExpireLeases(100, 100 + 15_000, 15_000), true);
  });
});
