import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConflictError, InvalidInputError } from '../../src/core/errors.js';
import { criticalPath } from '../../src/core/dag/critical-path.js';
import { validateDagGraph, type StepShape } from '../../src/core/dag/dag-graph.js';
import { checkParams, resolveParams } from '../../src/core/dag/params.js';
import type { StepStatus } from '../../src/core/dag/release.js';
import { planDagRetry } from '../../src/core/dag/retry-plan.js';
import { outputEnvName, paramEnvName, releaseEnv, startEnv } from '../../src/core/dag/step-env.js';
import type { TaskState } from '../../src/core/task-state.js';

const s = (name: string, dependsOn: string[] = [], when: StepShape['when'] = 'success'): StepShape => ({ name, dependsOn, when });
const st = (state: TaskState, skipReason: StepStatus['skipReason'] = null): StepStatus => ({ state, skipReason });

describe('planDagRetry', () => {
  // a → b → c; a → cleanup (failure); x independent
  const g = validateDagGraph([s('a'), s('b', ['a']), s('c', ['b']), s('cleanup', ['b'], 'failure'), s('x')]);

  it('resets what did not succeed and releases the steps whose dependencies all succeeded', () => {
    const plan = planDagRetry('R1', 'failed', g, [st('succeeded'), st('failed'), st('skipped', 'upstream_failed'), st('succeeded'), st('succeeded')]);
    assert.deepEqual(plan.reset, [1, 2]);
    assert.deepEqual(plan.writes, [{ step: 1, action: 'release' }]);
  });

  it('a reset root is released, its dependents wait for it', () => {
    const plan = planDagRetry('R1', 'cancelled', g, [st('cancelled'), st('cancelled'), st('cancelled'), st('cancelled'), st('succeeded')]);
    assert.deepEqual(plan.reset, [0, 1, 2, 3]);
    assert.deepEqual(plan.writes, [{ step: 0, action: 'release' }]);
  });

  it('refuses a running run and a run with nothing to retry', () => {
    assert.throws(() => planDagRetry('R1', 'running', g, []), (e: unknown) => e instanceof ConflictError && /still running/.test(e.message));
    // A step skipped only because its condition was not met is kept: nothing here to retry.
    assert.throws(
      () => planDagRetry('R1', 'succeeded', g, [st('succeeded'), st('succeeded'), st('succeeded'), st('skipped', 'condition_not_met'), st('succeeded')]),
      (e: unknown) => e instanceof ConflictError && /no failed or cancelled step/.test(e.message),
    );
  });
});

describe('criticalPath', () => {
  // start → (fast, slow) → end; side hangs off start
  const g = validateDagGraph([s('start'), s('fast', ['start']), s('slow', ['start']), s('end', ['fast', 'slow']), s('side', ['start'])]);
  it('walks back from the last end through the dependency each step waited for', () => {
    const t = [
      { startedAt: 0, endedAt: 10 },
      { startedAt: 10, endedAt: 20 },
      { startedAt: 10, endedAt: 90 },
      { startedAt: 90, endedAt: 100 },
      { startedAt: 10, endedAt: 30 },
    ];
    assert.deepEqual(criticalPath(g, t, 1000), [0, 2, 3]);
  });
  it('counts a running step as ending now and leaves out steps that never ran', () => {
    const t = [
      { startedAt: 0, endedAt: 10 },
      { startedAt: 10, endedAt: 20 },
      { startedAt: 10, endedAt: null },
      { startedAt: null, endedAt: null },
      { startedAt: 10, endedAt: 30 },
    ];
    assert.deepEqual(criticalPath(g, t, 50), [0, 2]);
    assert.deepEqual(criticalPath(g, t.map(() => ({ startedAt: null, endedAt: null })), 50), []);
  });
});

describe('run parameters', () => {
  it('takes any parameters when the DAG declares none, and checks each', () => {
    assert.deepEqual(resolveParams(null, { date: '2026-12-01' }), { date: '2026-12-01' });
    const bad: Array<[Record<string, unknown>, string, RegExp]> = [
      [{ '1x': 'v' }, 'params.1x', /parameter name/],
      [{ a: 'v', A: 'w' }, 'params.A', /same parameter/],
      [{ a: 3 }, 'params.a', /expected a string/],
      [{ a: 'x\0y' }, 'params.a', /NUL/],
      [{ a: 'x'.repeat(65537) }, 'params.a', /at most 65536/],
    ];
    for (const [given, field, reason] of bad) {
      assert.throws(() => resolveParams(null, given), (e: unknown) => e instanceof InvalidInputError && e.field === field && reason.test(e.reason), field);
    }
    assert.throws(() => checkParams('params', Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`p${i}`, '']))), /at most 64/);
  });
  it('fills declared defaults and refuses undeclared names', () => {
    assert.deepEqual(resolveParams({ date: 'today', n: '1' }, { n: '5' }), { date: 'today', n: '5' });
    assert.throws(() => resolveParams({ date: 'today' }, { dat: 'x' }), (e: unknown) => e instanceof InvalidInputError && e.field === 'params.dat' && /declares no parameter "dat" \(it declares date\)/.test(e.reason));
  });
});

describe('step environment', () => {
  it('names parameters and outputs', () => {
    assert.equal(paramEnvName('date'), 'DROVER_PARAM_DATE');
    assert.equal(outputEnvName('load-data', 'rows'), 'DROVER_OUT_LOAD_DATA_ROWS');
  });
  it('adds run, step and parameters at the start, outputs at release, after the step\'s own env', () => {
    const start = startEnv({ A: '1', DROVER_PARAM_DATE: 'mine' }, 'R1', 'load', { date: 'today' });
    assert.deepEqual(start, { A: '1', DROVER_PARAM_DATE: 'today', DROVER_DAG_RUN: 'R1', DROVER_DAG_STEP: 'load' });
    assert.deepEqual(releaseEnv(start, [{ step: 'b', outputs: { rows: '42' } }, { step: 'c', outputs: null }]), { ...start, DROVER_OUT_B_ROWS: '42' });
  });
});
