/**
 * DAGs on PostgreSQL (store/dags.ts is the contract; postgres/dag-runs.ts has
 * the progress and its lock order). A run's start, cancel and retry are one
 * transaction each, holding the run's row lock.
 */
import { ConflictError } from '../../core/errors.js';
import type { DagDefinition } from '../../core/dag/dag-definition.js';
import { assertTransition, isTerminal, type TaskState } from '../../core/task-state.js';
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
import type { Attempt } from '../../core/task.js';
import type { TaskRow } from '../rows.js';
import { pageOf } from '../task-list.js';
import { dagRunListQuery, stepCountsOf, stepCountsSql } from '../dag-run-list.js';
import { stepTasks } from '../dag-steps.js';
import { columns } from './create-tasks.js';
import { applyProgress, dagOf, lockRun } from './dag-runs.js';
import type { Db, Queryable, Tx } from './db.js';
import { isUniqueViolation } from './pg-errors.js';
import { checkLimit } from './sql.js';
import { cancelLocked } from './tasks.js';

const DAG_VERSION_SQL = `SELECT d.id, d.owner, d.name, v.version, v.definition, v.hash, v.step_count, v.created_at, d.created_at AS first_created_at
  FROM dags d JOIN dag_versions v ON v.dag_id = d.id`;

/**
 * A run's step tasks, all `ready` (pending), with their `submitted` events,
 * in one statement: create-tasks.ts `columns` (one array per column, $5..$25)
 * plus the step names ($26); the run's start then releases the roots through
 * the same plan as any progress. $1 owner, $2 now, $3 actor, $4 run id.
 */
const INSERT_STEPS = `WITH u AS (
  SELECT * FROM unnest($5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[],
                       $13::bigint[], $14::int[], $15::bigint[], $16::float8[], $17::bigint[], $18::int[], $19::text[], $20::text[],
                       $21::text[], $22::bigint[], $23::text[], $24::text[], $25::bigint[], $26::text[])
    WITH ORDINALITY AS u(id, name, command, args, script, interpreter, env, labels,
                         timeout_ms, max_retries, retry_base_delay_ms, retry_factor, retry_max_delay_ms, priority, requires, kind,
                         cwd, run_after, detail, schedule_id, scheduled_at, dag_step, n)
), t AS (
  INSERT INTO tasks (id, owner, state, name, kind, command, args, script, interpreter, env, timeout_ms,
    max_retries, retry_base_delay_ms, retry_factor, retry_max_delay_ms, priority, labels, requires, cwd, dag_run_id, dag_step, created_at, updated_at)
  SELECT u.id, $1, 'ready', u.name, u.kind, u.command, u.args, u.script, u.interpreter, u.env, u.timeout_ms,
    u.max_retries, u.retry_base_delay_ms, u.retry_factor, u.retry_max_delay_ms, u.priority, u.labels, u.requires, u.cwd, $4, u.dag_step, $2::bigint, $2::bigint
  FROM u ORDER BY u.n
  RETURNING id
)
INSERT INTO task_events (task_id, from_state, to_state, reason, actor, at, detail)
SELECT u.id, NULL, 'ready', 'submitted', $3::text, $2::bigint, u.detail FROM u JOIN t ON t.id = u.id ORDER BY u.n`;

async function runRow(q: Queryable, id: string): Promise<DagRunRow | undefined> {
  return (await q.query<DagRunRow>('SELECT * FROM dag_runs WHERE id = $1', [id])).rows[0];
}

async function versionRow(q: Queryable, dagId: string, version: number): Promise<DagVersionRow | undefined> {
  return (await q.query<DagVersionRow>(`${DAG_VERSION_SQL} WHERE d.id = $1 AND v.version = $2`, [dagId, version])).rows[0];
}

/**
 * Starts a run inside the caller's transaction (startDagRun, and a DAG
 * schedule's firing in postgres/schedules.ts): the run's row, its steps'
 * tasks and their events, the roots released. ConflictError when the run id,
 * its schedule slot or a task id is taken (the transaction is then aborted:
 * the caller must not go on in it).
 */
export async function startRunIn(tx: Tx, req: StartDagRun): Promise<DagRunRecord> {
  const tasks = stepTasks(req);
  const { runId, dag, now } = req;
  const params = [dag.owner, now, req.actor, runId, ...columns(tasks), dag.definition.steps.map((s) => s.name)];
  try {
    await tx.query(
      `INSERT INTO dag_runs (id, owner, dag_id, dag_name, version, state, params, step_count, step_states, schedule_id, scheduled_at, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, 'running', $6, $7, $8, $9, $10, $11, $11)`,
      [runId, dag.owner, dag.id, dag.name, dag.version, JSON.stringify(req.params), tasks.length, 'r'.repeat(tasks.length), req.slot?.scheduleId ?? null, req.slot?.scheduledAt ?? null, now],
    );
    await tx.query(INSERT_STEPS, params);
  } catch (e) {
    if (isUniqueViolation(e)) throw new ConflictError(`DAG run ${runId}, its schedule slot or one of its task ids already exists (${(e as { detail?: string }).detail ?? 'unique violation'})`);
    throw e;
  }
  await applyProgress(tx, runId, planRunStart(await dagOf(tx, { dag_id: dag.id, version: dag.version }), now));
  return dagRunFromRow((await runRow(tx, runId))!);
}

