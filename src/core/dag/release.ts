/**
 * When a DAG step may run (issue 12): pure decisions from the states of its
 * dependencies, applied by the stores inside the transaction that ended a
 * step, so a run's progress is never kept in memory and never decided twice.
 *
 * A step's task is created `ready` (pending) unless it has no dependencies
 * (then `waiting`). While it is `ready` its fate is open; decideStep closes it:
 *   release  ready ──(released)──► waiting: it will be claimed like any task;
 *   skip     ready ──(skipped)───► skipped, with a SkipReason;
 *   wait     nothing yet.
 * Each dependency counts as one of:
 *   pending  not ended (ready, waiting, running, retrying);
 *   success  succeeded;
 *   failure  failed, cancelled, or skipped because something upstream failed
 *            (`upstream_failed`): a failure travels down a chain of skips, so a
 *            `when: failure` step after a skipped one still sees it;
 *   skipped  skipped for another reason (a condition not met upstream).
 * and the step's condition decides:
 *   success  any failure → skip (upstream_failed) at once, whatever else is
 *            pending (the condition can no longer hold); else wait while any
 *            is pending; else any skipped → skip (upstream_skipped); else release;
 *   failure  wait while any is pending; then release if any failed, else skip
 *            (condition_not_met);
 *   always   wait while any is pending; then release.
 *
 * settle() applies decideStep from a set of steps whose state changed, and
 * follows skips down the graph (a skipped step is an ended dependency too),
 * so one call answers every write the change implies: a list of writes, not
 * one task. runOutcome() says how a run ends once every step has.
 */
import type { TaskState } from '../task-state.js';
import type { DagGraph, StepCondition } from './dag-graph.js';

export const SKIP_REASONS = ['upstream_failed', 'upstream_skipped', 'condition_not_met'] as const;
export type SkipReason = (typeof SKIP_REASONS)[number];

/** A step as the decisions see it: its task's state, and why it was skipped (null unless skipped). */
export interface StepStatus {
  state: TaskState;
  skipReason: SkipReason | null;
}

export type DependencyClass = 'pending' | 'success' | 'failure' | 'skipped';

export function classify(s: StepStatus): DependencyClass {
  switch (s.state) {
    case 'succeeded':
      return 'success';
    case 'failed':
    case 'cancelled':
      return 'failure';
    case 'skipped':
      return s.skipReason === 'upstream_failed' ? 'failure' : 'skipped';
    default:
      return 'pending';
  }
}

export type StepDecision =
  | { action: 'wait' }
  | { action: 'release' }
  /** `because`: the dependency that decided it (the first in depends_on order with that class); null for condition_not_met. */
  | { action: 'skip'; reason: SkipReason; because: string | null };

/** The decision for one pending step; `deps` in its depends_on order. */
export function decideStep(when: StepCondition, deps: ReadonlyArray<{ name: string; status: StepStatus }>): StepDecision {
  const first = (c: DependencyClass) => deps.find((d) => classify(d.status) === c);
  switch (when) {
    case 'success': {
      const failed = first('failure');
      if (failed) return { action: 'skip', reason: 'upstream_failed', because: failed.name };
      if (first('pending')) return { action: 'wait' };
      const skipped = first('skipped');
      if (skipped) return { action: 'skip', reason: 'upstream_skipped', because: skipped.name };
      return { action: 'release' };
    }
    case 'failure': {
      if (first('pending')) return { action: 'wait' };
      const failed = first('failure');
      return failed ? { action: 'release' } : { action: 'skip', reason: 'condition_not_met', because: null };
    }
    case 'always':
      return first('pending') ? { action: 'wait' } : { action: 'release' };
    default: {
      const never: never = when;
      throw new Error(`unknown step condition ${String(never)}`);
    }
  }
}

/** One write settle() asks for: the step (index) leaves `ready`. */
export type StepWrite = { step: number; action: 'release' } | { step: number; action: 'skip'; reason: SkipReason; because: string | null };

/**
 * The writes that follow from the steps in `changed` having their current
 * states in `statuses` (by step index): each pending dependent of a changed
 * step is decided; a skip is itself a change, so its dependents are decided
 * in turn. `statuses` is not modified. Each step is written at most once: a
 * decided step is no longer `ready`.
 */
export function settle(graph: DagGraph, statuses: readonly StepStatus[], changed: Iterable<number>): StepWrite[] {
  const now = statuses.slice();
  const writes: StepWrite[] = [];
  const queue = [...changed];
  for (let head = 0; head < queue.length; head++) {
    for (const d of graph.dependents[queue[head]!]!) {
      const w = decide(graph, now, d);
      if (!w) continue;
      writes.push(w);
      if (w.action === 'skip') queue.push(d);
    }
  }
  return writes;
}

/**
 * Decides pending step `i` against `now` (updated in place with the decision):
 * null when it is not pending or must wait.
 */
function decide(graph: DagGraph, now: StepStatus[], i: number): StepWrite | null {
  if (now[i]!.state !== 'ready') return null;
  const step = graph.steps[i]!;
  const d = decideStep(
    step.when,
    graph.deps[i]!.map((j) => ({ name: graph.steps[j]!.name, status: now[j]! })),
  );
  if (d.action === 'wait') return null;
  if (d.action === 'release') {
    now[i] = { state: 'waiting', skipReason: null };
    return { step: i, action: 'release' };
  }
  now[i] = { state: 'skipped', skipReason: d.reason };
  return { step: i, action: 'skip', reason: d.reason, because: d.because };
}

/**
 * The pending steps of `statuses` decided in topological order (each sees the
 * decisions of the steps before it): what a run's start and a retry write
 * after resetting steps to `ready`. Roots (no dependencies) are released.
 */
export function settleAll(graph: DagGraph, statuses: readonly StepStatus[]): StepWrite[] {
  const now = statuses.slice();
  const writes: StepWrite[] = [];
  for (const i of graph.order) {
    const w = decide(graph, now, i);
    if (w) writes.push(w);
  }
  return writes;
}

export type RunState = 'running' | 'succeeded' | 'failed' | 'cancelled';
export const RUN_STATES: readonly RunState[] = ['running', 'succeeded', 'failed', 'cancelled'];

/**
 * How a run ends once every step has: `failed` if any step failed or was
 * cancelled (a `when: failure` step that then succeeded does not change
 * that), else `succeeded` (skips whose condition was not met are not
 * failures). Null while any step has not ended. A cancelled run is ended by
 * its cancel, not here.
 */
export function runOutcome(statuses: readonly StepStatus[]): 'succeeded' | 'failed' | null {
  let failed = false;
  for (const s of statuses) {
    const c = classify(s);
    if (c === 'pending') return null;
    if (s.state === 'failed' || s.state === 'cancelled') failed = true;
  }
  return failed ? 'failed' : 'succeeded';
}
