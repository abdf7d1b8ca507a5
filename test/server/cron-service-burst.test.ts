/** cron-burst.ts planBurst: a firing's slots under each overlap policy, and the bounded catch-up records (pure). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DuePlan } from '../../src/core/cron/plan-due.js';
import { planBurst } from '../../src/server/cron-burst.js';

const plan = (fire: number[], skipped: Partial<DuePlan['skipped']> = {}): DuePlan => ({
  fire,
  skipped: { count: 0, exact: true, firstMs: null, lastMs: null, ...skipped },
  capped: false,
  nextAfterMs: 99,
  lastSlotMs: fire[fire.length - 1] ?? null,
});

describe('planBurst', () => {
  it('with no run active and one slot, every policy fires it and cancels nothing', () => {
    for (const p of ['allow', 'forbid', 'replace'] as const) assert.deepEqual(planBurst(plan([10]), 'latest', p, false), { fire: [10], skipped: [], cancelPrevious: false, catchup: { count: 0, exact: true, reason: null } });
  });

  it('with a run active: allow fires, forbid skips, replace cancels it and fires', () => {
    assert.deepEqual(planBurst(plan([10]), 'latest', 'allow', true).fire, [10]);
    const f = planBurst(plan([10]), 'latest', 'forbid', true);
    assert.deepEqual([f.fire, f.skipped, f.cancelPrevious], [[], [{ slot: 10, reason: 'overlap_forbid' }], false]);
    const r = planBurst(plan([10]), 'latest', 'replace', true);
    assert.deepEqual([r.fire, r.skipped, r.cancelPrevious], [[10], [], true]);
  });

  it('a burst: allow fires all; forbid the oldest (or none with a run active); replace the newest', () => {
    assert.deepEqual(planBurst(plan([1, 2, 3]), 'all', 'allow', true).fire, [1, 2, 3]);
    assert.deepEqual(planBurst(plan([1, 2, 3]), 'all', 'forbid', false).fire, [1]);
    assert.deepEqual(planBurst(plan([1, 2, 3]), 'all', 'forbid', true).skipped.map((s) => s.slot), [1, 2, 3]);
    const r = planBurst(plan([1, 2, 3]), 'all', 'replace', false);
    assert.deepEqual([r.fire, r.skipped, r.cancelPrevious], [[3], [{ slot: 1, reason: 'overlap_replace' }, { slot: 2, reason: 'overlap_replace' }], false]);
  });

  it('records only the first and last slot catch-up dropped, with the policy reason, and reports the count', () => {
    const b = planBurst(plan([500], { count: 4000, exact: false, firstMs: 1, lastMs: 400 }), 'all', 'allow', false);
    assert.deepEqual(b.skipped, [
      { slot: 1, reason: 'catchup_capped', catchup: { count: 4000, exact: false } },
      { slot: 400, reason: 'catchup_capped', catchup: { count: 4000, exact: false } },
    ]);
    assert.deepEqual(b.catchup, { count: 4000, exact: false, reason: 'catchup_capped' });
    assert.deepEqual(planBurst(plan([], { count: 1, firstMs: 7, lastMs: 7 }), 'none', 'allow', false).skipped, [{ slot: 7, reason: 'catchup_none', catchup: { count: 1, exact: true } }]);
    assert.equal(planBurst(plan([9], { count: 2, firstMs: 7, lastMs: 8 }), 'latest', 'allow', false).skipped[0]!.reason, 'catchup_latest');
  });

  it('skipped rows come out in slot order (catch-up before the burst)', () => {
    const b = planBurst(plan([8, 9], { count: 3, firstMs: 1, lastMs: 5 }), 'all', 'forbid', true);
    assert.deepEqual(b.skipped.map((s) => s.slot), [1, 5, 8, 9]);
  });
});
