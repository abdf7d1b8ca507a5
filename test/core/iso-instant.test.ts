import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseIsoInstant } from '../../src/core/iso-instant.js';

describe('parseIsoInstant', () => {
  it('reads an ISO 8601 time with a zone (Z or an offset, seconds and fractions optional)', () => {
    assert.equal(parseIsoInstant('2026-03-08T00:00:00Z'), Date.UTC(2026, 2, 8));
    assert.equal(parseIsoInstant('2026-03-08T00:00:00-05:00'), Date.UTC(2026, 2, 8, 5));
    assert.equal(parseIsoInstant('2026-03-08 00:00+0100'), Date.UTC(2026, 2, 7, 23));
    assert.equal(parseIsoInstant('2026-03-08T00:00:00.250z'), Date.UTC(2026, 2, 8) + 250);
  });

  it('refuses a date or time off the calendar instead of rolling it over (Date.parse alone would)', () => {
    for (const bad of ['2027-02-30T10:00:00Z', '2027-02-29T00:00:00Z', '2027-04-31T10:00:00Z', '2027-00-10T10:00:00Z', '2027-01-00T10:00:00Z', '2027-01-01T24:00:00Z', '2027-01-01T23:60:00Z', '2027-01-01T23:59:60Z', '2027-01-01T10:00:00+24:00', '2027-01-01T10:00:00+05:60']) {
      assert.equal(parseIsoInstant(bad), null, bad);
    }
    assert.equal(parseIsoInstant('2028-02-29T00:00:00Z'), Date.UTC(2028, 1, 29), 'a leap day is on the calendar');
    assert.equal(parseIsoInstant('2027-12-31T23:59:59.999+14:00'), Date.UTC(2027, 11, 31, 9, 59, 59, 999));
  });

  it('refuses a time without a zone, a date alone, other text and impossible dates', () => {
    for (const bad of ['2026-03-08T00:00:00', '2026-03-08', 'now', '', ' 2026-03-08T00:00:00Z', '2026-13-40T00:00:00Z', '1773000000000']) {
      assert.equal(parseIsoInstant(bad), null, bad);
    }
  });
});
