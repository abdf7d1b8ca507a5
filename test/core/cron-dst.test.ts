/**
 * Next fire times against the DST rule of src/core/cron/next-fire.ts, in
 * America/New_York (2026: spring 03-08, fall 11-01) and Europe/Berlin
 * (2026: spring 03-29, fall 10-25), plus leap days and the seconds field.
 * Instants are checked exactly, in UTC.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { firstFireAfter, latestFireBefore, nextFireTimes } from '../../src/core/cron/next-fire.js';
import { parseSchedule } from '../../src/core/cron/schedule.js';

const at = (s: string) => Date.parse(s);
const iso = (ms: number[]) => ms.map((t) => new Date(t).toISOString());
const HOUR = 3_600_000;

interface Zone {
  tz: string;
  spring: { dayStart: string; dayEnd: string; gapStart: string; skipped: string };
  fall: { dayStart: string; dayEnd: string; firstPass: string; secondPass: string; repeated: string };
}

// Local day bounds as instants; `skipped`/`repeated` are the local hours (HH) that do not exist / occur twice.
const ZONES: Zone[] = [
  {
    tz: 'America/New_York',
    spring: { dayStart: '2026-03-08T05:00:00Z', dayEnd: '2026-03-09T04:00:00Z', gapStart: '2026-03-08T07:00:00Z', skipped: '02' },
    fall: { dayStart: '2026-11-01T04:00:00Z', dayEnd: '2026-11-02T05:00:00Z', firstPass: '2026-11-01T05:00:00Z', secondPass: '2026-11-01T06:00:00Z', repeated: '01' },
  },
  {
    tz: 'Europe/Berlin',
    spring: { dayStart: '2026-03-28T23:00:00Z', dayEnd: '2026-03-29T22:00:00Z', gapStart: '2026-03-29T01:00:00Z', skipped: '02' },
    fall: { dayStart: '2026-10-24T22:00:00Z', dayEnd: '2026-10-25T23:00:00Z', firstPass: '2026-10-25T00:00:00Z', secondPass: '2026-10-25T01:00:00Z', repeated: '02' },
  },
];

/** All fire times in (from, to], chained. */
function between(expr: string, tz: string, from: number, to: number): number[] {
  const s = parseSchedule({ expr, tz });
  const out: number[] = [];
  for (let t: number | null = from; (t = firstFireAfter(s, t)) !== null && t <= to; ) out.push(t);
  return out;
}

