/**
 * Applies the live stream to the TanStack Query caches (one instance per tab):
 * - task lists (`['tasks','list',filter]`): rows patched in place by id, new
 *   matching tasks merged into first pages (patch-lists.ts);
 * - task detail (`['tasks','detail',id]`): the summary's fields are copied in
 *   at once (the state badge changes within the batch), then the detail is
 *   refetched, throttled per task, for its attempts and events;
 * - counts by state: refetched, debounced (0.4 s, at least every 1 s);
 * - per-minute stats: refetched, debounced (5 s, at least every 15 s);
 * - workers (`['workers']`): rows replaced or added by id; a task starting or
 *   leaving `running` refetches the list (its slots and running attempts);
 * - schedules (`['schedules',...]`): a change to a task a schedule made
 *   refetches them, debounced (0.3 s, at least every 1 s);
 * - DAG runs (`['dag-runs',...]`): a change to a step's task patches its
 *   run's detail and refetches it and the run lists (dag-run-patcher.ts).
 * `reset` (the stream's cursor expired) invalidates everything: every active
 * query refetches and the stream continues from the head.
 */
import type { QueryClient } from '@tanstack/react-query';
import { qk } from '../api/query-keys';
import type { ListTasksQuery, TaskDetail, TaskSummary, WorkerInfo } from '../api/types';
import { debouncer } from './debouncer';
import { DagRunPatcher } from './dag-run-patcher';
import { patchTaskPage, type LivePage } from './patch-lists';

const DEFAULT_LIMIT = 50;
const DETAIL_REFETCH_MS = 250;

export class CachePatcher {
  private readonly counts;
  private readonly minutes;
  private readonly workers;
  private readonly schedules;
  private readonly dagRuns;
  private readonly detailTimers = new Map<string, ReturnType<typeof setTimeout>>();

  constructor(private readonly qc: QueryClient) {
    this.counts = debouncer(() => void qc.invalidateQueries({ queryKey: qk.counts }), 400, 1000);
    this.minutes = debouncer(() => void qc.invalidateQueries({ queryKey: qk.minutes }), 5000, 15000);
    this.workers = debouncer(() => void qc.invalidateQueries({ queryKey: qk.workers }), 500, 1500);
    this.schedules = debouncer(() => void qc.invalidateQueries({ queryKey: qk.schedules }), 300, 1000);
    this.dagRuns = new DagRunPatcher(qc);
  }

  applyChanges(tasks: readonly TaskSummary[], workers: readonly WorkerInfo[]): void {
    if (tasks.length > 0) this.applyTasks(tasks);
    if (workers.length > 0) this.applyWorkers(workers);
  }

  /** Everything may be out of date: refetch what is shown, mark the rest stale. */
  reset(): void {
    void this.qc.invalidateQueries();
  }

  /** The first `hello` of this tab: anything fetched before the stream's start position may have missed a change. */
  refetchOlderThan(at: number): void {
    void this.qc.invalidateQueries({ predicate: (q) => q.queryKey[0] !== 'me' && q.state.dataUpdatedAt > 0 && q.state.dataUpdatedAt < at });
  }

  dispose(): void {
    this.counts.cancel();
    this.minutes.cancel();
    this.workers.cancel();
    this.schedules.cancel();
    this.dagRuns.dispose();
    for (const t of this.detailTimers.values()) clearTimeout(t);
    this.detailTimers.clear();
  }

  private applyTasks(tasks: readonly TaskSummary[]): void {
    const byId = new Map(tasks.map((t) => [t.id, t]));
    for (const q of this.qc.getQueryCache().findAll({ queryKey: qk.taskLists })) {
      const page = q.state.data as LivePage | undefined;
      if (!page) continue;
      const filter = (q.queryKey[2] ?? {}) as ListTasksQuery;
      const next = patchTaskPage(page, filter, byId, filter.limit ?? DEFAULT_LIMIT);
      if (next) this.qc.setQueryData(q.queryKey, next);
    }
    let runningChanged = false;
    for (const t of tasks) {
      this.patchDetail(t);
      if (t.state === 'running' || t.startedAt !== null) runningChanged = true;
    }
    this.counts.trigger();
    this.minutes.trigger();
    if (runningChanged) this.workers.trigger();
    if (tasks.some((t) => t.scheduleId !== null && t.scheduleId !== undefined)) this.schedules.trigger();
    this.dagRuns.apply(tasks);
  }

  private patchDetail(t: TaskSummary): void {
    const key = qk.taskDetail(t.id);
    const cur = this.qc.getQueryData<TaskDetail>(key);
    if (!cur) return;
    if (t.updatedAt >= cur.task.updatedAt) {
      this.qc.setQueryData<TaskDetail>(key, {
        ...cur,
        task: { ...cur.task, state: t.state, attempts: t.attempts, retriesUsed: t.retriesUsed, updatedAt: t.updatedAt, runAfter: t.runAfter, skipReason: t.skipReason ?? null },
      });
    }
    if (this.detailTimers.has(t.id)) return;
    this.detailTimers.set(
      t.id,
      setTimeout(() => {
        this.detailTimers.delete(t.id);
        void this.qc.invalidateQueries({ queryKey: key });
      }, DETAIL_REFETCH_MS),
    );
  }

  private applyWorkers(workers: readonly WorkerInfo[]): void {
    const cur = this.qc.getQueryData<{ workers: WorkerInfo[] }>(qk.workers);
    if (!cur) return;
    const byId = new Map(workers.map((w) => [w.id, w]));
    const rows = cur.workers.map((w) => byId.get(w.id) ?? w);
    for (const w of workers) if (!cur.workers.some((c) => c.id === w.id)) rows.push(w);
    this.qc.setQueryData(qk.workers, { workers: rows });
  }
}
