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
 *
 * A fetch in flight when a change arrives may have read the store before the
 * change was committed; its answer would then overwrite the patch (or, for a
 * first fetch, arrive without the row at all) and the page would miss the
 * change until the next one. So task summaries that arrive while a list is
 * fetching are kept and applied again to the fetch's answer when it lands
 * (rows compare by updatedAt, so an older summary never replaces a fresher
 * fetched row); a change to the workers while they are fetching refetches
 * them once that fetch has answered (debounced as above: worker rows carry no
 * version to compare); and a task's detail is refetched even when its first
 * fetch has not answered yet. No fetch in flight is cancelled for this, so a
 * stream of changes during a drain cannot keep a page from ever loading.
 */
import { matchQuery, type Query, type QueryClient } from '@tanstack/react-query';
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
  /** By query hash: task summaries that arrived while that list was fetching, newest per id. */
  private readonly duringFetch = new Map<string, Map<string, TaskSummary>>();
  /** By query hash: fetches in flight at the stream's first `hello`, to be repeated once they answer. */
  private readonly refetchAfterFetch = new Set<string>();
  /** A worker changed while the workers query was fetching. */
  private workersDuringFetch = false;
  private readonly unsubscribe: () => void;

  constructor(private readonly qc: QueryClient) {
    this.unsubscribe = qc.getQueryCache().subscribe((event) => {
      if (event.type === 'removed') {
        this.duringFetch.delete(event.query.queryHash);
        this.refetchAfterFetch.delete(event.query.queryHash);
        return;
      }
      if (event.type !== 'updated') return;
      const action = event.action;
      // `manual` successes are setQueryData calls (this class's own patches), not answers.
      if (action.type === 'success' && action.manual) return;
      if (action.type !== 'success' && action.type !== 'error') return;
      this.fetchEnded(event.query, action.type === 'success');
    });
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

  /**
   * The first `hello` of this tab: anything fetched before the stream's start position may have missed a change.
   * That includes a fetch still in flight, which may have read the store before the stream began: it is refetched
   * once it answers.
   */
  refetchOlderThan(at: number): void {
    for (const q of this.qc.getQueryCache().getAll()) {
      if (q.queryKey[0] !== 'me' && q.state.fetchStatus === 'fetching') this.refetchAfterFetch.add(q.queryHash);
    }
    void this.qc.invalidateQueries({ predicate: (q) => q.queryKey[0] !== 'me' && q.state.dataUpdatedAt > 0 && q.state.dataUpdatedAt < at });
  }

  dispose(): void {
    this.unsubscribe();
    this.duringFetch.clear();
    this.refetchAfterFetch.clear();
    this.workersDuringFetch = false;
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
      if (q.state.fetchStatus === 'fetching') {
        const kept = this.duringFetch.get(q.queryHash) ?? new Map<string, TaskSummary>();
        for (const t of tasks) {
          const had = kept.get(t.id);
          if (!had || had.updatedAt <= t.updatedAt) kept.set(t.id, t);
        }
        this.duringFetch.set(q.queryHash, kept);
      }
      this.patchList(q.queryKey, byId);
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

  /** Applies `byId` to one cached task list, when it has a page. */
  private patchList(key: readonly unknown[], byId: ReadonlyMap<string, TaskSummary>): void {
    const page = this.qc.getQueryData<LivePage>(key);
    if (!page) return;
    const filter = (key[2] ?? {}) as ListTasksQuery;
    const next = patchTaskPage(page, filter, byId, filter.limit ?? DEFAULT_LIMIT);
    if (next) this.qc.setQueryData(key, next);
  }

  /** A query's fetch answered (`fetched`) or failed: re-apply what arrived while it was in flight. */
  private fetchEnded(q: Query, fetched: boolean): void {
    if (this.refetchAfterFetch.delete(q.queryHash)) void this.qc.invalidateQueries({ queryKey: q.queryKey, exact: true });
    if (matchQuery({ queryKey: qk.taskLists }, q)) {
      const kept = this.duringFetch.get(q.queryHash);
      if (!kept) return;
      this.duringFetch.delete(q.queryHash);
      if (fetched) this.patchList(q.queryKey, kept);
    } else if (this.workersDuringFetch && matchQuery({ queryKey: qk.workers, exact: true }, q)) {
      this.workersDuringFetch = false;
      this.workers.trigger();
    }
  }

  private patchDetail(t: TaskSummary): void {
    const key = qk.taskDetail(t.id);
    // A detail still on its first fetch is refetched below too: that fetch may predate this change.
    if (!this.qc.getQueryCache().find({ queryKey: key, exact: true })) return;
    const cur = this.qc.getQueryData<TaskDetail>(key);
    if (cur && t.updatedAt >= cur.task.updatedAt) {
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
    if (this.qc.getQueryCache().find({ queryKey: qk.workers, exact: true })?.state.fetchStatus === 'fetching') this.workersDuringFetch = true;
    const cur = this.qc.getQueryData<{ workers: WorkerInfo[] }>(qk.workers);
    if (!cur) return;
    const byId = new Map(workers.map((w) => [w.id, w]));
    const rows = cur.workers.map((w) => byId.get(w.id) ?? w);
    for (const w of workers) if (!cur.workers.some((c) => c.id === w.id)) rows.push(w);
    this.qc.setQueryData(qk.workers, { workers: rows });
  }
}
