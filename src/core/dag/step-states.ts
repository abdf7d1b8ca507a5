/**
 * A run's step states as one character per step, in the definition's order:
 * what the run's progress decides from (release.ts), kept on the run's row
 * (dag_runs.step_states) and written in the same transaction as every step
 * change that matters to a decision, so a step's end costs one read of the
 * run's row instead of a read of every step (measured: reading the 1,000
 * step rows of a fan-out's run cost 1.6-4.3 ms per step end on SQLite, which
 * made the fan-out's run 1.3-1.7x slower than the same tasks as one batch).
 *
 *   r  ready: pending, not decided yet
 *   a  released and not ended (waiting, running, retrying)
 *   S  succeeded      F  failed      C  cancelled
 *   U  skipped, upstream_failed
 *   K  skipped, upstream_skipped
 *   N  skipped, condition_not_met
 * Only what a decision reads is kept: a released step's exact state is its
 * task's (waiting, running or retrying all count as pending).
 */
import type { SkipReason, StepStatus } from './release.js';

const SKIP_CODE: Record<SkipReason, string> = { upstream_failed: 'U', upstream_skipped: 'K', condition_not_met: 'N' };
const DECODE: Record<string, StepStatus> = {
  r: { state: 'ready', skipReason: null },
  a: { state: 'waiting', skipReason: null },
  S: { state: 'succeeded', skipReason: null },
  F: { state: 'failed', skipReason: null },
  C: { state: 'cancelled', skipReason: null },
  U: { state: 'skipped', skipReason: 'upstream_failed' },
  K: { state: 'skipped', skipReason: 'upstream_skipped' },
  N: { state: 'skipped', skipReason: 'condition_not_met' },
};

export function stepStateCode(s: StepStatus): string {
  switch (s.state) {
    case 'ready':
      return 'r';
    case 'waiting':
    case 'running':
    case 'retrying':
      return 'a';
    case 'succeeded':
      return 'S';
    case 'failed':
      return 'F';
    case 'cancelled':
      return 'C';
    case 'skipped':
      return SKIP_CODE[s.skipReason ?? 'condition_not_met'];
    default: {
      const never: never = s.state;
      throw new Error(`unknown task state ${String(never)}`);
    }
  }
}

export function encodeStepStates(statuses: readonly StepStatus[]): string {
  return statuses.map(stepStateCode).join('');
}

/** Throws if `text` is not the states of `steps` steps (a corrupt row must not be decided from). */
export function decodeStepStates(text: string, steps: number): StepStatus[] {
  if (text.length !== steps) throw new Error(`step states of ${text.length} steps for a DAG of ${steps}`);
  const out: StepStatus[] = new Array(steps);
  for (let i = 0; i < steps; i++) {
    const s = DECODE[text[i]!];
    if (!s) throw new Error(`unknown step state code ${JSON.stringify(text[i])} at step ${i}`);
    out[i] = s;
  }
  return out;
}
