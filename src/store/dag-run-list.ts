/**
 * The DAG run list's statement and the step counts per run, shared by both
 * stores (store/dags.ts listDagRuns, dagRunStepCounts). The SQL is the same in
 * both dialects; only the placeholders differ, which the caller supplies.
 * Their plans: test/store/query-plans.test.ts.
 *
 *   - owner and dag are equalities leading the (owner, id) and (dag_id, id)
 *     indexes of dag_runs (PostgreSQL does not always take them: the todo
 *     cases of the plan test);
 *   - an id prefix and the keyset cursor are one range of the primary key
 *     (run ids are ULIDs, compared byte-wise in both stores), so resolving
 *     `drover dag status 01JF8Z` reads only the matching runs.
 */
import { InvalidInputError } from '../core/errors.js';
import type { TaskState } from '../core/task-state.js';
import type { DagRunFilter } from './dags.js';
import { prefixEnd } from './task-list.js';

const ID_PREFIX_RE = /^[0-9A-HJKMNP-TV-Z]{1,26}$/;

function dagRunListConditions(filter: DagRunFilter, param: (value: unknown) => string): string[] {
  const where: string[] = [];
  if (filter.dagId !== undefined) where.push(`dag_id = ${param(filter.dagId)}`);
  if (filter.owner !== undefined) where.push(`owner = ${param(filter.owner)}`);
  if (filter.idPrefix !== undefined) {
    if (typeof filter.idPrefix !== 'string' || !ID_PREFIX_RE.test(filter.idPrefix)) {
      throw new InvalidInputError('id', 'must be 1 to 26 characters of a run id (Crockford base32, upper case)');
    }
    where.push(`id >= ${param(filter.idPrefix)}`, `id < ${param(prefixEnd(filter.idPrefix)!)}`);
  }
  if (filter.cursor !== undefined) where.push(`id < ${param(filter.cursor)}`);
  return where;
}

/**
 * listDagRuns' statement: a page newest first, `limit + 1` rows (the extra one
 * says there is a next page); `placeholder(n)` is the dialect's n-th parameter,
 * `limitOf` writes the LIMIT's (SQLite: sqliteLimit, sqlite/records.ts).
 */
export function dagRunListQuery(filter: DagRunFilter, placeholder: (n: number) => string, limitOf: (placeholder: string) => string = (p) => p): { sql: string; params: unknown[] } {
  const params: unknown[] = [];
  const param = (value: unknown) => {
    params.push(value);
    return placeholder(params.length);
  };
  const where = dagRunListConditions(filter, param);
  const sql = `SELECT * FROM dag_runs ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY id DESC LIMIT ${limitOf(param(filter.limit + 1))}`;
  return { sql, params };
}

/** Counts rows of `SELECT dag_run_id, state, COUNT(*) AS n ... GROUP BY dag_run_id, state` as a map per run. */
export function stepCountsOf(rows: readonly { dag_run_id: string; state: string; n: number | string }[]): Map<string, Partial<Record<TaskState, number>>> {
  const out = new Map<string, Partial<Record<TaskState, number>>>();
  for (const r of rows) {
    let m = out.get(r.dag_run_id);
    if (!m) out.set(r.dag_run_id, (m = {}));
    m[r.state as TaskState] = Number(r.n);
  }
  return out;
}

/** The counting statement over the tasks' (dag_run_id, dag_step) index; `ids` is the dialect's list of placeholders. */
export function stepCountsSql(ids: string): string {
  return `SELECT dag_run_id, state, COUNT(*) AS n FROM tasks WHERE dag_run_id IN (${ids}) GROUP BY dag_run_id, state`;
}