/** The owner's DAG of that name at its newest version; null when none. */
export async function latestDagIn(q: Queryable, owner: string, name: string): Promise<DagRecord | null> {
  const r = await q.query<DagVersionRow>(`${DAG_VERSION_SQL} WHERE d.owner = $1 AND d.name = $2 AND v.version = d.latest_version`, [owner, name]);
  return r.rows[0] ? dagFromRow(r.rows[0]) : null;
}

export function postgresDags(db: Db): DagStore {
  return {
    /** The (owner, name) row is locked (or inserted) first, so two applies of one DAG queue and number their versions in turn. */
    async applyDag(id: string, owner: string, definition: DagDefinition, hash: string, now: number): Promise<{ dag: DagRecord; created: boolean }> {
      const text = JSON.stringify(definition);
      return db.write(async (tx) => {
        await tx.query('INSERT INTO dags (id, owner, name, latest_version, created_at, updated_at) VALUES ($1, $2, $3, 0, $4, $4) ON CONFLICT (owner, name) DO NOTHING', [
          id,
          owner,
          definition.name,
          now,
        ]);
        const head = (await tx.query<{ id: string; latest_version: number }>('SELECT id, latest_version FROM dags WHERE owner = $1 AND name = $2 FOR UPDATE', [owner, definition.name])).rows[0]!;
        if (head.latest_version > 0) {
          const latest = (await versionRow(tx, head.id, head.latest_version))!;
          if (latest.hash === hash) return { dag: dagFromRow(latest), created: false };
        }
        const version = head.latest_version + 1;
        await tx.query('INSERT INTO dag_versions (dag_id, version, definition, hash, step_count, created_at) VALUES ($1, $2, $3, $4, $5, $6)', [
          head.id,
          version,
          text,
          hash,
          definition.steps.length,
          now,
        ]);
        await tx.query('UPDATE dags SET latest_version = $1, updated_at = $2 WHERE id = $3', [version, now, head.id]);
        return { dag: dagFromRow((await versionRow(tx, head.id, version))!), created: true };
      });
    },

    async getDag(owner: string, name: string, version?: number): Promise<DagRecord | null> {
      return db.read(async (q) => {
        const r =
          version === undefined
            ? await q.query<DagVersionRow>(`${DAG_VERSION_SQL} WHERE d.owner = $1 AND d.name = $2 AND v.version = d.latest_version`, [owner, name])
            : await q.query<DagVersionRow>(`${DAG_VERSION_SQL} WHERE d.owner = $1 AND d.name = $2 AND v.version = $3`, [owner, name, version]);
        return r.rows[0] ? dagFromRow(r.rows[0]) : null;
      });
    },

    async getDagVersion(dagId: string, version: number): Promise<DagRecord | null> {
      return db.read(async (q) => {
        const row = await versionRow(q, dagId, version);
        return row ? dagFromRow(row) : null;
      });
    },

    async listDags(filter: DagFilter): Promise<{ dags: ReturnType<typeof dagSummaryFromRow>[]; nextCursor: string | null }> {
      checkLimit('limit', filter.limit);
      const where = ['d.latest_version > 0'];
      const params: unknown[] = [];
      if (filter.owner !== undefined) {
        params.push(filter.owner);
        where.push(`d.owner = $${params.length}`);
      }
      if (filter.cursor !== undefined) {
        params.push(filter.cursor);
        where.push(`d.id > $${params.length}`);
      }
      params.push(filter.limit + 1);
      const sql = `SELECT d.id, d.owner, d.name, d.latest_version, v.step_count, v.definition::json ->> 'description' AS description, d.created_at, d.updated_at
        FROM dags d JOIN dag_versions v ON v.dag_id = d.id AND v.version = d.latest_version
        WHERE ${where.join(' AND ')} ORDER BY d.id LIMIT $${params.length}`;
      return db.read(async (q) => {
        const { items, nextCursor } = pageOf((await q.query<DagSummaryRow>(sql, params)).rows, filter.limit);
        return { dags: items.map(dagSummaryFromRow), nextCursor };
      });
    },

    async startDagRun(req: StartDagRun): Promise<DagRunRecord> {
      return db.write(async (tx) => startRunIn(tx, req));
    },

    async getDagRun(id: string): Promise<DagRunRecord | null> {
      return db.read(async (q) => {
        const r = await runRow(q, id);
        return r ? dagRunFromRow(r) : null;
      });
    },

    async listDagRuns(filter: DagRunFilter): Promise<DagRunPage> {
      checkLimit('limit', filter.limit);
      const { sql, params } = dagRunListQuery(filter, (n) => `$${n}`);
      return db.read(async (q) => {
        const { items, nextCursor } = pageOf((await q.query<DagRunRow>(sql, params)).rows, filter.limit);
        return { runs: items.map(dagRunFromRow), nextCursor };
      });
    },

    async dagRunStepCounts(runIds: readonly string[]): Promise<Map<string, Partial<Record<TaskState, number>>>> {
      if (runIds.length === 0) return new Map();
      return db.read(async (q) => stepCountsOf((await q.query<{ dag_run_id: string; state: string; n: string }>(stepCountsSql('SELECT unnest($1::text[])'), [runIds])).rows));
    },

    async dagRunSteps(runId: string): Promise<DagRunStep[]> {
      return db.read(async (q) => {
        const run = await runRow(q, runId);
        if (!run) return [];
        const { graph } = await dagOf(q, run);
        const steps = (await q.query<DagRunStepRow>(DAG_RUN_STEPS_SQL('$1'), [runId])).rows.map(dagRunStepFromRow);
        return steps.sort((a, b) => graph.index.get(a.step)! - graph.index.get(b.step)!);
      });
    },

    /** The run's row first, then its unended steps in id order (dag-runs.ts, lock order). */
    async cancelDagRun(id: string, actor: string, now: number): Promise<DagCancelResult | null> {
      return db.write(async (tx) => {
        const run = await lockRun(tx, id);
        if (!run) return null;
        if (run.state !== 'running') throw new ConflictError(`DAG run ${id} is ${run.state}; only a running run can be cancelled`);
        // The run ends first: the steps' cancels below then decide nothing about it.
        await tx.query("UPDATE dag_runs SET state = 'cancelled', step_states = $3, ended_at = $1, updated_at = $1 WHERE id = $2", [now, id, cancelledStepStates(await dagOf(tx, run), run)]);
        const stopped: Attempt[] = [];
        const steps = await tx.query<{ id: string; state: string }>('SELECT id, state FROM tasks WHERE dag_run_id = $1 ORDER BY id', [id]);
        for (const s of steps.rows) {
          if (isTerminal(s.state as TaskState)) continue;
          const c = await cancelLocked(tx, s.id, actor, now);
          if (c.runningAttempt) stopped.push(c.runningAttempt);
        }
        return { run: dagRunFromRow((await runRow(tx, id))!), stopped };
      });
    },

    async retryDagRun(id: string, actor: string, now: number): Promise<DagRunRecord | null> {
      return db.write(async (tx) => {
        const run = await lockRun(tx, id);
        if (!run) return null;
        const { reset, progress } = planRunRetry(await dagOf(tx, run), run, now);
        if (reset.length > 0) {
          const locked = await tx.query<{ task: TaskRow; busy: boolean }>(
            `SELECT to_json(t) AS task, EXISTS (SELECT 1 FROM attempts a WHERE a.id = t.current_attempt_id AND a.state = 'running') AS busy
             FROM tasks t WHERE t.dag_run_id = $1 AND t.dag_step = ANY($2::text[]) ORDER BY t.id FOR NO KEY UPDATE OF t`,
            [id, reset],
          );
          const busy = locked.rows.find((r) => r.busy);
          if (busy) throw new ConflictError(`step "${busy.task.dag_step}" of DAG run ${id} still has a running attempt being stopped; retry when it has ended`);
          for (const { task } of locked.rows) assertTransition(task.state as TaskState, 'ready', 'manual_retry');
          await tx.query(
            `WITH u AS (
               UPDATE tasks SET state = 'ready', retries_used = 0, lost_count = 0, result = NULL, outputs = NULL, skip_reason = NULL, run_after = NULL, updated_at = $1
               WHERE id = ANY($2::text[])
             )
             INSERT INTO task_events (task_id, from_state, to_state, reason, actor, at, detail)
             SELECT v.id, v.from_state, 'ready', 'manual_retry', $3, $1, v.detail FROM unnest($2::text[], $4::text[], $5::text[]) WITH ORDINALITY AS v(id, from_state, detail, n) ORDER BY v.n`,
            [
              now,
              locked.rows.map((r) => r.task.id),
              actor,
              locked.rows.map((r) => r.task.state),
              locked.rows.map((r) => JSON.stringify({ dagRetry: id, previousResult: r.task.result === null ? null : JSON.parse(r.task.result), previousSkipReason: r.task.skip_reason })),
            ],
          );
          for (const r of locked.rows) tx.signal({ kind: 'task', taskId: r.task.id });
        }
        await tx.query("UPDATE dag_runs SET state = 'running', ended_at = NULL, updated_at = $1 WHERE id = $2", [now, id]);
        await applyProgress(tx, id, progress);
        return dagRunFromRow((await runRow(tx, id))!);
      });
    },
  };
}

