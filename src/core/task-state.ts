/**
 * The task state machine (design.md, "Task states"), as a pure transition table.
 *
 *   ready ──► waiting ──► running ──► succeeded
 *     │          ▲           │
 *     │          │           ├─(attempt failed, retries left)──► retrying ──(backoff)──┐
 *     │          │◄──────────┼──────────────────────────────────────────────────────────┘
 *     │          │           ├─(attempt failed, none left)────► failed
 *     │          │           ├─(could not start: start_failed, no retry)──► failed
 *     │          └───────────┴─(worker lost, or a queued attempt given back unstarted: no retry used)
 *     ├──────────────── cancelled (from any non-terminal state)
 *     └─(a DAG step whose dependencies rule it out: core/dag/release.ts)──► skipped
 *
 * A DAG step waits in `ready` (no runAfter) until its dependencies have ended;
 * the transaction that ends the last of them releases it (ready ──► waiting)
 * or skips it (ready ──► skipped, a terminal state with a skip reason).
 *
 * A task submitted to run later (runAt/delay) is stored `ready` with a runAfter; the
 * scheduler releases it (`released`, ready ──► waiting) when that time comes.
 *
 * Plus the one edge an operator adds by hand: `failed`/`cancelled` ──(retry)──► `waiting`
 * with a fresh retry budget; or ──► `ready` while the task's previous attempt
 * still runs (core/cancel-plan.ts), released to `waiting` when that attempt ends.
 *
 * Every stored transition goes through `assertTransition`, so an edge missing
 * here cannot happen in any store.
 */
import { IllegalTransitionError } from './errors.js';

export const TASK_STATES = ['ready', 'waiting', 'running', 'retrying', 'succeeded', 'failed', 'cancelled', 'skipped'] as const;
export type TaskState = (typeof TASK_STATES)[number];

export const TERMINAL_STATES: ReadonlySet<TaskState> = new Set(['succeeded', 'failed', 'cancelled', 'skipped']);

/**
 * The states a task list can be read newest end first (`order: 'ended'`):
 * only these are indexed by end (store/task-list.ts says why).
 */
export const ENDED_ORDER_STATES: readonly TaskState[] = ['failed', 'cancelled'];

/** Why a transition happened; stored on every event row. */
export const TRANSITION_REASONS = [
  'submitted',
  'released',
  'claimed',
  'attempt_succeeded',
  'attempt_failed',
  'attempt_timed_out',
  'retries_exhausted',
  'start_failed',
  'backoff_elapsed',
  'worker_lost',
  'returned',
  'lost_cap_exceeded',
  'cancel_requested',
  'manual_retry',
  'step_skipped',
] as const;
export type TransitionReason = (typeof TRANSITION_REASONS)[number];

type Table = Record<TaskState, Partial<Record<TaskState, readonly TransitionReason[]>>>;

/** from → to → the reasons that may move a task along that edge. */
export const TRANSITIONS: Table = {
  ready: { waiting: ['released'], cancelled: ['cancel_requested'], skipped: ['step_skipped'] },
  waiting: { running: ['claimed'], cancelled: ['cancel_requested'] },
  running: {
    succeeded: ['attempt_succeeded'],
    retrying: ['attempt_failed', 'attempt_timed_out'],
    failed: ['retries_exhausted', 'lost_cap_exceeded', 'start_failed'],
    waiting: ['worker_lost', 'returned'],
    cancelled: ['cancel_requested'],
  },
  retrying: { waiting: ['backoff_elapsed'], cancelled: ['cancel_requested'] },
  succeeded: {},
  failed: { waiting: ['manual_retry'], ready: ['manual_retry'] },
  cancelled: { waiting: ['manual_retry'], ready: ['manual_retry'] },
  // A DAG retry (core/dag/retry-plan.ts) puts a skipped step back to pending.
  skipped: { ready: ['manual_retry'] },
};

export function isTerminal(state: TaskState): boolean {
  return TERMINAL_STATES.has(state);
}

export function canTransition(from: TaskState, to: TaskState, reason: TransitionReason): boolean {
  return TRANSITIONS[from][to]?.includes(reason) ?? false;
}

/** Throws IllegalTransitionError unless `from → to` for `reason` is in the table. */
export function assertTransition(from: TaskState, to: TaskState, reason: TransitionReason): void {
  if (!canTransition(from, to, reason)) throw new IllegalTransitionError(from, to, reason);
}

export function isTaskState(s: string): s is TaskState {
  return (TASK_STATES as readonly string[]).includes(s);
}
