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

  it('refuses a time without a zone, a date alone, other text and impossible dates', () => {
    for (const bad of ['2026-03-08T00:00:00', '2026-03-08', 'now', '', ' 2026-03-08T00:00:00Z', '2026-13-40T00:00:00Z', '1773000000000']) {
      assert.equal(parseIsoInstant(bad), null, bad);
    }
  });
});
