/**
 * Read models on PostgreSQL (store/task-views.ts): summary pages, counts from
 * the sharded counters, minute stats, running attempts. The SQL builders are
 * exported so that test/store/query-plans.test.ts explains the very queries
 * run here.
 */
import type { TaskState } from '../../core/task-state.js';
import type { TaskFilter } from '../tasks.js';
import type { MinuteStat, RunningAttemptView, TaskSummary, TaskSummaryPage, TaskViewStore } from '../task-views.js';
import { checkSummaryIds, SUMMARY_FROM, summaryColumns, taskListSql, taskPageOf } from '../task-list.js';
import { countsOf, minuteFloor, minuteStatFromRow, runningAttemptFromRow, taskSummaryFromRow, type MinuteStatRow, type RunningAttemptRow, type TaskSummaryRow } from '../rows.js';
import type { Db } from './db.js';
import { checkLimit } from './sql.js';

const SUMMARY_COLUMNS = summaryColumns("(t.result::json ->> 'error')", "(t.result::json ->> 'outcome')");

export interface PostgresQuery {
  sql: string;
  params: unknown[];
}

/** listTasks (`*` of tasks) or listTaskSummaries (summary columns joined with the current attempt). */
export function postgresTaskListQuery(filter: TaskFilter, shape: 'tasks' | 'summaries'): PostgresQuery {
  const params: unknown[] = [];
  const param = (v: unknown) => {
    params.push(v);
    return `$${params.length}`;
  };
  const sql = shape === 'tasks' ? taskListSql(filter, 't.*', 'tasks t', param) : taskListSql(filter, SUMMARY_COLUMNS, SUMMARY_FROM, param);
  return { sql, params };
}

/** sum() of BIGINT is NUMERIC (a string in pg): cast back, every total fits. */
export const VIEW_SQL = {
  summariesOf: `SELECT ${SUMMARY_COLUMNS} FROM ${SUMMARY_FROM} WHERE t.id = ANY($1::text[])`,
  countsAll: 'SELECT state, sum(n)::bigint AS n FROM task_counts GROUP BY state',
  countsOwner: 'SELECT state, sum(n)::bigint AS n FROM task_counts WHERE owner = $1 GROUP BY state',
  minutes: (owner: boolean) =>
    `SELECT minute, sum(started)::bigint AS started, sum(succeeded)::bigint AS succeeded, sum(failed)::bigint AS failed,
       sum(cancelled)::bigint AS cancelled, sum(latency_count)::bigint AS latency_count, sum(latency_sum_ms)::bigint AS latency_sum_ms,
       max(latency_max_ms) AS latency_max_ms
     FROM task_minutes WHERE ${owner ? 'owner = $3 AND ' : ''}minute >= $1 AND minute < $2 GROUP BY minute ORDER BY minute`,
  running: (worker: boolean) =>
    `SELECT a.id AS attempt_id, a.task_id, t.name AS task_name, t.owner, a.worker_id, a.started_at
     FROM attempts a JOIN tasks t ON t.id = a.task_id
     WHERE a.state = 'running'${worker ? ' AND a.worker_id = $1' : ''} ORDER BY a.started_at, a.id`,
};

export function postgresTaskViews(db: Db): TaskViewStore {
  return {
    async listTaskSummaries(filter: TaskFilter): Promise<TaskSummaryPage> {
      checkLimit('limit', filter.limit);
      const q = postgresTaskListQuery(filter, 'summaries');
      return db.read(async (c) => {
        const { items, nextCursor } = taskPageOf((await c.query<TaskSummaryRow>(db.prepared(q.sql, q.params))).rows.map(taskSummaryFromRow), filter);
        return { tasks: items, nextCursor };
      });
    },

    async getTaskSummaries(ids: readonly string[]): Promise<TaskSummary[]> {
      checkSummaryIds(ids);
      if (ids.length === 0) return [];
      return db.read(async (c) => (await c.query<TaskSummaryRow>(db.prepared(VIEW_SQL.summariesOf, [ids]))).rows.map(taskSummaryFromRow));
    },

    async countTasksByState(owner?: string): Promise<Record<TaskState, number>> {
      return db.read(async (c) =>
        countsOf((await c.query<{ state: string; n: number }>(owner === undefined ? db.prepared(VIEW_SQL.countsAll) : db.prepared(VIEW_SQL.countsOwner, [owner]))).rows),
      );
    },

    async minuteStats(since: number, until: number, owner?: string): Promise<MinuteStat[]> {
      const params: unknown[] = [minuteFloor(since), until];
      if (owner !== undefined) params.push(owner);
      return db.read(async (c) => (await c.query<MinuteStatRow>(VIEW_SQL.minutes(owner !== undefined), params)).rows.map(minuteStatFromRow));
    },

    async runningAttempts(workerId?: string): Promise<RunningAttemptView[]> {
      return db.read(async (c) =>
        (workerId === undefined ? await c.query<RunningAttemptRow>(VIEW_SQL.running(false)) : await c.query<RunningAttemptRow>(VIEW_SQL.running(true), [workerId])).rows.map(
          runningAttemptFromRow,
        ),
      );
    },

    async pruneMinuteStats(before: number): Promise<number> {
      return db.write(async (tx) => (await tx.query('DELETE FROM task_minutes WHERE minute < $1', [before])).rowCount ?? 0);
    },

    /**
     * One statement: the rows of every key that has several are deleted and
     * their sum inserted. A delta committed meanwhile is not in this
     * statement's snapshot and stays; a second fold running at the same time
     * waits for these rows, finds them deleted and skips them, so no delta is
     * counted twice or lost.
     */
    async foldCounters(since: number): Promise<number> {
      return db.write(async (tx) => {
        const r = await tx.query<{ n: number }>(
          `WITH c AS (
             DELETE FROM task_counts WHERE (owner, state) IN (SELECT owner, state FROM task_counts GROUP BY 1, 2 HAVING count(*) > 1)
             RETURNING owner, state, n
           ), ci AS (
             INSERT INTO task_counts (owner, state, shard, n) SELECT owner, state, 0, sum(n) FROM c GROUP BY owner, state
           ), m AS (
             DELETE FROM task_minutes
             WHERE minute >= $1 AND (minute, owner) IN (SELECT minute, owner FROM task_minutes WHERE minute >= $1 GROUP BY 1, 2 HAVING count(*) > 1)
             RETURNING *
           ), mi AS (
             INSERT INTO task_minutes (minute, owner, shard, started, succeeded, failed, cancelled, latency_count, latency_sum_ms, latency_max_ms)
             SELECT minute, owner, 0, sum(started), sum(succeeded), sum(failed), sum(cancelled), sum(latency_count), sum(latency_sum_ms), max(latency_max_ms)
             FROM m GROUP BY minute, owner
           )
           SELECT ((SELECT count(*) FROM c) + (SELECT count(*) FROM m))::int AS n`,
          [minuteFloor(since)],
        );
        return r.rows[0]!.n;
      });
    },
  };
}
