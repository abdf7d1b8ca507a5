import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatDuration, parseDuration } from '../../src/core/duration.js';

describe('parseDuration', () => {
  it('accepts units, combinations, decimals and bare milliseconds', () => {
    const cases: Array<[string | number, number]> = [
      ['500ms', 500],
      ['30s', 30_000],
      ['5m', 300_000],
      ['2h', 7_200_000],
      ['2d', 172_800_000],
      ['1h30m', 5_400_000],
      ['1d2h3m4s5ms', 93_784_005],
      ['1.5s', 1500],
      ['0.25m', 15_000],
      ['1.0005s', 1001],
      ['250', 250],
      ['0', 0],
      ['0s', 0],
      ['  10s\n', 10_000],
      ['007s', 7000],
      [1200, 1200],
      [12.6, 13],
      [0, 0],
    ];
    for (const [input, ms] of cases) assert.equal(parseDuration(input), ms, JSON.stringify(input));
  });

  it('returns null for anything else', () => {
    const bad: Array<string | number> = [
      '',
      '   ',
      's',
      'ms',
      'abc',
      '5x',
      '10S',
      '1H',
      '-5s',
      '-1',
      '+5s',
      '1.5',
      '.5s',
      '5.s',
      '1e3',
      '1e3s',
      '10 s',
      '1h 30m',
      '1h,30m',
      '1h1h', // a unit twice: a typo, not a sum
      '30s1m', // smaller before larger
      '1s500ms1s',
      'Infinity',
      -1,
      Number.NaN,
      Number.POSITIVE_INFINITY,
    ];
    for (const input of bad) assert.equal(parseDuration(input), null, JSON.stringify(input));
  });
});

describe('formatDuration', () => {
  it('picks a readable unit', () => {
    const cases: Array<[number, string]> = [
      [0, '0ms'],
      [999, '999ms'],
      [1000, '1s'],
      [1500, '1.5s'],
      [1234, '1.23s'],
      [60_000, '1m0s'],
      [90_400, '1m30s'],
      [3_600_000, '1h0m'],
      [5_400_000, '1h30m'],
    ];
    for (const [ms, text] of cases) assert.equal(formatDuration(ms), text, String(ms));
  });

  it('never shows 60 in the smaller unit when rounding up', () => {
    assert.equal(formatDuration(119_600), '2m0s');
    assert.equal(formatDuration(3_599_999), '1h0m');
    assert.equal(formatDuration(7_170_000), '2h0m');
  });
});
