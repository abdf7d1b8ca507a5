/**
 * next-fire.ts keeps the spans it has answered per Schedule value: the
 * answers through those spans equal croner's own, asked fresh, in any order
 * of questions (including around daylight-saving changes and for
 * expressions with gaps of days).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { firstFireAfter } from '../../src/core/cron/next-fire.js';
import { parseSchedule } from '../../src/core/cron/schedule.js';

/** A small deterministic generator (mulberry32), so a failure can be replayed. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('firstFireAfter through its kept spans', () => {
  const cases: Array<[string, string, string]> = [
    ['* * * * *', 'UTC', '2026-01-01T00:00:00Z'],
    ['*/20 * * * * *', 'UTC', '2026-01-01T00:00:00Z'],
    ['30 2 * * *', 'America/New_York', '2026-03-07T00:00:00Z'],
    ['0 * * * *', 'Europe/Berlin', '2026-10-24T20:00:00Z'],
    ['0 0 29 2 *', 'UTC', '2027-01-01T00:00:00Z'],
  ];
  for (const [expr, tz, from] of cases) {
    it(`agrees with fresh computations: "${expr}" in ${tz}`, () => {
      const kept = parseSchedule({ expr, tz });
      const next = rng(expr.length * 7919 + tz.length);
      const base = Date.parse(from);
      // Points clustered (a pass asks about nearby instants) and spread (two days).
      const points = Array.from({ length: 400 }, (_, i) => base + Math.floor(next() * (i % 2 === 0 ? 120_000 : 2 * 86_400_000)));
      for (const t of points) {
        const fresh = firstFireAfter(parseSchedule({ expr, tz }), t);
        assert.equal(firstFireAfter(kept, t), fresh, `${expr} ${tz} after ${new Date(t).toISOString()}`);
        // Asked again (now answered from a span), and from the instant just before the answer.
        assert.equal(firstFireAfter(kept, t), fresh);
        if (fresh !== null) assert.equal(firstFireAfter(kept, fresh - 1), fresh);
        if (fresh !== null) assert.equal(firstFireAfter(kept, fresh), firstFireAfter(parseSchedule({ expr, tz }), fresh), 'a fire time itself is not inside its own span');
      }
    });
  }
});
