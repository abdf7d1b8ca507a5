import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidInputError } from '../../src/core/errors.js';
import { decideOverlap, parseOverlapPolicy } from '../../src/core/cron/overlap.js';

describe('decideOverlap', () => {
  it('starts whenever nothing runs', () => {
    for (const p of ['allow', 'forbid', 'replace'] as const) assert.deepEqual(decideOverlap(p, false), { action: 'start' });
  });
  it('with a run active: allow starts, forbid skips with the reason, replace replaces', () => {
    assert.deepEqual(decideOverlap('allow', true), { action: 'start' });
    assert.deepEqual(decideOverlap('forbid', true), { action: 'skip', reason: 'previous_run_active' });
    assert.deepEqual(decideOverlap('replace', true), { action: 'replace' });
  });
  it('parses the policy names and names the field', () => {
    for (const p of ['allow', 'forbid', 'replace']) assert.equal(parseOverlapPolicy(p), p);
    for (const bad of ['Allow', 'skip', '', null]) {
      assert.throws(() => parseOverlapPolicy(bad), (e: unknown) => e instanceof InvalidInputError && e.field === 'overlap' && e.reason === 'expected one of allow, forbid, replace');
    }
  });
});
