import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidInputError } from '../../src/core/errors.js';
import { nextFireTimes } from '../../src/core/cron/next-fire.js';
import {
  DEFAULT_MAX_CATCHUP,
  DUE_GRACE_MS,
  lateness,
  MAX_CATCHUP_CAP,
  parseCatchupPolicy,
  planDue,
  SKIP_COUNT_LIMIT,
  validateMaxCatchup,
  type CatchupPolicy,
} from '../../src/core/cron/plan-due.js';
import { parseSchedule } from '../../src/core/cron/schedule.js';

const at = (s: string) => Date.parse(s);
const MIN = 60_000;
const every5 = parseSchedule({ expr: '*/5 * * * *' });
const perSecond = parseSchedule({ expr: '* * * * * *' });
const T = at('2026-06-01T12:00:00Z'); // a slot of every5
const created = T - 60 * MIN;

function plan(catchup: CatchupPolicy, lastSlotMs: number | null, nowMs: number, maxCatchup?: number, schedule = every5) {
  return planDue({ schedule, lastSlotMs, createdAtMs: created, nowMs, catchup, maxCatchup });
}

describe('planDue: on time', () => {
  it('fires the slot that just came due under every policy, and a late-by-300-ms slot is not a miss', () => {
    for (const catchup of ['none', 'latest', 'all'] as const) {
      for (const late of [0, 300, DUE_GRACE_MS]) {
        const p = plan(catchup, T - 5 * MIN, T + late);
        assert.deepEqual(p.fire, [T], `${catchup} +${late}`);
        assert.deepEqual(p.skipped, { count: 0, exact: true, firstMs: null, lastMs: null });
        assert.equal(p.capped, false);
        assert.equal(p.nextAfterMs, T + 5 * MIN);
        assert.equal(p.lastSlotMs, T);
      }
    }
  });

  it('nothing due: fires nothing, the next time is the next slot', () => {
    const p = plan('all', T, T + 2 * MIN);
    assert.deepEqual(p.fire, []);
    assert.equal(p.nextAfterMs, T + 5 * MIN);
    assert.equal(p.lastSlotMs, T);
    assert.deepEqual(plan('all', T, T).fire, []); // the slot itself is not due again
  });

  it('never fired: slots count from creation, exclusive', () => {
    assert.deepEqual(plan('all', null, T).fire, nextFireTimes(every5, created, 12).slice(1)); // 11 missed (cap 10) + T on time
    const fresh = planDue({ schedule: every5, lastSlotMs: null, createdAtMs: T, nowMs: T + 1000, catchup: 'all' });
    assert.deepEqual(fresh.fire, []);
  });

  it('a seconds schedule on a busy server fires each slot within the grace, even under none', () => {
    const p = plan('none', T - 1000, T + 2500, undefined, perSecond);
    assert.deepEqual(p.fire, [T, T + 1000, T + 2000]);
    assert.equal(p.skipped.count, 0);
  });
});

describe('planDue: missed slots (server down for 30 minutes)', () => {
  const last = T - 30 * MIN; // slots T-25m ... T-5m missed (5), T on time when now = T + 1 s
  const now = T + 1000;
  it('none skips the missed ones and fires the on-time one', () => {
    const p = plan('none', last, now);
    assert.deepEqual(p.fire, [T]);
    assert.deepEqual(p.skipped, { count: 5, exact: true, firstMs: T - 25 * MIN, lastMs: T - 5 * MIN });
    assert.equal(p.capped, false);
  });

  it('latest fires the on-time one only (it is the latest); with none on time, the most recent missed once', () => {
    assert.deepEqual(plan('latest', last, now).fire, [T]);
    const p = plan('latest', last, T - 2 * MIN);
    assert.deepEqual(p.fire, [T - 5 * MIN]);
    assert.deepEqual(p.skipped, { count: 4, exact: true, firstMs: T - 25 * MIN, lastMs: T - 10 * MIN });
    assert.equal(p.capped, false);
    assert.equal(p.lastSlotMs, T - 5 * MIN);
    assert.equal(p.nextAfterMs, T);
  });

  it('all fires each missed slot in order, then the on-time one', () => {
    const p = plan('all', last, now);
    assert.deepEqual(p.fire, [T - 25 * MIN, T - 20 * MIN, T - 15 * MIN, T - 10 * MIN, T - 5 * MIN, T]);
    assert.equal(p.capped, false);
    assert.equal(p.skipped.count, 0);
  });

  it('all keeps the most recent maxCatchup missed slots and reports the dropped ones', () => {
    const p = plan('all', last, now, 2);
    assert.deepEqual(p.fire, [T - 10 * MIN, T - 5 * MIN, T]);
    assert.equal(p.capped, true);
    assert.deepEqual(p.skipped, { count: 3, exact: true, firstMs: T - 25 * MIN, lastMs: T - 15 * MIN });
    assert.equal(p.lastSlotMs, T);
  });

  it('default maxCatchup is DEFAULT_MAX_CATCHUP', () => {
    const p = plan('all', T - 24 * 60 * MIN, T - 1);
    assert.equal(p.fire.length, DEFAULT_MAX_CATCHUP);
    assert.equal(p.fire.at(-1), T - 5 * MIN);
    assert.equal(p.skipped.count, 24 * 12 - 1 - DEFAULT_MAX_CATCHUP);
  });
});

