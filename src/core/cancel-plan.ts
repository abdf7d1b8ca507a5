/**
 * Cancel and manual retry, as pure plans that both stores persist inside one
 * transaction (the stores hold no rule of their own).
 *
 * A cancel is a stored intent: it moves the task to `cancelled` at once and
 * marks its running attempt (if any) with a stop reason. The attempt stays
 * `running` until its worker reports the end (the task then gets its result
 * without a second transition) or its lease expires. Until then every server
 * that hears from the worker (hello, each heartbeat) answers with a stop
 * order for it, so a cancel made while the worker was disconnected still
 * reaches it.
 *
 * A manual retry of a task whose old attempt still runs (cancelled, worker not
 * yet reported) keeps the old attempt's stop order and does not end it: the
 * task goes to `ready` (accepted, not yet eligible), and the old attempt's end
 * (reported, or its lease expired) releases it to `waiting`
 * (core/attempt-end.ts), so two runs never overlap and the claim needs no
 * extra test.
 */
import { ConflictError } from './errors.js';
import { assertTransition, isTerminal, type TaskState, type TransitionReason } from './task-state.js';
import type { Task } from './task.js';

export interface PlannedEvent {
  from: TaskState;
  to: TaskState;
  reason: TransitionReason;
  detail: Record<string, unknown> | null;
}

/** The attempt a plan must stop: it gets `stopReason` and stays running until it ends. */
export interface StopIntent {
  attemptId: number;
  reason: string;
}

export interface CancelPlan {
  event: PlannedEvent;
  stop: StopIntent | null;
}

export const CANCEL_STOP_REASON = 'task cancelled';

/** `running`: the task's current attempt if it is still running. Throws ConflictError for a terminal task. */
export function planCancel(task: Pick<Task, 'id' | 'state'>, running: { id: number } | null): CancelPlan {
  if (isTerminal(task.state)) throw new ConflictError(`task ${task.id} is ${task.state}; only a task that has not ended can be cancelled`);
  assertTransition(task.state, 'cancelled', 'cancel_requested');
  const stop = running ? { attemptId: running.id, reason: CANCEL_STOP_REASON } : null;
  return { event: { from: task.state, to: 'cancelled', reason: 'cancel_requested', detail: running ? { attemptId: running.id } : null }, stop };
}

export interface RetryPlan {
  event: PlannedEvent;
  /** The old attempt still running: it keeps (or gets) a stop order, and blocks claims until it ends. */
  stop: StopIntent | null;
}

export function planRetry(task: Pick<Task, 'id' | 'state' | 'result'>, running: { id: number; stopReason: string | null } | null): RetryPlan {
  if (task.state !== 'failed' && task.state !== 'cancelled') {
    throw new ConflictError(`task ${task.id} is ${task.state}; only a failed or cancelled task can be retried`);
  }
  const to = running ? 'ready' : 'waiting';
  assertTransition(task.state, to, 'manual_retry');
  // The previous result is cleared on the task; the event keeps it in the history.
  const detail: Record<string, unknown> = { previousResult: task.result ?? null };
  if (running) detail.waitsForAttemptId = running.id;
  return {
    event: { from: task.state, to, reason: 'manual_retry', detail },
    stop: running ? { attemptId: running.id, reason: running.stopReason ?? 'superseded by a manual retry' } : null,
  };
}
