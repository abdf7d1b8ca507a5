/**
 * DAGs on SQLite (store/dags.ts is the contract). Every write is one
 * IMMEDIATE transaction (db.ts): a run's start, cancel and retry read the
 * run's steps and write the plan with the write lock held.
 */
import { ConflictError } from '../../core/errors.js';
import type { DagDefinition } from '../../core/dag/dag-definition.js';
import { assertTransition, isTerminal, type TaskState } from '../../core/task-state.js';
import { submittedDetail, type NewTask } from '../batch.js';
import { stepTasks } from '../dag-steps.js';
import { cancelledStepStates, planRunRetry, planRunStart } from '../dag-progress.js';
import {
  dagFromRow,
  dagRunFromRow,
  dagRunStepFromRow,
  dagSummaryFromRow,
  DAG_RUN_STEPS_SQL,
  type DagRunRow,
  type DagRunStepRow,
  type DagSummaryRow,
  type DagVersionRow,
} from '../dag-rows.js';
import type { DagCancelResult, DagFilter, DagRecord, DagRunFilter, DagRunPage, DagRunRecord, DagRunStep, DagStore, StartDagRun } from '../dags.js';
import { TASK_SPEC_COLUMNS, taskSpecValues, type TaskRow } from '../rows.js';
import { pageOf } from '../task-list.js';
import { dagRunListQuery, stepCountsOf, stepCountsSql } from '../dag-run-list.js';
import { insertChunked, valuesInsert } from './chunked-insert.js';
import { applyProgress, dagOf, runHead } from './dag-runs.js';
import type { SqliteDb } from './db.js';
import { checkLimit, insertEvent, sqliteLimit } from './records.js';
import { isUniqueViolation } from './sqlite-errors.js';
import { cancelIn } from './tasks.js';

const DAG_VERSION_SQL = `SELECT d.id, d.owner, d.name, v.version, v.definition, v.hash, v.step_count, v.created_at, d.created_at AS first_created_at
  FROM dags d JOIN dag_versions v ON v.dag_id = d.id`;

/**
 * A run's step tasks, all `ready` (pending): the run's start then releases
 * the roots through the same plan as any progress. STEP_VALUES values a step
 * (stepValues: id, the spec's columns of rows.ts TASK_SPEC_COLUMNS, the
 * step's name), in 128-row statements (chunked-insert.ts, as createTasks
 * inserts a batch); the owner, the run and the time are shared.
 */
const STEP_VALUES = 2 + TASK_SPEC_COLUMNS.length;
const STEP_ROW_SQL = valuesInsert(
  `INSERT INTO tasks (id, ${TASK_SPEC_COLUMNS.join(', ')}, dag_step, owner, state, dag_run_id, created_at, updated_at)`,
  `(${Array<string>(STEP_VALUES).fill('?').join(', ')}, @owner, 'ready', @run, @now, @now)`,
);
/** The `submitted` event of each step; @events: [id, detail as JSON text] a step, in step order. */
const INSERT_SUBMITTED = `INSERT INTO task_events (task_id, from_state, to_state, reason, actor, at, detail)
 SELECT j.value ->> 0, NULL, 'ready', 'submitted', @actor, @now, j.value ->> 1 FROM json_each(@events) AS j ORDER BY j.key`;

/** The steps' values for STEP_ROW_SQL and the JSON of their events (tasks: stepTasks, names: the steps' names in the same order). */
function stepValues(tasks: readonly NewTask[], names: readonly string[]): { values: unknown[]; events: string } {
  const values: unknown[] = [];
  const events: unknown[] = [];
  tasks.forEach(({ id, spec, detail }, i) => {
    values.push(id, ...taskSpecValues(spec), names[i]);
    const d = submittedDetail(null, detail);
    events.push([id, d === null ? null : JSON.stringify(d)]);
  });
  return { values, events: JSON.stringify(events) };
}

/**
 * Starts a run inside the caller's write (startDagRun, and a DAG schedule's
 * firing in sqlite/schedules.ts): the run's row, its steps' tasks and their
 * events, the roots released. ConflictError when the run id, its schedule
 * slot or a task id is taken.
 */
