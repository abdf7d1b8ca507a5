import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidInputError } from '../../src/core/errors.js';
import { MAX_DAG_STEPS, parseStepCondition, stepEnvPart, validateDagGraph, type StepShape } from '../../src/core/dag/dag-graph.js';

const s = (name: string, dependsOn: string[] = [], when: StepShape['when'] = 'success'): StepShape => ({ name, dependsOn, when });

function rejects(steps: StepShape[], field: string, reason: RegExp): void {
  assert.throws(
    () => validateDagGraph(steps),
    (e: unknown) => {
      assert.ok(e instanceof InvalidInputError, String(e));
      assert.equal(e.field, field);
      assert.match(e.reason, reason);
      return true;
    },
  );
}

describe('validateDagGraph', () => {
  it('indexes a diamond: dependencies, dependents, a topological order', () => {
    const g = validateDagGraph([s('d', ['b', 'c']), s('b', ['a']), s('c', ['a']), s('a')]);
    assert.deepEqual(g.deps, [[1, 2], [3], [3], []]);
    assert.deepEqual(g.dependents, [[], [0], [0], [1, 2]]);
    assert.deepEqual(g.order, [3, 1, 2, 0]);
    assert.equal(g.index.get('c'), 2);
  });

  it('refuses an empty DAG and one over the step cap', () => {
    rejects([], 'steps', /at least one step/);
    rejects(Array.from({ length: MAX_DAG_STEPS + 1 }, (_, i) => s(`s${i}`)), 'steps', new RegExp(`at most ${MAX_DAG_STEPS} steps`));
  });

  it('refuses duplicate names, naming both places', () => {
    rejects([s('a'), s('b'), s('a')], 'steps[2].name', /"a" is already the name of steps\[0\]/);
  });

  it('refuses names that would share an environment name', () => {
    rejects([s('load-data'), s('load_data')], 'steps[1].name', /"load_data" and "load-data" \(steps\[0\]\) give the same environment name LOAD_DATA/);
    rejects([s('x'), s('X')], 'steps[1].name', /same environment name X/);
  });

  it('refuses bad step names', () => {
    for (const bad of ['', '-a', '.a', 'a b', 'a/b', 'x'.repeat(65), 'é']) rejects([s(bad)], 'steps[0].name', /is not a step name/);
    assert.equal(validateDagGraph([s('A.b-c_9')]).steps.length, 1);
  });

  it('refuses a dependency on a missing step and a dependency listed twice', () => {
    rejects([s('a'), s('b', ['a', 'nope'])], 'steps[1].depends_on[1]', /step "b" depends on "nope", which is not a step of this DAG/);
    rejects([s('a'), s('b', ['a', 'a'])], 'steps[1].depends_on[1]', /lists "a" twice/);
  });

  it('refuses when: failure without dependencies', () => {
    rejects([s('alert', [], 'failure')], 'steps[0].when', /has none/);
    assert.equal(validateDagGraph([s('a', [], 'always')]).order.length, 1);
  });

  it('names the steps of a cycle, in depends-on order', () => {
    rejects([s('a', ['c']), s('b', ['a']), s('c', ['b'])], 'steps[0].depends_on', /^cycle: a → c → b → a \(a depends on c, c depends on b, b depends on a\)$/);
    rejects([s('self', ['self'])], 'steps[0].depends_on', /^cycle: self → self/);
    // A cycle behind an acyclic prefix: only the cycle's steps are named.
    rejects([s('start'), s('x', ['start', 'y']), s('y', ['x']), s('end', ['y'])], 'steps[1].depends_on', /^cycle: x → y → x /);
  });

  it('validates a 1,000-step fan-out in under 100 ms', () => {
    const mid = Array.from({ length: 998 }, (_, i) => s(`m${i}`, ['start']));
    const steps = [s('start'), ...mid, s('end', mid.map((m) => m.name))];
    const t0 = performance.now();
    const g = validateDagGraph(steps);
    const ms = performance.now() - t0;
    assert.equal(g.order.length, 1000);
    assert.equal(g.order[0], 0);
    assert.equal(g.order[999], 999);
    assert.ok(ms < 100, `took ${ms.toFixed(1)} ms`);
  });

  it('parses conditions, success by default, naming the field', () => {
    assert.equal(parseStepCondition(undefined, 'steps[0].when'), 'success');
    for (const c of ['success', 'failure', 'always']) assert.equal(parseStepCondition(c, 'w'), c);
    assert.throws(() => parseStepCondition('on_failure', 'steps[2].when'), (e: unknown) => e instanceof InvalidInputError && e.field === 'steps[2].when' && /expected one of success, failure, always/.test(e.reason));
  });

  it('maps step names to environment name parts', () => {
    assert.equal(stepEnvPart('load-data.v2'), 'LOAD_DATA_V2');
  });
});
