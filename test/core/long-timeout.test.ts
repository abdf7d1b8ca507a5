import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_TIMEOUT_MS, setLongTimeout, type TimerFns } from '../../src/core/long-timeout.js';

/** A fake clock with setTimeout's rule: a delay above MAX_TIMEOUT_MS is refused here (Node would fire it after 1 ms). */
function fakeTimers() {
  let now = 0;
  let seq = 0;
  const pending = new Map<number, { at: number; fn: () => void }>();
  const delays: number[] = [];
  const fns: TimerFns = {
    setTimeout(fn, ms) {
      assert.ok(ms >= 0 && ms <= MAX_TIMEOUT_MS, `setTimeout asked for ${ms} ms`);
      delays.push(ms);
      pending.set(++seq, { at: now + ms, fn });
      return seq;
    },
    clearTimeout(h) {
      pending.delete(h as number);
    },
  };
  /** Runs every timer due by now + ms, in order of due time. */
  function advance(ms: number): void {
    const until = now + ms;
    for (;;) {
      const next = [...pending.entries()].sort((a, b) => a[1].at - b[1].at)[0];
      if (!next || next[1].at > until) break;
      pending.delete(next[0]);
      now = next[1].at;
      next[1].fn();
    }
    now = until;
  }
  return { fns, advance, delays, pending, get now() { return now; } };
}

describe('setLongTimeout', () => {
  it('runs a short delay as one timer', () => {
    const t = fakeTimers();
    let ran = 0;
    setLongTimeout(() => ran++, 1500, t.fns);
    t.advance(1499);
    assert.equal(ran, 0);
    t.advance(1);
    assert.equal(ran, 1);
    assert.deepEqual(t.delays, [1500]);
  });

  it('runs a 30-day delay after 30 days, not before, through timers setTimeout can hold', () => {
    const t = fakeTimers();
    const day = 86_400_000;
    let ranAt = -1;
    setLongTimeout(() => (ranAt = t.now), 30 * day, t.fns);
    t.advance(30 * day - 1);
    assert.equal(ranAt, -1);
    t.advance(1);
    assert.equal(ranAt, 30 * day);
    assert.deepEqual(t.delays, [MAX_TIMEOUT_MS, 30 * day - MAX_TIMEOUT_MS]);
    assert.equal(t.pending.size, 0);
  });

  it('exactly MAX_TIMEOUT_MS is one timer; one more is two', () => {
    const a = fakeTimers();
    setLongTimeout(() => {}, MAX_TIMEOUT_MS, a.fns);
    a.advance(MAX_TIMEOUT_MS);
    assert.deepEqual(a.delays, [MAX_TIMEOUT_MS]);
    const b = fakeTimers();
    let ran = false;
    setLongTimeout(() => (ran = true), MAX_TIMEOUT_MS + 1, b.fns);
    b.advance(MAX_TIMEOUT_MS);
    assert.equal(ran, false);
    b.advance(1);
    assert.equal(ran, true);
    assert.deepEqual(b.delays, [MAX_TIMEOUT_MS, 1]);
  });

  it('clear() stops the chain, before or between its links', () => {
    const t = fakeTimers();
    let ran = 0;
    const before = setLongTimeout(() => ran++, 10, t.fns);
    before.clear();
    const between = setLongTimeout(() => ran++, 3 * MAX_TIMEOUT_MS, t.fns);
    t.advance(MAX_TIMEOUT_MS + 5);
    between.clear();
    t.advance(5 * MAX_TIMEOUT_MS);
    assert.equal(ran, 0);
    assert.equal(t.pending.size, 0);
    between.clear(); // twice: harmless
  });

  it('a negative or NaN delay runs at once, as setTimeout does; Infinity never', () => {
    const t = fakeTimers();
    const ran: string[] = [];
    setLongTimeout(() => ran.push('neg'), -5, t.fns);
    setLongTimeout(() => ran.push('nan'), Number.NaN, t.fns);
    setLongTimeout(() => ran.push('inf'), Infinity, t.fns);
    t.advance(0);
    assert.deepEqual(ran.sort(), ['nan', 'neg']);
    assert.equal(t.pending.size, 0);
  });
});
