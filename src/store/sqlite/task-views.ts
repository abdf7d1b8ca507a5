/**
 * Read models on SQLite (store/task-views.ts): summary pages, counts from the
 * counters, minute stats, running attempts. The SQL builders are exported so
 * that test/store/query-plans.test.ts explains the very queries run here.
 */
import type { TaskState } from '../../core/task-state.js';
import type { TaskFilter } from '../tasks.js';
import type { MinuteStat, RunningAttemptView, TaskSummary, TaskSummaryPage, TaskViewStore } from '../task-views.js';
import { checkSummaryIds, SUMMARY_FROM, summaryColumns, taskListOrder, taskListSql, taskPageOf } from '../task-list.js';
import { countsOf, minuteFloor, minuteStatFromRow, runningAttemptFromRow, taskSummaryFromRow, type MinuteStatRow, type RunningAttemptRow, type TaskSummaryRow } from '../rows.js';
import type { SqliteDb } from './db.js';
import { checkLimit, sqliteLimit } from './records.js';

const SUMMARY_COLUMNS = summaryColumns("json_extract(t.result, '$.error')", "json_extract(t.result, '$.outcome')");

/** A list query with positional parameters. */
export interface SqliteQuery {
  sql: string;
  params: unknown[];
}

/** listTasks (`*` of tasks) or listTaskSummaries (summary columns joined with the current attempt). */
export function sqliteTaskListQuery(filter: TaskFilter, shape: 'tasks' | 'summaries'): SqliteQuery {
  const params: unknown[] = [];
  const param = (v: unknown) => {
    params.push(v);
    return '?';
  };
  const columns = shape === 'tasks' ? 't.*' : SUMMARY_COLUMNS;
  const from = shape === 'tasks' ? 'tasks t' : SUMMARY_FROM;
  if (filter.namePrefix !== undefined && filter.namePrefix !== '') {
    // A name range cannot be read in id order, so its rows are sorted. Sorting
    // whole rows read from the table (and joined) costs a table lookup per
    // matching row: 82 ms for a prefix matching 22,000 of 1,000,000 tasks. The
    // page's ids are found first from the covering (owner, name, id) / (name, id)
    // index, and only those rows are read: 1.4 ms.
    const ids = taskListSql(filter, 't.id', 'tasks t', param, sqliteLimit);
    return { sql: `SELECT ${columns} FROM ${from} WHERE t.id IN (${ids}) ORDER BY ${taskListOrder(filter)}`, params };
  }
  return { sql: taskListSql(filter, columns, from, param, sqliteLimit), params };
}

/** The summary columns in their SELECT order (task-list.ts summaryColumns), as summaryFromArray reads them. */
const SUMMARY_NAMES = [
  'id', 'owner', 'name', 'kind', 'state', 'priority', 'attempts', 'retries_used', 'run_after', 'created_at', 'updated_at',
  'schedule_id', 'scheduled_at', 'dag_run_id', 'dag_step', 'skip_reason',
  'worker_id', 'started_at', 'ended_at', 'duration_ms', 'exit_code', 'signal', 'error', 'outcome',
] as const;
const checkedStatements = new WeakSet<object>();

/**
 * A summary page's rows, read in raw mode (arrays; about a quarter of the
 * query's time at 50 rows is building row objects that are then copied into
 * TaskSummary anyway). The statement's column names are checked against
 * SUMMARY_NAMES once per statement, so a change of summaryColumns cannot
 * shift fields silently.
 */
function summaryRows(d: SqliteDb, q: SqliteQuery): TaskSummary[] {
  const stmt = d.qRaw(q.sql);
  if (!checkedStatements.has(stmt)) {
    const names = stmt.columns().map((c) => c.name);
    if (names.length !== SUMMARY_NAMES.length || names.some((n, i) => n !== SUMMARY_NAMES[i])) {
      throw new Error(`summary columns are [${names.join(', ')}], expected [${SUMMARY_NAMES.join(', ')}]`);
    }
    checkedStatements.add(stmt);
  }
  return (stmt.all(...q.params) as unknown[][]).map(summaryFromArray);
}

