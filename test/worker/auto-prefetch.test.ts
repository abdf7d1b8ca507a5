/** The adaptive prefetch's policy (worker/auto-prefetch.ts): pure, fed with durations and stalls. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AUTO_LONG_MS, AUTO_MAX_STALL_MS, AUTO_SHORT_MS, AUTO_WINDOW, AutoPrefetch, autoPrefetchOptions } from '../../src/worker/auto-prefetch.js';

const opts = { cap: 4, shortMs: 50, longMs: 1_000, window: 3, maxStallMs: 200 };

describe('AutoPrefetch', () => {
  it('is off at start and offers the cap after `window` short attempts in a row', () => {
    const p = new AutoPrefetch(opts);
    assert.equal(p.offered, 0);
    assert.equal(p.ended(0), null);
    assert.equal(p.ended(50), null);
    assert.equal(p.ended(12), 4);
    assert.equal(p.offered, 4);
    assert.equal(p.ended(1), null, 'no change while on: nothing to send');
  });

  it('an attempt over shortMs restarts the count, and keeps an offer already made', () => {
    const p = new AutoPrefetch(opts);
    p.ended(1);
    p.ended(1);
    assert.equal(p.ended(51), null);
    p.ended(1);
    p.ended(1);
    assert.equal(p.offered, 0, 'two short since the slower one: not yet');
    assert.equal(p.ended(1), 4);
    assert.equal(p.ended(400), null, 'on a loaded machine a short task can take longer once: the offer stays');
    assert.equal(p.offered, 4);
  });

  it('an attempt over longMs withdraws the offer at once; the window counts again from there', () => {
    const p = new AutoPrefetch(opts);
    for (let i = 0; i < 3; i++) p.ended(0);
    assert.equal(p.ended(1_001), 0);
    assert.equal(p.offered, 0);
    assert.equal(p.ended(5_000), null, 'off already: nothing to send');
    for (let i = 0; i < 2; i++) assert.equal(p.ended(1), null);
    assert.equal(p.ended(1), 4, 'a full window again after the turn-off');
  });

  it('withdraws the offer when the queue has not moved for over maxStallMs', () => {
    const p = new AutoPrefetch(opts);
    assert.equal(p.nextCheckIn(0), null, 'off: no check');
    for (let i = 0; i < 3; i++) p.ended(0);
    assert.equal(p.stalledFor(200), null, 'at the bound: kept');
    assert.equal(p.nextCheckIn(30), 171, 'checked again just past the bound');
    assert.equal(p.nextCheckIn(500), 1, 'overdue: at once');
    assert.equal(p.stalledFor(201), 0);
    assert.equal(p.offered, 0);
    assert.equal(p.stalledFor(1_000), null, 'off: nothing to send');
    assert.equal(p.nextCheckIn(0), null);
    for (let i = 0; i < 2; i++) p.ended(0);
    assert.equal(p.ended(0), 4, 'the window counts again from the turn-off');
  });

  it('a duration that is not a number is long', () => {
    const p = new AutoPrefetch(opts);
    for (let i = 0; i < 3; i++) p.ended(0);
    assert.equal(p.ended(NaN), 0);
  });

  it('a cap of 0 never offers anything', () => {
    const p = new AutoPrefetch({ ...opts, cap: 0 });
    for (let i = 0; i < 10; i++) assert.equal(p.ended(0), null);
    assert.equal(p.offered, 0);
  });

  it('refuses options that are not numbers it can use', () => {
    assert.throws(() => new AutoPrefetch({ ...opts, cap: -1 }), /cap must be a non-negative integer/);
    assert.throws(() => new AutoPrefetch({ ...opts, window: 1.5 }), /window must be a non-negative integer/);
    assert.throws(() => new AutoPrefetch({ ...opts, shortMs: NaN }), /shortMs must be/);
    assert.throws(() => new AutoPrefetch({ ...opts, longMs: Infinity }), /longMs must be/);
    assert.throws(() => new AutoPrefetch({ ...opts, maxStallMs: -1 }), /maxStallMs must be/);
  });

  it('`--prefetch auto` offers twice the slots, within the protocol cap', () => {
    assert.deepEqual(autoPrefetchOptions(10, 1024), { cap: 20, shortMs: AUTO_SHORT_MS, longMs: AUTO_LONG_MS, window: AUTO_WINDOW, maxStallMs: AUTO_MAX_STALL_MS });
    assert.equal(autoPrefetchOptions(1000, 1024).cap, 1024);
  });
});
