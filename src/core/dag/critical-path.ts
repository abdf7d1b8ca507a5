/**
 * The critical path of a DAG run (issue 12): the chain of steps that decided
 * how long the run took, so a user sees which step to make faster.
 *
 * Walk back from the step that ended last; from each step, go to the
 * dependency that ended last (the one it actually waited for: a step is
 * released when its last dependency ends); stop at a step with no ended
 * dependency. Steps that have not ended count as ending `now` (a live run's
 * path so far); steps that never started (pending, skipped) are not on it.
 * Ties go to the step listed first in depends_on.
 */
import type { DagGraph } from './dag-graph.js';

export interface StepTiming {
  /** When its first attempt started; null if it never ran. */
  startedAt: number | null;
  /** When it ended (its last attempt's end); null while it runs or if it never ran. */
  endedAt: number | null;
}

/** Step indexes on the critical path, in run order (first step first); empty if nothing ran. */
export function criticalPath(graph: DagGraph, timings: readonly StepTiming[], now: number): number[] {
  const end = (i: number): number | null => {
    const t = timings[i]!;
    if (t.startedAt === null) return null;
    return t.endedAt ?? now;
  };
  let last = -1;
  let lastEnd = -Infinity;
  timings.forEach((_, i) => {
    const e = end(i);
    if (e !== null && e > lastEnd) {
      last = i;
      lastEnd = e;
    }
  });
  if (last < 0) return [];
  const path = [last];
  for (let at = last; ; ) {
    let pick = -1;
    let pickEnd = -Infinity;
    for (const d of graph.deps[at]!) {
      const e = end(d);
      if (e !== null && e > pickEnd) {
        pick = d;
        pickEnd = e;
      }
    }
    if (pick < 0) break;
    path.push(pick);
    at = pick;
  }
  return path.reverse();
}
