/**
 * DAG runs on the live stream. The stream carries tasks only; a summary with
 * a `dagRunId` is a step of that run, so:
 * - a run's detail in the cache (`['dag-runs','detail',id]`, the run page):
 *   the step whose task it is takes the summary's state, attempts and skip
 *   reason at once (the node changes within the batch), and the counts
 *   follow; then the detail is refetched, debounced per run, for what a
 *   summary does not say: times, the run's own state, the critical path.
 *   The wait is short (150 ms, at least every 600 ms) so the Gantt follows
 *   within a second; a run of more than 200 steps refetches at most every
 *   2 s, since each answer is a few hundred kB and the states are patched
 *   anyway;
 * - run lists (`['dag-runs','list',…]`, a DAG's page): refetched, debounced
 *   (0.4 s, at least every 1.5 s).
 * A patch from an older summary can land after a newer refetch; the refetch
 * that summary also triggers puts it right within the debounce.
 */
import type { QueryClient } from '@tanstack/react-query';
import { qk } from '../api/query-keys';
import type { DagRunDetail, TaskState, TaskSummary } from '../api/types';
import { debouncer } from './debouncer';

const BIG_RUN_STEPS = 200;

export class DagRunPatcher {
  private readonly refetches = new Map<string, ReturnType<typeof debouncer>>();
  private readonly lists;

  constructor(private readonly qc: QueryClient) {
    this.lists = debouncer(() => void qc.invalidateQueries({ queryKey: qk.dagRunLists }), 400, 1500);
  }

  apply(tasks: readonly TaskSummary[]): void {
    const byRun = new Map<string, TaskSummary[]>();
    for (const t of tasks) {
      if (!t.dagRunId) continue;
      const list = byRun.get(t.dagRunId);
      if (list) list.push(t);
      else byRun.set(t.dagRunId, [t]);
    }
    if (byRun.size === 0) return;
    for (const [runId, ts] of byRun) this.patchRun(runId, ts);
    this.lists.trigger();
  }

  dispose(): void {
    this.lists.cancel();
    for (const d of this.refetches.values()) d.cancel();
    this.refetches.clear();
  }

  private patchRun(runId: string, tasks: readonly TaskSummary[]): void {
    const key = qk.dagRunDetail(runId);
    const cur = this.qc.getQueryData<DagRunDetail>(key);
    if (!cur) return;
    const byTask = new Map(tasks.map((t) => [t.id, t]));
    let changed = false;
    const steps = cur.steps.map((s) => {
      const t = byTask.get(s.taskId);
      if (!t || (t.state === s.state && t.attempts === s.attempts && t.skipReason === s.skipReason)) return s;
      changed = true;
      return { ...s, state: t.state, attempts: t.attempts, skipReason: t.skipReason };
    });
    if (changed) {
      const counts: Partial<Record<TaskState, number>> = {};
      for (const s of steps) counts[s.state] = (counts[s.state] ?? 0) + 1;
      this.qc.setQueryData<DagRunDetail>(key, { ...cur, steps, counts });
    }
    let refetch = this.refetches.get(runId);
    if (!refetch) {
      const big = cur.steps.length > BIG_RUN_STEPS;
      refetch = debouncer(
        () => {
          this.refetches.delete(runId);
          void this.qc.invalidateQueries({ queryKey: key });
        },
        big ? 500 : 150,
        big ? 2000 : 600,
      );
      this.refetches.set(runId, refetch);
    }
    refetch.trigger();
  }
}
