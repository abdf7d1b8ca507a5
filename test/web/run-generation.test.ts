/**
 * The dashboard's run counter (web/src/hooks/run-generation.ts): the task
 * page's log starts reading again when a task that had ended runs again,
 * including when the page never rendered it at work in between.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { firstRunSeen, nextRunSeen, type RunSeen } from '../../web/src/hooks/run-generation.js';

/** Feeds renders of (terminal, attempts) and returns the count after each. */
function counts(first: [boolean, number], ...renders: Array<[boolean, number]>): number[] {
  let seen: RunSeen = firstRunSeen(...first);
  const out = [seen.n];
  for (const [terminal, attempts] of renders) {
    seen = nextRunSeen(seen, terminal, attempts);
    out.push(seen.n);
  }
  return out;
}

describe('web: run generation', () => {
  it('counts a task going from an end back to work, once', () => {
    // failed(1) → waiting(1) → running(2) → failed(2)
    assert.deepEqual(counts([true, 1], [false, 1], [false, 2], [true, 2]), [0, 1, 1, 1]);
  });

  it('counts a new attempt count seen between two ends, when the states between were never rendered', () => {
    assert.deepEqual(counts([true, 1], [true, 2]), [0, 1]);
    // Then the same end again changes nothing.
    assert.deepEqual(counts([true, 1], [true, 2], [true, 2]), [0, 1, 1]);
  });

  it('does not count automatic retries of a task that never ended', () => {
    // running(1) → retrying(1) → running(2) → succeeded(2)
    assert.deepEqual(counts([false, 1], [false, 1], [false, 2], [true, 2]), [0, 0, 0, 0]);
  });

  it('does not count a retried task cancelled again before any attempt ran', () => {
    // cancelled(0) → cancelled(0): nothing new to read; cancelled(0) → waiting(0): a run again.
    assert.deepEqual(counts([true, 0], [true, 0]), [0, 0]);
    assert.deepEqual(counts([true, 0], [false, 0], [true, 0]), [0, 1, 1]);
  });

  it('counts each of several retries by hand', () => {
    assert.deepEqual(counts([true, 1], [false, 1], [true, 2], [true, 3], [false, 3], [true, 4]), [0, 1, 1, 2, 3, 3]);
  });
});
