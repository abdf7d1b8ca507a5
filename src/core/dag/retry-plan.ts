/**
 * `drover dag retry RUN` as a pure plan: the failed and cancelled steps and
 * those skipped because of them (`upstream_failed`) go back to `ready` with a
 * fresh retry budget; the succeeded ones are kept (their outputs too), and so
 * are steps skipped only because a condition was not met (they would be
 * decided the same way again). The reset steps are
 * then decided in topological order as at a run's start (release.ts
 * settleAll): those whose dependencies all succeeded are released at once,
 * the others wait for the steps upstream of them to run again.
 *
 * Refused (ConflictError, the reason said) while the run is still going, or
 * when there is nothing to retry. A step whose old attempt is still stopping
 * (a cancelled run whose worker has not reported yet) also refuses the
 * retry: the store checks that, since only it knows the attempts.
 */
import { ConflictError } from '../errors.js';
import type { DagGraph } from './dag-graph.js';
import { settleAll, type RunState, type StepStatus, type StepWrite } from './release.js';

export interface DagRetryPlan {
  /** Step indexes that go back to `ready` (manual_retry), ascending. */
  reset: number[];
  /** Then, in order: the releases and skips of the reset steps. */
  writes: StepWrite[];
}

export function planDagRetry(runId: string, runState: RunState, graph: DagGraph, statuses: readonly StepStatus[]): DagRetryPlan {
  if (runState === 'running') throw new ConflictError(`DAG run ${runId} is still running; cancel it first, or wait until it ends`);
  const reset: number[] = [];
  const next = statuses.map((s, i) => {
    if (s.state === 'failed' || s.state === 'cancelled' || (s.state === 'skipped' && s.skipReason === 'upstream_failed')) {
      reset.push(i);
      return { state: 'ready' as const, skipReason: null };
    }
    return s;
  });
  if (reset.length === 0) throw new ConflictError(`DAG run ${runId} has no failed or cancelled step (nor one skipped because of them) to retry`);
  return { reset, writes: settleAll(graph, next) };
}
