/** Changed DAG steps (store/dags.ts DagChange) as both stores' progress takes them. */
import type { StepChange } from './dag-progress.js';
import type { DagChange } from './dags.js';

/** Changes grouped by run, runs in id order: the order PostgreSQL locks their rows in (two batches never wait on each other in a cycle). */
export function changesByRun(changes: readonly DagChange[]): Array<[string, StepChange[]]> {
  const byRun = new Map<string, StepChange[]>();
  for (const c of changes) {
    let s = byRun.get(c.runId);
    if (!s) byRun.set(c.runId, (s = []));
    s.push({ step: c.step, state: c.state });
  }
  return [...byRun.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

