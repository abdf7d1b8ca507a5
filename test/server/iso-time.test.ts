import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isoTime } from '../../src/server/iso-time.js';

test('isoTime is toISOString for whole ms in and around the fast range', () => {
  const edges = [0, 1, 999, 1000, 59_999, 60_000, 3_599_999, 86_399_999, 86_400_000, 951_782_400_000 /* 2000-02-29 */, 1_700_000_000_000,
    253_402_300_799_999, 253_402_300_800_000, 8.64e15, -1, -86_400_001, -8.64e15];
  for (const t of edges) assert.equal(isoTime(t), new Date(t).toISOString(), String(t));
  let x = 12345;
  for (let i = 0; i < 200_000; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    const t = Math.floor((x / 2147483648) * 2 * 253_402_300_800_000) - 253_402_300_800_000 / 4;
    assert.equal(isoTime(t), new Date(t).toISOString(), String(t));
    // Neighbouring times (the one-day cache hit and miss paths).
    assert.equal(isoTime(t + 1), new Date(t + 1).toISOString(), String(t + 1));
  }
});

test('isoTime falls back for fractions and throws like toISOString for invalid times', () => {
  for (const t of [1.5, 1_700_000_000_000.25, -0.5]) assert.equal(isoTime(t), new Date(t).toISOString(), String(t));
  for (const t of [NaN, Infinity, -Infinity, 8.64e15 + 1]) assert.throws(() => isoTime(t), RangeError);
});
