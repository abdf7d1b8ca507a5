import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { IllegalTransitionError } from '../../src/core/errors.js';
import {
  assertTransition,
  canTransition,
  isTaskState,
  isTerminal,
  TASK_STATES,
  TERMINAL_STATES,
  TRANSITION_REASONS,
  TRANSITIONS,
  type TaskState,
  type TransitionReason,
} from '../../src/core/task-state.js';

/** Every (from, to, reason) the table allows, flattened. */
const EDGES: Array<[TaskState, TaskState, TransitionReason]> = [];
for (const from of TASK_STATES) {
  for (const [to, reasons] of Object.entries(TRANSITIONS[from]) as Array<[TaskState, readonly TransitionReason[]]>) {
    for (const reason of reasons) EDGES.push([from, to, reason]);
  }
}
const key = (from: string, to: string, reason: string) => `${from}>${to}:${reason}`;
const ALLOWED = new Set(EDGES.map(([f, t, r]) => key(f, t, r)));

describe('task state machine', () => {
  it('is exactly the edges of design.md', () => {
    assert.deepEqual(
      [...ALLOWED].sort(),
      [
        'ready>waiting:released',
        'ready>cancelled:cancel_requested',
        'waiting>running:claimed',
        'waiting>cancelled:cancel_requested',
        'running>succeeded:attempt_succeeded',
        'running>retrying:attempt_failed',
        'running>retrying:attempt_timed_out',
        'running>failed:retries_exhausted',
        'running>failed:lost_cap_exceeded',
        'running>failed:start_failed',
        'running>waiting:worker_lost',
        'running>waiting:returned',
        'running>cancelled:cancel_requested',
        'retrying>waiting:backoff_elapsed',
        'retrying>cancelled:cancel_requested',
        'failed>waiting:manual_retry',
        'cancelled>waiting:manual_retry',
        'failed>ready:manual_retry',
        'cancelled>ready:manual_retry',
        // DAG steps (core/dag/release.ts, retry-plan.ts)
        'ready>skipped:step_skipped',
        'skipped>ready:manual_retry',
      ].sort(),
    );
  });

  it('allows every edge in the table', () => {
    for (const [from, to, reason] of EDGES) {
      assert.equal(canTransition(from, to, reason), true, key(from, to, reason));
      assert.doesNotThrow(() => assertTransition(from, to, reason));
    }
  });

  it('rejects every other (from, to, reason) with IllegalTransitionError', () => {
    let rejected = 0;
    for (const from of TASK_STATES) {
      for (const to of TASK_STATES) {
        for (const reason of TRANSITION_REASONS) {
          if (ALLOWED.has(key(from, to, reason))) continue;
          rejected++;
          assert.equal(canTransition(from, to, reason), false, key(from, to, reason));
          assert.throws(
            () => assertTransition(from, to, reason),
            (e: unknown) => e instanceof IllegalTransitionError && e.from === from && e.to === to && e.reason === reason && e.httpStatus === 409,
          );
        }
      }
    }
    assert.equal(rejected, TASK_STATES.length ** 2 * TRANSITION_REASONS.length - ALLOWED.size);
  });

  it('rejects the edges a bug would most likely take', () => {
    const illegal: Array<[TaskState, TaskState, TransitionReason]> = [
      ['succeeded', 'waiting', 'manual_retry'],
      ['succeeded', 'cancelled', 'cancel_requested'],
      ['failed', 'cancelled', 'cancel_requested'],
      ['cancelled', 'cancelled', 'cancel_requested'],
      ['ready', 'running', 'claimed'],
      ['retrying', 'running', 'claimed'],
      ['waiting', 'succeeded', 'attempt_succeeded'],
      ['running', 'waiting', 'backoff_elapsed'],
      ['running', 'waiting', 'manual_retry'],
      ['running', 'retrying', 'worker_lost'],
      ['running', 'failed', 'attempt_failed'],
      ['retrying', 'failed', 'retries_exhausted'],
      ['waiting', 'waiting', 'released'],
    ];
    for (const [from, to, reason] of illegal) assert.throws(() => assertTransition(from, to, reason), IllegalTransitionError, key(from, to, reason));
    assert.match(new IllegalTransitionError('succeeded', 'waiting', 'manual_retry').message, /succeeded -> waiting \(manual_retry\)/);
  });

  it('has four terminal states; only failed, cancelled and skipped leave them, by manual retry', () => {
    assert.deepEqual([...TERMINAL_STATES].sort(), ['cancelled', 'failed', 'skipped', 'succeeded']);
    for (const s of TASK_STATES) assert.equal(isTerminal(s), ['succeeded', 'failed', 'cancelled', 'skipped'].includes(s), s);
    assert.deepEqual(TRANSITIONS.succeeded, {});
    for (const [from, to, reason] of EDGES) {
      if (isTerminal(from)) assert.ok(['waiting', 'ready'].includes(to) && reason === 'manual_retry', `${from}>${to}:${reason}`);
    }
    // A skipped DAG step goes back to pending only (its run's retry decides it again).
    assert.deepEqual(TRANSITIONS.skipped, { ready: ['manual_retry'] });
  });

  it('skips only a pending (ready) task', () => {
    for (const s of TASK_STATES) assert.equal(canTransition(s, 'skipped', 'step_skipped'), s === 'ready', s);
  });

  it('can cancel every non-terminal state', () => {
    for (const s of TASK_STATES) assert.equal(canTransition(s, 'cancelled', 'cancel_requested'), !isTerminal(s), s);
  });

  it('uses every reason (submitted is the creation event, outside the table)', () => {
    const used = new Set(EDGES.map(([, , r]) => r));
    assert.deepEqual(
      TRANSITION_REASONS.filter((r) => !used.has(r)),
      ['submitted'],
    );
  });

  it('isTaskState recognises exactly the states', () => {
    for (const s of TASK_STATES) assert.equal(isTaskState(s), true);
    for (const s of ['', 'Running', 'done', 'retry', 'lost']) assert.equal(isTaskState(s), false, s);
  });
});