describe('planDue: bounded work', () => {
  it('a per-second schedule down for 3 years: fire ≤ cap, skipped counted up to a limit, quickly', () => {
    const now = at('2026-06-01T12:00:00.400Z');
    const last = at('2023-06-01T00:00:00Z');
    const started = performance.now();
    const all = planDue({ schedule: perSecond, lastSlotMs: last, createdAtMs: last, nowMs: now, catchup: 'all', maxCatchup: MAX_CATCHUP_CAP });
    const latest = planDue({ schedule: perSecond, lastSlotMs: last, createdAtMs: last, nowMs: now, catchup: 'latest' });
    const none = planDue({ schedule: perSecond, lastSlotMs: last, createdAtMs: last, nowMs: now, catchup: 'none' });
    const ms = performance.now() - started;
    assert.ok(ms < 3000, `took ${ms} ms`);
    const onTime = DUE_GRACE_MS / 1000; // 11:59:56 ... 12:00:00 (now - 5 s is 11:59:55.400)
    assert.equal(all.fire.length, MAX_CATCHUP_CAP + onTime);
    assert.equal(all.capped, true);
    assert.equal(all.skipped.exact, false);
    assert.ok(all.skipped.count > SKIP_COUNT_LIMIT - 1 && all.skipped.count <= SKIP_COUNT_LIMIT + 1);
    assert.equal(all.skipped.firstMs, last + 1000);
    assert.equal(all.skipped.lastMs, all.fire[0]! - 1000);
    all.fire.forEach((t, i) => i > 0 && assert.equal(t - all.fire[i - 1]!, 1000));
    assert.equal(all.fire.at(-1), at('2026-06-01T12:00:00Z'));
    assert.equal(latest.fire.length, onTime);
    assert.equal(none.fire.length, onTime);
    assert.equal(none.skipped.lastMs, at('2026-06-01T11:59:55Z'));
    assert.equal(all.nextAfterMs, at('2026-06-01T12:00:01Z'));
  });
});

describe('planDue: clock backwards', () => {
  it('now before the last slot fires nothing, re-runs nothing, and the next time stays after the last slot', () => {
    for (const catchup of ['none', 'latest', 'all'] as const) {
      const p = plan(catchup, T, T - 30 * MIN);
      assert.deepEqual(p.fire, []);
      assert.equal(p.skipped.count, 0);
      assert.equal(p.capped, false);
      assert.equal(p.nextAfterMs, T + 5 * MIN);
      assert.equal(p.lastSlotMs, T);
    }
  });
});

describe('planDue across DST', () => {
  it('a daily 02:30 in New York, down over the spring change: the 03:00 slot is caught up once', () => {
    const s = parseSchedule({ expr: '30 2 * * *', tz: 'America/New_York' });
    const p = planDue({ schedule: s, lastSlotMs: at('2026-03-07T07:30:00Z'), createdAtMs: 0, nowMs: at('2026-03-08T12:00:00Z'), catchup: 'all' });
    assert.deepEqual(p.fire, [at('2026-03-08T07:00:00Z')]);
  });
});

describe('catch-up validation', () => {
  it('parses the policy names and names the field', () => {
    for (const c of ['none', 'latest', 'all']) assert.equal(parseCatchupPolicy(c), c);
    for (const bad of ['ALL', '', 'some', undefined, 1]) {
      assert.throws(() => parseCatchupPolicy(bad), (e: unknown) => e instanceof InvalidInputError && e.field === 'catchup' && e.reason === 'expected one of none, latest, all');
    }
  });

  it('validates maxCatchup: an integer 1..MAX_CATCHUP_CAP', () => {
    assert.equal(validateMaxCatchup(1), 1);
    assert.equal(validateMaxCatchup(MAX_CATCHUP_CAP), MAX_CATCHUP_CAP);
    for (const bad of [0, -1, 1.5, MAX_CATCHUP_CAP + 1, Number.NaN, '10']) {
      assert.throws(() => validateMaxCatchup(bad), (e: unknown) => e instanceof InvalidInputError && e.field === 'maxCatchup');
      assert.throws(() => plan('all', T, T, bad as number), { field: 'maxCatchup' });
    }
  });
});

describe('lateness', () => {
  it('is task creation minus slot', () => {
    assert.equal(lateness(T, T + 120), 120);
    assert.equal(lateness(T, T - 5), -5);
  });
});