function summaryFromArray(r: unknown[]): TaskSummary {
  return taskSummaryFromRow({
    id: r[0], owner: r[1], name: r[2], kind: r[3], state: r[4], priority: r[5], attempts: r[6], retries_used: r[7], run_after: r[8],
    created_at: r[9], updated_at: r[10], schedule_id: r[11], scheduled_at: r[12], dag_run_id: r[13], dag_step: r[14], skip_reason: r[15],
    worker_id: r[16], started_at: r[17], ended_at: r[18], duration_ms: r[19], exit_code: r[20], signal: r[21], error: r[22], outcome: r[23],
  } as TaskSummaryRow);
}

export const VIEW_SQL = {
  summariesOf: `SELECT ${SUMMARY_COLUMNS} FROM ${SUMMARY_FROM} WHERE t.id IN (SELECT value FROM json_each(?))`,
  countsAll: 'SELECT state, sum(n) AS n FROM task_counts GROUP BY state',
  countsOwner: 'SELECT state, sum(n) AS n FROM task_counts WHERE owner = ? GROUP BY state',
  minutes: (owner: boolean) =>
    `SELECT minute, sum(started) AS started, sum(succeeded) AS succeeded, sum(failed) AS failed, sum(cancelled) AS cancelled,
       sum(latency_count) AS latency_count, sum(latency_sum_ms) AS latency_sum_ms, max(latency_max_ms) AS latency_max_ms
     FROM task_minutes WHERE ${owner ? 'owner = ? AND ' : ''}minute >= ? AND minute < ? GROUP BY minute ORDER BY minute`,
  running: (worker: boolean) =>
    `SELECT a.id AS attempt_id, a.task_id, t.name AS task_name, t.owner, a.worker_id, a.started_at
     FROM attempts a JOIN tasks t ON t.id = a.task_id
     WHERE a.state = 'running'${worker ? ' AND a.worker_id = ?' : ''} ORDER BY a.started_at, a.id`,
};

export function sqliteTaskViews(d: SqliteDb): TaskViewStore {
  return {
    async listTaskSummaries(filter: TaskFilter): Promise<TaskSummaryPage> {
      checkLimit(filter.limit);
      const q = sqliteTaskListQuery(filter, 'summaries');
      return d.read(() => {
        const { items, nextCursor } = taskPageOf(summaryRows(d, q), filter);
        return { tasks: items, nextCursor };
      });
    },

    async getTaskSummaries(ids: readonly string[]): Promise<TaskSummary[]> {
      checkSummaryIds(ids);
      if (ids.length === 0) return [];
      return d.read(() => summaryRows(d, { sql: VIEW_SQL.summariesOf, params: [JSON.stringify(ids)] }));
    },

    // Read from task_counts, kept by triggers in the writing transaction (migrations.ts). Measured (issue 9):
    // the counter and per-minute triggers are about 10 % of the SQLite drain; kept, since counts updated
    // elsewhere (batched later, or scanned at read time) would drift from the rows or cost the dashboard a scan.
    async countTasksByState(owner?: string): Promise<Record<TaskState, number>> {
      return d.read(() => countsOf((owner === undefined ? d.q(VIEW_SQL.countsAll).all() : d.q(VIEW_SQL.countsOwner).all(owner)) as Array<{ state: string; n: number }>));
    },

    async minuteStats(since: number, until: number, owner?: string): Promise<MinuteStat[]> {
      return d.read(() => {
        const from = minuteFloor(since);
        const rows = (owner === undefined ? d.q(VIEW_SQL.minutes(false)).all(from, until) : d.q(VIEW_SQL.minutes(true)).all(owner, from, until)) as MinuteStatRow[];
        return rows.map(minuteStatFromRow);
      });
    },

    async runningAttempts(workerId?: string): Promise<RunningAttemptView[]> {
      return d.read(() =>
        ((workerId === undefined ? d.q(VIEW_SQL.running(false)).all() : d.q(VIEW_SQL.running(true)).all(workerId)) as RunningAttemptRow[]).map(runningAttemptFromRow),
      );
    },

    async pruneMinuteStats(before: number): Promise<number> {
      return d.write(() => d.q('DELETE FROM task_minutes WHERE minute < ?').run(before).changes);
    },

    async foldCounters(_since: number): Promise<number> {
      return 0;
    },
  };
}