for (const z of ZONES) {
  describe(`DST in ${z.tz}`, () => {
    const gap = at(z.spring.gapStart); // the instant the clock jumps (local 02:00 -> 03:00)

    it('a time inside the skipped hour fires once, at the first instant after the jump (03:00 local)', () => {
      const s = parseSchedule({ expr: `30 ${Number(z.spring.skipped)} * * *`, tz: z.tz });
      const fires = nextFireTimes(s, at(z.spring.dayStart) - 1, 3);
      assert.equal(fires[0], gap);
      assert.equal(fires[1], gap + 24 * HOUR - 30 * 60_000); // next day 02:30 local, same offset as 03:00 today
      assert.equal(fires[2]! - fires[1]!, 24 * HOUR);
      // Asked from just before the jump, and from the jump itself.
      assert.equal(firstFireAfter(s, gap - 1), gap);
      assert.equal(firstFireAfter(s, gap), fires[1]);
    });

    it('a list or range naming skipped times fires once after the jump, not zero or twice', () => {
      for (const expr of [`30 ${Number(z.spring.skipped)},14 * * *`, `0,30 ${Number(z.spring.skipped)} * * *`, `0 1-3 * * *`, `0 30 ${Number(z.spring.skipped)} * * *`]) {
        const fires = between(expr, z.tz, at(z.spring.dayStart) - 1, at(z.spring.dayEnd) - 1);
        assert.equal(fires.filter((t) => t === gap).length, 1, expr);
        assert.equal(new Set(fires).size, fires.length, expr);
      }
      assert.equal(between('0 1-3 * * *', z.tz, at(z.spring.dayStart) - 1, at(z.spring.dayEnd) - 1).length, 2); // 01:00, then 02:00 and 03:00 together at 03:00
    });

    it('a time inside the repeated hour fires once, at its first occurrence', () => {
      const h = Number(z.fall.repeated);
      const first = at(z.fall.firstPass) + 30 * 60_000;
      const fires = between(`30 ${h} * * *`, z.tz, at(z.fall.dayStart) - 1, at(z.fall.dayEnd) - 1);
      assert.deepEqual(iso(fires), iso([first]));
      // Asked from inside the first pass after it, or from the second pass: next day, not the second occurrence.
      const s = parseSchedule({ expr: `30 ${h} * * *`, tz: z.tz });
      const nextDay = first + 25 * HOUR;
      assert.equal(firstFireAfter(s, first), nextDay);
      assert.equal(firstFireAfter(s, first + 10 * 60_000), nextDay);
      assert.equal(firstFireAfter(s, at(z.fall.secondPass) + 10 * 60_000), nextDay);
      assert.equal(between(`30 ${h},13 * * *`, z.tz, at(z.fall.dayStart) - 1, at(z.fall.dayEnd) - 1).length, 2);
    });

    it('hourly neither skips nor doubles an hour: 23 fires on the spring day, 25 on the fall day, 3600 s apart', () => {
      const spring = between('0 * * * *', z.tz, at(z.spring.dayStart) - 1, at(z.spring.dayEnd) - 1);
      const fall = between('0 * * * *', z.tz, at(z.fall.dayStart) - 1, at(z.fall.dayEnd) - 1);
      assert.equal(spring.length, 23);
      assert.equal(fall.length, 25);
      for (const fires of [spring, fall]) {
        assert.equal(fires[0], fires === spring ? at(z.spring.dayStart) : at(z.fall.dayStart));
        fires.forEach((t, i) => assert.equal(t, fires[0]! + i * HOUR));
      }
      assert.ok(spring.includes(gap));
      assert.ok(fall.includes(at(z.fall.firstPass)) && fall.includes(at(z.fall.secondPass)));
    });

    it('*/15 is elapsed time: every 15 real minutes, in both passes of the repeated hour and across the gap', () => {
      const fall = between('*/15 * * * *', z.tz, at(z.fall.firstPass) - 1, at(z.fall.secondPass) + HOUR - 1);
      assert.equal(fall.length, 8);
      fall.forEach((t, i) => assert.equal(t, at(z.fall.firstPass) + i * 15 * 60_000));
      const spring = between('*/15 * * * *', z.tz, gap - HOUR, gap + HOUR);
      assert.equal(spring.length, 8);
      spring.forEach((t, i) => assert.equal(t, gap - 45 * 60_000 + i * 15 * 60_000));
    });

    it('chained and independent computations agree around both changes (the set of fire times is fixed)', () => {
      for (const expr of ['30 2 * * *', `30 ${Number(z.fall.repeated)} * * *`, '0 * * * *', '*/15 * * * *', '0 1-3 * * *', '*/20 * * * * *']) {
        const s = parseSchedule({ expr, tz: z.tz });
        for (const [a, b] of [
          [at(z.spring.dayStart), at(z.spring.dayEnd)],
          [at(z.fall.dayStart), at(z.fall.dayEnd)],
        ] as const) {
          const chained = between(expr, z.tz, a - 1, b);
          // From every 7-minute-and-a-bit point, the next fire time is the first chained one after it.
          for (let t = a; t < b - 2 * HOUR; t += 7 * 60_000 + 13_000) {
            const expected = chained.find((c) => c > t);
            if (expected === undefined) continue;
            assert.equal(firstFireAfter(s, t), expected, `${expr} from ${new Date(t).toISOString()}`);
            const prev = [...chained].reverse().find((c) => c < t && c > a - 1) ?? null;
            assert.equal(latestFireBefore(s, t, a - 1), prev, `${expr} before ${new Date(t).toISOString()}`);
          }
        }
      }
    });
  });
}

describe('nextFireTimes', () => {
  it('returns count times strictly after afterMs, ascending, from the schedule only', () => {
    const s = parseSchedule({ expr: '*/30 * * * *' });
    assert.deepEqual(iso(nextFireTimes(s, at('2026-05-01T10:00:00Z'), 3)), ['2026-05-01T10:30:00.000Z', '2026-05-01T11:00:00.000Z', '2026-05-01T11:30:00.000Z']);
    assert.deepEqual(iso(nextFireTimes(s, at('2026-05-01T10:17:42.123Z'), 1)), ['2026-05-01T10:30:00.000Z']);
  });

  it('Feb 29 fires only on leap days (2028-02-29 after 2026)', () => {
    const s = parseSchedule({ expr: '0 0 29 2 *' });
    assert.deepEqual(iso(nextFireTimes(s, at('2026-01-01T00:00:00Z'), 3)), ['2028-02-29T00:00:00.000Z', '2032-02-29T00:00:00.000Z', '2036-02-29T00:00:00.000Z']);
    const berlin = parseSchedule({ expr: '0 0 29 2 *', tz: 'Europe/Berlin' });
    assert.deepEqual(iso(nextFireTimes(berlin, at('2026-01-01T00:00:00Z'), 1)), ['2028-02-28T23:00:00.000Z']);
  });

  it('a seconds field steps in seconds', () => {
    const s = parseSchedule({ expr: '*/5 * * * * *' });
    const base = at('2026-01-01T00:00:00Z');
    assert.deepEqual(nextFireTimes(s, base, 4).map((t) => t - base), [5000, 10000, 15000, 20000]);
    assert.deepEqual(nextFireTimes(s, base + 4_999, 1).map((t) => t - base), [5000]);
    assert.deepEqual(nextFireTimes(s, base + 5_000, 1).map((t) => t - base), [10000]);
  });

  it('names the field of bad arguments', () => {
    const s = parseSchedule({ expr: '* * * * *' });
    assert.throws(() => nextFireTimes(s, 0, 0), { field: 'count' });
    assert.throws(() => nextFireTimes(s, 0, 1.5), { field: 'count' });
    assert.throws(() => nextFireTimes(s, 0, 1001), { field: 'count' });
    assert.throws(() => nextFireTimes(s, Number.NaN, 1), { field: 'from' });
  });
});