export function startRunIn(d: SqliteDb, req: StartDagRun): DagRunRecord {
  const tasks = stepTasks(req);
  const { values, events } = stepValues(tasks, req.dag.definition.steps.map((s) => s.name));
  const { runId, dag, now } = req;
  try {
    d.q(
      `INSERT INTO dag_runs (id, owner, dag_id, dag_name, version, state, params, step_count, step_states, schedule_id, scheduled_at, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, 'running', ?, ?, ?, ?, ?, ?, ?)`,
    ).run(runId, dag.owner, dag.id, dag.name, dag.version, JSON.stringify(req.params), tasks.length, 'r'.repeat(tasks.length), req.slot?.scheduleId ?? null, req.slot?.scheduledAt ?? null, now, now);
  } catch (e) {
    if (isUniqueViolation(e)) throw new ConflictError(`DAG run ${runId} (or its schedule slot) already exists`);
    throw e;
  }
  try {
    insertChunked(d, STEP_ROW_SQL, STEP_VALUES, values, { owner: dag.owner, run: runId, now });
  } catch (e) {
    if (isUniqueViolation(e)) throw new ConflictError(`a task id of DAG run ${runId} already exists`);
    throw e;
  }
  d.q(INSERT_SUBMITTED).run({ actor: req.actor, now, events });
  applyProgress(d, runId, planRunStart(dagOf(d, { dag_id: dag.id, version: dag.version }), now));
  return dagRunFromRow(d.q('SELECT * FROM dag_runs WHERE id = ?').get(runId) as DagRunRow);
}

/** The owner's DAG of that name at its newest version, inside the caller's read or write; null when none. */
export function latestDagIn(d: SqliteDb, owner: string, name: string): DagRecord | null {
  const row = d.q(`${DAG_VERSION_SQL} WHERE d.owner = ? AND d.name = ? AND v.version = d.latest_version`).get(owner, name) as DagVersionRow | undefined;
  return row ? dagFromRow(row) : null;
}

