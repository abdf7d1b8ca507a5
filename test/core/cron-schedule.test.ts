import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidInputError } from '../../src/core/errors.js';
import { nextFireTimes } from '../../src/core/cron/next-fire.js';
import { parseSchedule } from '../../src/core/cron/schedule.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const iso = (ms: number[]) => ms.map((t) => new Date(t).toISOString());

function rejects(fn: () => unknown, field: string, reason?: RegExp): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof InvalidInputError, String(e));
    assert.equal(e.field, field);
    if (reason) assert.match(e.reason, reason);
    return true;
  });
}

describe('parseSchedule', () => {
  it('accepts 5 fields, 6 with seconds, nicknames, ranges, steps, lists and names; default zone UTC', () => {
    const ok: Array<[string, boolean]> = [
      ['*/30 * * * *', false],
      ['0 0 * * *', false],
      ['*/5 * * * * *', true],
      ['0 30 2 * * *', true],
      ['0 9-17/2 * * MON-FRI', false],
      ['0,15,30,45 * 1,15 jan,Jul *', false],
      ['0 0 * * 0,7', false],
      ['0 0 * DEC sun', false],
      ['@hourly', false],
      ['@daily', false],
      ['@weekly', false],
      ['@monthly', false],
      ['@yearly', false],
      ['@annually', false],
      ['@DAILY', false],
    ];
    for (const [expr, hasSeconds] of ok) {
      const s = parseSchedule({ expr });
      assert.deepEqual({ ...s }, { expr, tz: 'UTC', hasSeconds }, expr);
    }
  });

  it('returns a frozen value with the expression normalised to single spaces', () => {
    const s = parseSchedule({ expr: '  0   2 * * *\t', tz: 'Europe/Berlin' });
    assert.deepEqual({ ...s }, { expr: '0 2 * * *', tz: 'Europe/Berlin', hasSeconds: false });
    assert.ok(Object.isFrozen(s));
  });

  it('names the values nicknames and names stand for', () => {
    assert.deepEqual(iso(nextFireTimes(parseSchedule({ expr: '@weekly' }), T0, 1)), ['2026-01-04T00:00:00.000Z']); // a Sunday
    assert.deepEqual(iso(nextFireTimes(parseSchedule({ expr: '@yearly' }), T0, 1)), ['2027-01-01T00:00:00.000Z']);
    assert.deepEqual(iso(nextFireTimes(parseSchedule({ expr: '0 0 1 MAR *' }), T0, 1)), ['2026-03-01T00:00:00.000Z']);
  });

  it('rejects bad expressions under `schedule`, with the expression and the reason', () => {
    rejects(() => parseSchedule({ expr: '61 * * * *' }), 'schedule', /^"61 \* \* \* \*": minute 61 is out of range 0-59$/);
    rejects(() => parseSchedule({ expr: '0 24 * * *' }), 'schedule', /hour 24 is out of range 0-23/);
    rejects(() => parseSchedule({ expr: '0 0 0 * *' }), 'schedule', /day-of-month 0 is out of range 1-31/);
    rejects(() => parseSchedule({ expr: '0 0 * 13 *' }), 'schedule', /month 13 is out of range 1-12/);
    rejects(() => parseSchedule({ expr: '0 0 * * 8' }), 'schedule', /day-of-week 8 is out of range 0-7/);
    rejects(() => parseSchedule({ expr: '60 * * * * *' }), 'schedule', /seconds 60 is out of range 0-59/);
    rejects(() => parseSchedule({ expr: '*/0 * * * *' }), 'schedule', /step 0/);
    rejects(() => parseSchedule({ expr: '*/61 * * * *' }), 'schedule', /step 61/);
    rejects(() => parseSchedule({ expr: '5/5 * * * *' }), 'schedule', /step needs \* or a range/);
    rejects(() => parseSchedule({ expr: '5-1 * * * *' }), 'schedule', /From value is larger than to value/); // croner's reason
    rejects(() => parseSchedule({ expr: '0 0 * MON *' }), 'schedule', /month 'MON' is not a number or a name/);
    rejects(() => parseSchedule({ expr: '0 0 * * JAN' }), 'schedule', /day-of-week 'JAN'/);
    rejects(() => parseSchedule({ expr: '* * *' }), 'schedule', /expected 5 fields .* got 3/);
    rejects(() => parseSchedule({ expr: '' }), 'schedule', /required/);
    rejects(() => parseSchedule({ expr: '0 0 30 2 *' }), 'schedule', /never fires/);
    rejects(() => parseSchedule({ expr: '*/5 * * * * x' }), 'schedule', /day-of-week 'x'/);
    rejects(() => parseSchedule({ expr: 'x * * * * *' }), 'schedule', /^"x \* \* \* \* \*": seconds 'x' is not a number$/);
  });

  it('points a zone written into the expression (TZ=, CRON_TZ=) at the schedule\'s tz', () => {
    for (const [expr, prefix, zone] of [
      ['TZ=Europe/Paris 0 3 * * *', 'TZ', '"Europe/Paris"'],
      ['CRON_TZ=America/New_York 30 2 * * *', 'CRON_TZ', '"America/New_York"'],
      ['cron_tz= * * * * *', 'cron_tz', 'an IANA zone name'],
    ] as const) {
      const want = `"${expr}": the time zone does not go in the expression: give ${zone} as the tz (--tz on the command line) and the expression without ${prefix}=`;
      assert.throws(
        () => parseSchedule({ expr }),
        (e: unknown) => e instanceof InvalidInputError && e.field === 'schedule' && e.reason === want,
      );
    }
    // The same minute and hour with the zone where it belongs is a schedule.
    assert.equal(parseSchedule({ expr: '0 3 * * *', tz: 'Europe/Paris' }).tz, 'Europe/Paris');
  });

  it('rejects what croner accepts but the issue does not promise', () => {
    for (const expr of ['0 0 0 1 1 * 2027', '0 0 L * *', '0 0 15W * *', '0 0 LW * *', '0 0 * * 5#2', '0 0 * * 5L', '? * * * *', '0 0 * * +MON', '@midnight', '@reboot', '@every 5m', 'H * * * *']) {
      rejects(() => parseSchedule({ expr }), 'schedule', undefined);
    }
    rejects(() => parseSchedule({ expr: '0 0 0 1 1 * 2027' }), 'schedule', /got 7/);
    rejects(() => parseSchedule({ expr: '@midnight' }), 'schedule', /unknown nickname/);
  });

  it('rejects an unknown or non-IANA zone under `tz`', () => {
    rejects(() => parseSchedule({ expr: '* * * * *', tz: 'Mars/Olympus_Mons' }), 'tz', /unknown time zone/);
    rejects(() => parseSchedule({ expr: '* * * * *', tz: '+05:00' }), 'tz', /not an IANA time zone name/);
    rejects(() => parseSchedule({ expr: '* * * * *', tz: '' }), 'tz');
    assert.equal(parseSchedule({ expr: '* * * * *', tz: 'Asia/Shanghai' }).tz, 'Asia/Shanghai');
    assert.equal(parseSchedule({ expr: '* * * * *', tz: null }).tz, 'UTC');
  });
});

describe('time zone names', () => {
  it('a zone written in another case is stored in the zone database\'s case; an alias stays the alias', () => {
    assert.equal(parseSchedule({ expr: '0 3 * * *', tz: 'america/new_york' }).tz, 'America/New_York');
    assert.equal(parseSchedule({ expr: '0 3 * * *', tz: 'EUROPE/BERLIN' }).tz, 'Europe/Berlin');
    assert.equal(parseSchedule({ expr: '0 3 * * *', tz: 'utc' }).tz, 'UTC');
    assert.equal(parseSchedule({ expr: '0 3 * * *', tz: 'America/New_York' }).tz, 'America/New_York');
    // Intl would name EST America/Panama: a different-looking zone, so the name is kept.
    assert.equal(parseSchedule({ expr: '0 3 * * *', tz: 'EST' }).tz, 'EST');
  });
});
