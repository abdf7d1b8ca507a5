import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { planAttemptEnd, type AttemptEndInput } from '../../src/core/attempt-end.js';
import { FakeClock } from '../../src/core/clock.js';
import { DEFAULT_MAX_LOST, DEFAULT_RETRY_POLICY } from '../../src/core/retry-policy.js';
import type { AttemptOutcome, Task, TaskResult } from '../../src/core/task.js';

type Stored = Pick<Task, 'state' | 'retry' | 'retriesUsed' | 'lostCount' | 'result'>;

const running = (o: Partial<Stored> = {}): Stored => ({
  state: 'running',
  retry: { ...DEFAULT_RETRY_POLICY },
  retriesUsed: 0,
  lostCount: 0,
  result: null,
  ...o,
});

const ending = (outcome: AttemptOutcome, o: Partial<AttemptEndInput> = {}): AttemptEndInput => ({
  outcome,
  attempt: 1,
  exitCode: outcome === 'succeeded' ? 0 : outcome === 'failed' ? 2 : null,
  signal: outcome === 'timed_out' ? 'SIGKILL' : null,
  error: null,
  durationMs: 40,
  ...o,
});

describe('planAttemptEnd', () => {
  it('succeeded: task succeeded, result recorded, one event', () => {
    const clock = new FakeClock();
    const end = ending('succeeded');
    const plan = planAttemptEnd(running(), end, clock.now());
    assert.deepEqual(plan, {
      state: 'succeeded',
      retriesUsed: 0,
      lostCount: 0,
      runAfter: null,
      result: { ...end },
      outputs: null,
      event: { from: 'running', to: 'succeeded', reason: 'attempt_succeeded', detail: { attempt: 1, outcome: 'succeeded', exitCode: 0, signal: null } },
    });
  });

  it('succeeded with outputs: the plan carries them apart from the result (recorded once, with it)', () => {
    const end = ending('succeeded', { outputs: { rows: '42', url: 'a=b' } });
    const plan = planAttemptEnd(running(), end, 0);
    assert.equal(plan.state, 'succeeded');
    assert.deepEqual(plan.outputs, { rows: '42', url: 'a=b' });
    assert.deepEqual(plan.result, { outcome: 'succeeded', attempt: 1, exitCode: 0, signal: null, error: null, durationMs: 40 });
    assert.ok(!('outputs' in plan.result!), 'outputs are not part of the result');
    // No key is no outputs.
    assert.equal(planAttemptEnd(running(), ending('succeeded', { outputs: {} }), 0).outputs, null);
    assert.equal(planAttemptEnd(running(), ending('succeeded', { outputs: null }), 0).outputs, null);
  });

  it('outputs are recorded only when the task becomes succeeded now', () => {
    const outputs = { rows: '42' };
    // A task cancelled (or retried by hand) while its attempt ran did not succeed: its attempt's outputs are dropped.
    assert.equal(planAttemptEnd(running({ state: 'cancelled' }), ending('succeeded', { outputs }), 0).outputs, null);
    assert.equal(planAttemptEnd(running({ state: 'ready' }), ending('succeeded', { outputs }), 0).outputs, null);
    // Whatever a report of another outcome carries, nothing is recorded (the server refuses such a report anyway).
    for (const outcome of ['failed', 'timed_out', 'cancelled', 'lost', 'start_failed'] as const) {
      assert.equal(planAttemptEnd(running(), ending(outcome, { outputs }), 0).outputs, null, outcome);
      assert.equal(planAttemptEnd(running({ retriesUsed: 3, lostCount: DEFAULT_MAX_LOST }), ending(outcome, { outputs }), 0).outputs, null, `${outcome}, nothing left`);
    }
  });

  it('failed with retries left: retrying after the policy delay from now, no result', () => {
    const clock = new FakeClock(5_000_000);
    const delays = [1000, 2000, 4000];
    for (let used = 0; used < 3; used++) {
      clock.advance(777);
      const plan = planAttemptEnd(running({ retriesUsed: used, lostCount: 2 }), ending('failed', { attempt: used + 1 }), clock.now());
      assert.equal(plan.state, 'retrying');
      assert.equal(plan.retriesUsed, used + 1);
      assert.equal(plan.lostCount, 2);
      assert.equal(plan.runAfter, clock.now() + delays[used]!);
      assert.equal(plan.result, null);
      assert.deepEqual(plan.event, {
        from: 'running',
        to: 'retrying',
        reason: 'attempt_failed',
        detail: { attempt: used + 1, outcome: 'failed', exitCode: 2, signal: null, retry: used + 1, delayMs: delays[used] },
      });
    }
  });

  it('failed with no retries left: failed, result recorded', () => {
    const end = ending('failed', { attempt: 4, error: 'exit status 2' });
    const plan = planAttemptEnd(running({ retriesUsed: 3 }), end, new FakeClock().now());
    assert.equal(plan.state, 'failed');
    assert.equal(plan.runAfter, null);
    assert.equal(plan.retriesUsed, 3);
    assert.deepEqual(plan.result, end);
    assert.equal(plan.event?.reason, 'retries_exhausted');
    assert.equal(plan.event?.detail.error, 'exit status 2');
  });

  it('timed_out counts as a failure, with its own reason while retries remain', () => {
    const clock = new FakeClock();
    const retry = planAttemptEnd(running(), ending('timed_out'), clock.now());
    assert.equal(retry.state, 'retrying');
    assert.equal(retry.event?.reason, 'attempt_timed_out');
    assert.equal(retry.event?.detail.signal, 'SIGKILL');
    const last = planAttemptEnd(running({ retriesUsed: 3 }), ending('timed_out'), clock.now());
    assert.equal(last.state, 'failed');
    assert.equal(last.event?.reason, 'retries_exhausted');
    assert.equal(last.result?.outcome, 'timed_out');
  });

  it('an attempt the worker cancelled while the task still runs counts as a failure', () => {
    const plan = planAttemptEnd(running(), ending('cancelled', { signal: 'SIGTERM' }), new FakeClock().now());
    assert.equal(plan.state, 'retrying');
    assert.equal(plan.event?.reason, 'attempt_failed');
  });

  it('uses the task policy, not the default', () => {
    const clock = new FakeClock();
    const plan = planAttemptEnd(running({ retry: { maxRetries: 1, baseDelayMs: 300, factor: 5, maxDelayMs: 1000 } }), ending('failed'), clock.now());
    assert.equal(plan.runAfter, clock.now() + 300);
    const none = planAttemptEnd(running({ retry: { maxRetries: 0, baseDelayMs: 300, factor: 5, maxDelayMs: 1000 } }), ending('failed'), clock.now());
    assert.equal(none.state, 'failed');
  });

  it('lost: back to waiting without using a retry', () => {
    const plan = planAttemptEnd(running({ retriesUsed: 1, lostCount: 0 }), ending('lost', { durationMs: null }), new FakeClock().now());
    assert.equal(plan.state, 'waiting');
    assert.equal(plan.lostCount, 1);
    assert.equal(plan.retriesUsed, 1);
    assert.equal(plan.runAfter, null);
    assert.equal(plan.result, null);
    assert.deepEqual(plan.event, {
      from: 'running',
      to: 'waiting',
      reason: 'worker_lost',
      detail: { attempt: 1, outcome: 'lost', exitCode: null, signal: null, lostCount: 1 },
    });
  });

  it('returned (given back from a prefetch queue unstarted): waiting, with neither a retry nor a loss counted, even at the lost cap', () => {
    const end = ending('returned', { durationMs: 0, error: 'given back unstarted: another worker has a free slot' });
    const plan = planAttemptEnd(running({ retriesUsed: 2, lostCount: DEFAULT_MAX_LOST }), end, new FakeClock().now());
    assert.deepEqual([plan.state, plan.retriesUsed, plan.lostCount, plan.runAfter, plan.result, plan.outputs], ['waiting', 2, DEFAULT_MAX_LOST, null, null, null]);
    assert.deepEqual(plan.event, {
      from: 'running',
      to: 'waiting',
      reason: 'returned',
      detail: { attempt: 1, outcome: 'returned', exitCode: null, signal: null, error: 'given back unstarted: another worker has a free slot' },
    });
  });

  it(`lost beyond the cap (${DEFAULT_MAX_LOST}): failed with a result that says so`, () => {
    const now = new FakeClock().now();
    assert.equal(planAttemptEnd(running({ lostCount: DEFAULT_MAX_LOST - 1 }), ending('lost'), now).state, 'waiting');
    const plan = planAttemptEnd(running({ lostCount: DEFAULT_MAX_LOST }), ending('lost'), now);
    assert.equal(plan.state, 'failed');
    assert.equal(plan.lostCount, DEFAULT_MAX_LOST + 1);
    assert.equal(plan.event?.reason, 'lost_cap_exceeded');
    assert.equal(plan.result?.outcome, 'lost');
    assert.match(plan.result?.error ?? '', new RegExp(`lost ${DEFAULT_MAX_LOST + 1} times \\(cap ${DEFAULT_MAX_LOST}\\)`));
  });

  it('takes a custom lost cap', () => {
    const now = new FakeClock().now();
    assert.equal(planAttemptEnd(running(), ending('lost'), now, 0).state, 'failed');
    assert.equal(planAttemptEnd(running({ lostCount: 5 }), ending('lost'), now, 10).state, 'waiting');
  });

  it('task already cancelled: no transition; the first end records the result, a later one does not', () => {
    const now = new FakeClock().now();
    const end = ending('cancelled', { signal: 'SIGTERM' });
    const first = planAttemptEnd(running({ state: 'cancelled' }), end, now);
    assert.deepEqual(first, { state: 'cancelled', retriesUsed: 0, lostCount: 0, runAfter: null, result: { ...end }, outputs: null, event: null });
    const recorded: TaskResult = { ...end };
    const again = planAttemptEnd(running({ state: 'cancelled', result: recorded }), ending('failed'), now);
    assert.equal(again.result, null);
    assert.equal(again.event, null);
    assert.equal(again.state, 'cancelled');
    // Even a lost attempt of a cancelled task ends it without a transition.
    assert.equal(planAttemptEnd(running({ state: 'cancelled' }), ending('lost'), now).event, null);
  });

  it('an attempt that ends after a manual retry (task ready) releases the task and uses no budget', () => {
    for (const outcome of ['succeeded', 'failed', 'lost', 'cancelled'] as const) {
      const plan = planAttemptEnd(running({ state: 'ready', retriesUsed: 0, lostCount: 1 }), ending(outcome), 0);
      assert.equal(plan.state, 'waiting');
      assert.deepEqual([plan.event?.from, plan.event?.to, plan.event?.reason], ['ready', 'waiting', 'released']);
      assert.equal(plan.result, null);
      assert.equal(plan.lostCount, 1, 'a superseded attempt uses neither a retry nor the lost budget');
    }
  });

  it('refuses an end for a task that is not running, cancelled or waiting for it (ready)', () => {
    for (const state of ['waiting', 'retrying', 'succeeded', 'failed'] as const) {
      assert.throws(() => planAttemptEnd(running({ state }), ending('succeeded'), 0), new RegExp(state));
    }
  });

  it('does not alias the input', () => {
    const end = ending('succeeded');
    const plan = planAttemptEnd(running(), end, 0);
    assert.notEqual(plan.result, end);
  });
});