export function sqliteDags(d: SqliteDb): DagStore {
  const runRow = (id: string) => d.q('SELECT * FROM dag_runs WHERE id = ?').get(id) as DagRunRow | undefined;
  return {
    async applyDag(id: string, owner: string, definition: DagDefinition, hash: string, now: number): Promise<{ dag: DagRecord; created: boolean }> {
      const text = JSON.stringify(definition);
      return d.write(() => {
        const existing = d.q('SELECT id, latest_version FROM dags WHERE owner = ? AND name = ?').get(owner, definition.name) as { id: string; latest_version: number } | undefined;
        if (existing) {
          const latest = d.q(`${DAG_VERSION_SQL} WHERE d.id = ? AND v.version = ?`).get(existing.id, existing.latest_version) as DagVersionRow;
          if (latest.hash === hash) return { dag: dagFromRow(latest), created: false };
          const version = existing.latest_version + 1;
          d.q('INSERT INTO dag_versions (dag_id, version, definition, hash, step_count, created_at) VALUES (?, ?, ?, ?, ?, ?)').run(existing.id, version, text, hash, definition.steps.length, now);
          d.q('UPDATE dags SET latest_version = ?, updated_at = ? WHERE id = ?').run(version, now, existing.id);
          return { dag: dagFromRow(d.q(`${DAG_VERSION_SQL} WHERE d.id = ? AND v.version = ?`).get(existing.id, version) as DagVersionRow), created: true };
        }
        try {
          d.q('INSERT INTO dags (id, owner, name, latest_version, created_at, updated_at) VALUES (?, ?, ?, 1, ?, ?)').run(id, owner, definition.name, now, now);
        } catch (e) {
          if (isUniqueViolation(e)) throw new ConflictError(`DAG id ${id} already exists`);
          throw e;
        }
        d.q('INSERT INTO dag_versions (dag_id, version, definition, hash, step_count, created_at) VALUES (?, 1, ?, ?, ?, ?)').run(id, text, hash, definition.steps.length, now);
        return { dag: dagFromRow(d.q(`${DAG_VERSION_SQL} WHERE d.id = ? AND v.version = 1`).get(id) as DagVersionRow), created: true };
      });
    },

    async getDag(owner: string, name: string, version?: number): Promise<DagRecord | null> {
      return d.read(() => {
        const row = (
          version === undefined
            ? d.q(`${DAG_VERSION_SQL} WHERE d.owner = ? AND d.name = ? AND v.version = d.latest_version`).get(owner, name)
            : d.q(`${DAG_VERSION_SQL} WHERE d.owner = ? AND d.name = ? AND v.version = ?`).get(owner, name, version)
        ) as DagVersionRow | undefined;
        return row ? dagFromRow(row) : null;
      });
    },

    async getDagVersion(dagId: string, version: number): Promise<DagRecord | null> {
      return d.read(() => {
        const row = d.q(`${DAG_VERSION_SQL} WHERE d.id = ? AND v.version = ?`).get(dagId, version) as DagVersionRow | undefined;
        return row ? dagFromRow(row) : null;
      });
    },

    /** Oldest first by id (a ULID of the first apply), keyset; with an owner, an index range of dags (owner, name)'s table... read by id. */
    async listDags(filter: DagFilter): Promise<{ dags: ReturnType<typeof dagSummaryFromRow>[]; nextCursor: string | null }> {
      checkLimit(filter.limit);
      const where: string[] = [];
      const params: unknown[] = [];
      if (filter.owner !== undefined) {
        where.push('d.owner = ?');
        params.push(filter.owner);
      }
      if (filter.cursor !== undefined) {
        where.push('d.id > ?');
        params.push(filter.cursor);
      }
      const sql = `SELECT d.id, d.owner, d.name, d.latest_version, v.step_count, json_extract(v.definition, '$.description') AS description, d.created_at, d.updated_at
        FROM dags d JOIN dag_versions v ON v.dag_id = d.id AND v.version = d.latest_version
        ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY d.id LIMIT +?`;
      return d.read(() => {
        const { items, nextCursor } = pageOf(d.q(sql).all(...params, filter.limit + 1) as DagSummaryRow[], filter.limit);
        return { dags: items.map(dagSummaryFromRow), nextCursor };
      });
    },

    async startDagRun(req: StartDagRun): Promise<DagRunRecord> {
      return d.write(() => startRunIn(d, req));
    },

    async getDagRun(id: string): Promise<DagRunRecord | null> {
      return d.read(() => {
        const r = runRow(id);
        return r ? dagRunFromRow(r) : null;
      });
    },

    async listDagRuns(filter: DagRunFilter): Promise<DagRunPage> {
      checkLimit(filter.limit);
      const { sql, params } = dagRunListQuery(filter, () => '?', sqliteLimit);
      return d.read(() => {
        const { items, nextCursor } = pageOf(d.q(sql).all(...params) as DagRunRow[], filter.limit);
        return { runs: items.map(dagRunFromRow), nextCursor };
      });
    },

    async dagRunStepCounts(runIds: readonly string[]): Promise<Map<string, Partial<Record<TaskState, number>>>> {
      if (runIds.length === 0) return new Map();
      // Lists are at most 500 runs (the API's limit): well under SQLite's 32,766 parameters.
      return d.read(() => stepCountsOf(d.q(stepCountsSql(runIds.map(() => '?').join(', '))).all(...runIds) as { dag_run_id: string; state: string; n: number }[]));
    },

    async dagRunSteps(runId: string): Promise<DagRunStep[]> {
      return d.read(() => {
        const run = runRow(runId);
        if (!run) return [];
        const { graph } = dagOf(d, run);
        const steps = (d.q(DAG_RUN_STEPS_SQL('?')).all(runId) as DagRunStepRow[]).map(dagRunStepFromRow);
        return steps.sort((a, b) => graph.index.get(a.step)! - graph.index.get(b.step)!);
      });
    },

    async cancelDagRun(id: string, actor: string, now: number): Promise<DagCancelResult | null> {
      return d.write(() => {
        const run = runRow(id);
        if (!run) return null;
        if (run.state !== 'running') throw new ConflictError(`DAG run ${id} is ${run.state}; only a running run can be cancelled`);
        // The run ends first: the steps' cancels below then decide nothing about it.
        d.q("UPDATE dag_runs SET state = 'cancelled', step_states = ?, ended_at = ?, updated_at = ? WHERE id = ?").run(cancelledStepStates(dagOf(d, run), run), now, now, id);
        const stopped = [];
        for (const r of d.q('SELECT * FROM tasks WHERE dag_run_id = ? ORDER BY id').all(id) as TaskRow[]) {
          if (isTerminal(r.state as TaskState)) continue;
          const c = cancelIn(d, r, actor, now);
          if (c.runningAttempt) stopped.push(c.runningAttempt);
        }
        return { run: dagRunFromRow(runRow(id)!), stopped };
      });
    },

    async retryDagRun(id: string, actor: string, now: number): Promise<DagRunRecord | null> {
      return d.write(() => {
        const run = runHead(d, id);
        if (!run) return null;
        const { reset, progress } = planRunRetry(dagOf(d, run), run, now);
        for (const step of reset) {
          const t = d.q('SELECT * FROM tasks WHERE dag_run_id = ? AND dag_step = ?').get(id, step) as TaskRow | undefined;
          if (!t) continue;
          const busy = t.current_attempt_id === null ? undefined : d.q("SELECT id FROM attempts WHERE id = ? AND state = 'running'").get(t.current_attempt_id);
          if (busy) throw new ConflictError(`step "${step}" of DAG run ${id} still has a running attempt being stopped; retry when it has ended`);
          const from = t.state as TaskState;
          assertTransition(from, 'ready', 'manual_retry');
          d.q("UPDATE tasks SET state = 'ready', retries_used = 0, lost_count = 0, result = NULL, outputs = NULL, skip_reason = NULL, run_after = NULL, updated_at = ? WHERE id = ?").run(now, t.id);
          insertEvent(d, t.id, from, 'ready', 'manual_retry', actor, now, { dagRetry: id, previousResult: t.result === null ? null : JSON.parse(t.result), previousSkipReason: t.skip_reason });
          d.signal({ kind: 'task', taskId: t.id });
        }
        d.q("UPDATE dag_runs SET state = 'running', ended_at = NULL, updated_at = ? WHERE id = ?").run(now, id);
        applyProgress(d, id, progress);
        return dagRunFromRow(runRow(id)!);
      });
    },
  };
}
