import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { classify, type StepStatus } from '../../src/core/dag/release.js';
import { decodeStepStates, encodeStepStates } from '../../src/core/dag/step-states.js';
import { TASK_STATES } from '../../src/core/task-state.js';

describe('step states', () => {
  it('round-trips every class a decision reads', () => {
    const all: StepStatus[] = [
      ...TASK_STATES.filter((s) => s !== 'skipped').map((state) => ({ state, skipReason: null })),
      { state: 'skipped', skipReason: 'upstream_failed' },
      { state: 'skipped', skipReason: 'upstream_skipped' },
      { state: 'skipped', skipReason: 'condition_not_met' },
    ];
    const text = encodeStepStates(all);
    assert.equal(text, 'raaaSFCUKN');
    const back = decodeStepStates(text, all.length);
    all.forEach((s, i) => {
      assert.equal(classify(back[i]!), classify(s), `${s.state} ${s.skipReason}`);
      assert.equal(back[i]!.state === 'ready', s.state === 'ready');
      assert.equal(back[i]!.skipReason, s.skipReason);
    });
  });
  it('refuses a string of another length or with an unknown code', () => {
    assert.throws(() => decodeStepStates('rr', 3), /2 steps for a DAG of 3/);
    assert.throws(() => decodeStepStates('rx', 2), /unknown step state code "x" at step 1/);
  });
});
