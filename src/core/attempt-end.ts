/**
 * What happens to a task when one of its attempts ends. A pure function of the
 * task as stored and the outcome, so both stores apply identical rules inside
 * their own transaction, and the rules are tested with a fake clock.
 */
import { decideAfterFailure, DEFAULT_MAX_LOST } from './retry-policy.js';
import { assertTransition, type TaskState, type TransitionReason } from './task-state.js';
import type { AttemptOutcome, Task, TaskResult } from './task.js';
import type { TaskOutputs } from './task-outputs.js';

export interface AttemptEndInput {
  outcome: AttemptOutcome;
  attempt: number;
  exitCode: number | null;
  signal: string | null;
  error: string | null;
  durationMs: number | null;
  /**
   * What the process wrote to DROVER_OUTPUT (core/task-outputs.ts), already
   * validated; only a succeeded attempt carries them. Absent or null: none.
   */
  outputs?: TaskOutputs | null;
}

export interface AttemptEndPlan {
  state: TaskState;
  retriesUsed: number;
  lostCount: number;
  runAfter: number | null;
  /** Non-null only when the task's result is recorded now (it happens once). */
  result: TaskResult | null;
  /**
   * Non-null only when the task becomes `succeeded` now and its attempt wrote
   * at least one output: recorded with the result, once. An attempt whose task
   * was cancelled meanwhile (or moved on by a retry) records none: its task did
   * not succeed.
   */
  outputs: TaskOutputs | null;
  /** Null when the task does not change state (it was already cancelled). */
  event: { from: TaskState; to: TaskState; reason: TransitionReason; detail: Record<string, unknown> } | null;
}

export function planAttemptEnd(task: Pick<Task, 'state' | 'retry' | 'retriesUsed' | 'lostCount' | 'result'>, end: AttemptEndInput, now: number, maxLost = DEFAULT_MAX_LOST): AttemptEndPlan {
  const { outputs, ...fields } = end;
  const result: TaskResult = { ...fields };
  const detail: Record<string, unknown> = { attempt: end.attempt, outcome: end.outcome, exitCode: end.exitCode, signal: end.signal };
  if (end.error) detail.error = end.error;
  const same = { retriesUsed: task.retriesUsed, lostCount: task.lostCount, runAfter: null, outputs: null };

  if (task.state === 'cancelled') {
    // Cancel moved the task already; the attempt's end only fills in the result, once.
    return { ...same, state: 'cancelled', result: task.result ? null : result, event: null };
  }
  if (task.state === 'ready') {
    // A manual retry moved the task on while this attempt still ran (see
    // cancel-plan.ts): the attempt ends, uses no budget, records no result,
    // and releases the task to be claimed again.
    assertTransition('ready', 'waiting', 'released');
    return { ...same, state: 'waiting', result: null, event: { from: 'ready', to: 'waiting', reason: 'released', detail: { ...detail, after: 'the previous attempt ended' } } };
  }
  if (task.state !== 'running') {
    throw new Error(`attempt ended for a task in state ${task.state}`);
  }
  const go = (to: TaskState, reason: TransitionReason, extra: Record<string, unknown> = {}) => {
    assertTransition('running', to, reason);
    return { from: 'running' as const, to, reason, detail: { ...detail, ...extra } };
  };

  switch (end.outcome) {
    case 'succeeded': {
      const recorded = outputs && Object.keys(outputs).length > 0 ? outputs : null;
      return { ...same, outputs: recorded, state: 'succeeded', result, event: go('succeeded', 'attempt_succeeded') };
    }
    case 'lost': {
      const lostCount = task.lostCount + 1;
      if (lostCount > maxLost) {
        const r = { ...result, error: `worker lost ${lostCount} times (cap ${maxLost})` };
        return { ...same, lostCount, state: 'failed', result: r, event: go('failed', 'lost_cap_exceeded', { lostCount }) };
      }
      return { ...same, lostCount, state: 'waiting', result: null, event: go('waiting', 'worker_lost', { lostCount }) };
    }
    case 'returned':
      // Given back from the worker's prefetch queue before it started (the server asked: core/task.ts):
      // nothing ran, so neither a retry nor the lost count is used.
      return { ...same, state: 'waiting', result: null, event: go('waiting', 'returned') };
    case 'start_failed':
      // The command could not be started (not found, not executable, missing cwd): another
      // attempt would fail the same way, so no retry is used and the task fails now.
      return { ...same, state: 'failed', result, event: go('failed', 'start_failed') };
    case 'failed':
    case 'timed_out':
    case 'cancelled': {
      // `cancelled` while the task is still running means the worker stopped it on its
      // own (e.g. a drain); it counts as a failed attempt.
      const decision = decideAfterFailure(task.retry, task.retriesUsed);
      if (decision.kind === 'fail') {
        return { ...same, state: 'failed', result, event: go('failed', 'retries_exhausted') };
      }
      const reason = end.outcome === 'timed_out' ? 'attempt_timed_out' : 'attempt_failed';
      return {
        state: 'retrying',
        retriesUsed: decision.retryNumber,
        lostCount: task.lostCount,
        runAfter: now + decision.delayMs,
        result: null,
        outputs: null,
        event: go('retrying', reason, { retry: decision.retryNumber, delayMs: decision.delayMs }),
      };
    }
    default: {
      const never: never = end.outcome;
      throw new Error(`unknown outcome ${String(never)}`);
    }
  }
}
