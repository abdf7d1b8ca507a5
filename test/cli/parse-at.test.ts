/** `submit --at`: pure, with a fixed local "now" (the test sets TZ so HH:MM means a known instant). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAtFlag } from '../../src/cli/parse-at.js';
import { UsageError } from '../../src/cli/usage-error.js';

describe('parseAtFlag', () => {
  const now = new Date(2026, 11, 1, 12, 0, 0); // local 2026-12-01 12:00
  const local = (y: number, mo: number, d: number, h: number, mi: number, s = 0) => new Date(y, mo - 1, d, h, mi, s).toISOString();

  it('HH:MM later today is today, earlier (or now) is tomorrow', () => {
    assert.equal(parseAtFlag('18:30', now), local(2026, 12, 1, 18, 30));
    assert.equal(parseAtFlag('09:15', now), local(2026, 12, 2, 9, 15));
    assert.equal(parseAtFlag('12:00', now), local(2026, 12, 2, 12, 0));
    assert.equal(parseAtFlag('7:05:09', now), local(2026, 12, 2, 7, 5, 9));
  });
  it('a local date and time, with T or a space', () => {
    assert.equal(parseAtFlag('2026-12-24T08:00', now), local(2026, 12, 24, 8, 0));
    assert.equal(parseAtFlag('2026-12-24 08:00:30', now), local(2026, 12, 24, 8, 0, 30));
  });
  it('ISO 8601 with a zone is that instant', () => {
    assert.equal(parseAtFlag('2026-12-01T18:00:00Z', now), '2026-12-01T18:00:00.000Z');
    assert.equal(parseAtFlag('2026-12-01T19:00:00+01:00', now), '2026-12-01T18:00:00.000Z');
  });
  it('a zoned time off the calendar is refused as no such time, not rolled over to the next month', () => {
    assert.throws(() => parseAtFlag('2027-02-30T00:00:00Z', now), /^UsageError: invalid --at "2027-02-30T00:00:00Z": no such time$/);
  });
  it('anything else is a usage error naming --at', () => {
    for (const bad of ['tomorrow', '25:00', '12:60', '2026-02-30T10:00', '', '1700000000000', '2027-02-30T00:00:00Z', '2027-04-31T10:00Z', '2027-01-01T24:00:00Z', '2027-01-01T10:00:00+25:00']) {
      assert.throws(() => parseAtFlag(bad, now), (e: unknown) => e instanceof UsageError && /^invalid --at /.test(e.message), bad);
    }
  });
});
