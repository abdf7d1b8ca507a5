import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { validateDagGraph, type StepShape } from '../../src/core/dag/dag-graph.js';
import { classify, decideStep, runOutcome, settle, settleAll, type StepStatus } from '../../src/core/dag/release.js';
import type { TaskState } from '../../src/core/task-state.js';

const s = (name: string, dependsOn: string[] = [], when: StepShape['when'] = 'success'): StepShape => ({ name, dependsOn, when });
const st = (state: TaskState, skipReason: StepStatus['skipReason'] = null): StepStatus => ({ state, skipReason });
const dep = (name: string, state: TaskState, skipReason: StepStatus['skipReason'] = null) => ({ name, status: st(state, skipReason) });

describe('classify', () => {
  it('puts every task state in one class', () => {
    for (const p of ['ready', 'waiting', 'running', 'retrying'] as const) assert.equal(classify(st(p)), 'pending');
    assert.equal(classify(st('succeeded')), 'success');
    assert.equal(classify(st('failed')), 'failure');
    assert.equal(classify(st('cancelled')), 'failure');
    assert.equal(classify(st('skipped', 'upstream_failed')), 'failure');
    assert.equal(classify(st('skipped', 'upstream_skipped')), 'skipped');
    assert.equal(classify(st('skipped', 'condition_not_met')), 'skipped');
  });
});

describe('decideStep', () => {
  it('success: releases when all succeeded, waits while any is pending', () => {
    assert.deepEqual(decideStep('success', []), { action: 'release' });
    assert.deepEqual(decideStep('success', [dep('a', 'succeeded'), dep('b', 'succeeded')]), { action: 'release' });
    assert.deepEqual(decideStep('success', [dep('a', 'succeeded'), dep('b', 'running')]), { action: 'wait' });
  });
  it('success: skips at once on a failure, even with others pending, naming the first failed one', () => {
    assert.deepEqual(decideStep('success', [dep('a', 'running'), dep('b', 'failed'), dep('c', 'cancelled')]), { action: 'skip', reason: 'upstream_failed', because: 'b' });
    assert.deepEqual(decideStep('success', [dep('a', 'skipped', 'upstream_failed')]), { action: 'skip', reason: 'upstream_failed', because: 'a' });
  });
  it('success: a skipped dependency skips it (upstream_skipped) once nothing is pending', () => {
    assert.deepEqual(decideStep('success', [dep('a', 'skipped', 'condition_not_met'), dep('b', 'waiting')]), { action: 'wait' });
    assert.deepEqual(decideStep('success', [dep('a', 'skipped', 'condition_not_met'), dep('b', 'succeeded')]), { action: 'skip', reason: 'upstream_skipped', because: 'a' });
  });
  it('failure: waits for all, then runs if any failed, else skips (condition_not_met)', () => {
    assert.deepEqual(decideStep('failure', [dep('a', 'failed'), dep('b', 'running')]), { action: 'wait' });
    assert.deepEqual(decideStep('failure', [dep('a', 'failed'), dep('b', 'succeeded')]), { action: 'release' });
    assert.deepEqual(decideStep('failure', [dep('a', 'skipped', 'upstream_failed')]), { action: 'release' });
    assert.deepEqual(decideStep('failure', [dep('a', 'succeeded'), dep('b', 'skipped', 'condition_not_met')]), { action: 'skip', reason: 'condition_not_met', because: null });
  });
  it('always: waits for all, then runs whatever they did', () => {
    assert.deepEqual(decideStep('always', [dep('a', 'failed'), dep('b', 'retrying')]), { action: 'wait' });
    assert.deepEqual(decideStep('always', [dep('a', 'failed'), dep('b', 'skipped', 'upstream_failed'), dep('c', 'succeeded')]), { action: 'release' });
  });
});

describe('settle', () => {
  // a → b → c, a → d (when failure), c → e (always)
  const g = validateDagGraph([s('a'), s('b', ['a']), s('c', ['b']), s('d', ['a'], 'failure'), s('e', ['c'], 'always')]);

  it('releases a step when its dependency succeeds, and nothing further', () => {
    const w = settle(g, [st('succeeded'), st('ready'), st('ready'), st('ready'), st('ready')], [0]);
    assert.deepEqual(w, [{ step: 1, action: 'release' }, { step: 3, action: 'skip', reason: 'condition_not_met', because: null }]);
  });

  it('follows a failure down a chain of skips; a failure step and an always step run', () => {
    const w = settle(g, [st('failed'), st('ready'), st('ready'), st('ready'), st('ready')], [0]);
    assert.deepEqual(w, [
      { step: 1, action: 'skip', reason: 'upstream_failed', because: 'a' },
      { step: 3, action: 'release' },
      { step: 2, action: 'skip', reason: 'upstream_failed', because: 'b' },
      { step: 4, action: 'release' },
    ]);
  });

  it('writes each step at most once and leaves decided steps alone', () => {
    const fan = validateDagGraph([s('a'), s('b'), s('j', ['a', 'b'])]);
    assert.deepEqual(settle(fan, [st('succeeded'), st('running'), st('ready')], [0]), []);
    assert.deepEqual(settle(fan, [st('succeeded'), st('succeeded'), st('ready')], [0, 1]), [{ step: 2, action: 'release' }]);
    assert.deepEqual(settle(fan, [st('succeeded'), st('succeeded'), st('waiting')], [0, 1]), []);
  });

  it('does not modify its input', () => {
    const input = [st('failed'), st('ready'), st('ready'), st('ready'), st('ready')];
    const copy = structuredClone(input);
    settle(g, input, [0]);
    assert.deepEqual(input, copy);
  });

  it('a 1,000-step fan-in releases its end only when the last branch ends', () => {
    const mid = Array.from({ length: 998 }, (_, i) => s(`m${i}`, ['start']));
    const big = validateDagGraph([s('start'), ...mid, s('end', mid.map((m) => m.name))]);
    const states = [st('succeeded'), ...mid.map(() => st('succeeded')), st('ready')];
    states[500] = st('running');
    assert.deepEqual(settle(big, states, [1]), []);
    states[500] = st('succeeded');
    assert.deepEqual(settle(big, states, [500]), [{ step: 999, action: 'release' }]);
  });
});

describe('settleAll', () => {
  it('releases roots and decides every pending step in topological order', () => {
    const g = validateDagGraph([s('a'), s('b', ['a']), s('c', [], 'always')]);
    assert.deepEqual(settleAll(g, [st('ready'), st('ready'), st('ready')]), [{ step: 0, action: 'release' }, { step: 2, action: 'release' }]);
  });
});

describe('runOutcome', () => {
  it('is null while a step has not ended', () => {
    assert.equal(runOutcome([st('succeeded'), st('retrying')]), null);
    assert.equal(runOutcome([st('succeeded'), st('ready')]), null);
  });
  it('fails when any step failed or was cancelled, even if a failure step then succeeded', () => {
    assert.equal(runOutcome([st('failed'), st('skipped', 'upstream_failed'), st('succeeded')]), 'failed');
    assert.equal(runOutcome([st('cancelled')]), 'failed');
  });
  it('succeeds when every step succeeded or was skipped by a condition', () => {
    assert.equal(runOutcome([st('succeeded'), st('skipped', 'condition_not_met'), st('skipped', 'upstream_skipped')]), 'succeeded');
  });
});
