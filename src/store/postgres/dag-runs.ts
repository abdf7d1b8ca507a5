/**
 * A DAG run's progress on PostgreSQL, inside the caller's transaction
 * (store/dags.ts header): the run's row locked and read (its step states,
 * core/dag/step-states.ts), the plan of store/dag-progress.ts stored with
 * set-based statements, the run's new step states written.
 *
 * The run's row lock (FOR UPDATE) serializes every progress of one run
 * across servers: two steps that end at once in two transactions each end
 * their own task, then queue on the run's row; the second's locking read
 * returns the row as the first committed it (READ COMMITTED re-reads a
 * locked row's newest version), step states included, so it sees both ends
 * and the step that waited for both is released, exactly once (each write
 * is also guarded on `state = 'ready'`).
 *
 * Lock order. Writes that start from a run (cancelDagRun, retryDagRun, and
 * cancelTask of a step) lock the run's row first, then tasks; the end of an
 * attempt locks its task first (it does not know the run before reading it),
 * then the run (in the statement that ends it: LOCK_RUNS_CTE, or in
 * end-claimed.ts the runs of the step rows its statement locked), and then
 * writes only pending steps, which nobody else writes
 * without holding the run's row. The one cycle left is an end racing a
 * cancel of the same run; PostgreSQL breaks it (deadlock_detected) and
 * db.ts runs the loser again.
 */
import { assertTransition } from '../../core/task-state.js';
import { cacheDag, cachedDag, planRunProgress, releasedEnv, type ParsedDag, type RunHead, type RunProgress } from '../dag-progress.js';
import { DAG_ACTOR, type DagChange } from '../dags.js';
import { changesByRun } from '../dag-changes.js';
import type { Queryable, Tx } from './db.js';

/**
 * The rows of the runs $21 (ids, in id order), locked as lockRun locks one:
 * a CTE of the statement that ends the attempts (attempts.ts endIn), which
 * already holds their tasks' rows, so the lock order stays task, then run,
 * and a step's end takes one round trip less (measured on a 100-step chain
 * on PostgreSQL, each statement of a step's end cost 0.4-0.6 ms besides its
 * own work). A run locked here whose row another transaction changed comes
 * back as that one committed it, as from lockRun.
 */
export const LOCK_RUNS_CTE = lockRunsWhere('id = ANY($21::text[])');

/** LOCK_RUNS_CTE for the runs `cond` selects (end-claimed.ts: the runs of the step rows its statement locked first). */
export function lockRunsWhere(cond: string): string {
  return `SELECT id, dag_id, version, state, step_states, updated_at FROM dag_runs WHERE ${cond} ORDER BY id FOR UPDATE`;
}

/** The distinct runs of `changes`, in id order (LOCK_RUNS_CTE's parameter). */
export function runIds(changes: readonly DagChange[]): string[] {
  return [...new Set(changes.map((c) => c.runId))].sort();
}

/** The run's row, locked until COMMIT (see the header); undefined when there is none. */
export async function lockRun(tx: Queryable, runId: string): Promise<RunHead | undefined> {
  return (await tx.query<RunHead>('SELECT id, dag_id, version, state, step_states, updated_at FROM dag_runs WHERE id = $1 FOR UPDATE', [runId])).rows[0];
}

export async function dagOf(q: Queryable, run: Pick<RunHead, 'dag_id' | 'version'>): Promise<ParsedDag> {
  const hit = cachedDag(run.dag_id, run.version);
  if (hit) return hit;
  const r = await q.query<{ definition: string }>('SELECT definition FROM dag_versions WHERE dag_id = $1 AND version = $2', [run.dag_id, run.version]);
  return cacheDag(run.dag_id, run.version, r.rows[0]!.definition);
}

/**
 * Follows up the changed steps of each run (once per run, in run id order). A
 * run that is not running is left alone. Returns the time the progress was
 * dated (dag-progress.ts progressTime: later than `now` when this transaction
 * waited for the run's row while another committed a later progress; `now`
 * if no progress was made), so a claim in the same transaction is not dated before it.
 */
export async function progressDagRuns(tx: Tx, changes: readonly DagChange[], now: number, locked: ReadonlyMap<string, RunHead> = new Map()): Promise<number> {
  let at = now;
  for (const [runId, steps] of changesByRun(changes)) {
    // `locked`: rows this transaction already locked (LOCK_RUNS_CTE); a run missing there is locked now.
    const run = locked.get(runId) ?? (await lockRun(tx, runId));
    if (!run || run.state !== 'running') continue;
    const p = planRunProgress(await dagOf(tx, run), run, steps, now);
    const known = new Map<string, string | null>();
    for (const c of changes) if (c.runId === runId && c.outputs !== undefined) known.set(c.step, c.outputs);
    await applyProgress(tx, runId, p, known);
    at = Math.max(at, p.at);
  }
  return at;
}

/** $1 run id, $2 step names: their outputs, from the run's range of tasks_dag_step. */
export const OUTPUTS_OF = 'SELECT dag_step, outputs FROM tasks WHERE dag_run_id = $1 AND dag_step = ANY($2::text[]) AND outputs IS NOT NULL';

/**
 * Stores a plan, dated p.at: the releases in one statement (their env with
 * their dependencies' outputs), the skips in another, and the run's step
 * states and end with the last of them (a CTE on dag_runs), or alone when
 * the plan writes no step. Writes are keyed by (run, step) (tasks_dag_step)
 * and guarded on `state = 'ready'`. Outputs come from `known` (the steps
 * this transaction ended: DagChange.outputs) and are read only for the
 * other dependencies; a stored env is read only for a release that gets
 * outputs. Why so few statements: measured on a chain of 100 DAG steps
 * (issue 12, log_min_duration_statement = 0), each statement of a step's end
 * cost 0.4-0.6 ms of round trip and gap besides its own time, and a chain's
 * step never needs the outputs read (its one dependency is the step that
 * just ended) nor a statement of its own for the run's row.
 */
export async function applyProgress(tx: Tx, runId: string, p: RunProgress, known: ReadonlyMap<string, string | null> = new Map()): Promise<void> {
  const now = p.at;
  const releases = p.writes.flatMap((w) => (w.to === 'waiting' ? [w] : []));
  const skips = p.writes.flatMap((w) => (w.to === 'skipped' ? [w] : []));
  const runParams = [p.stepStates, p.runEnd];
  // $1 now, $6 run id, $7 step states, $8 the run's end state (null: still running), in both step statements.
  const RUN_CTE = `, r AS (
         UPDATE dag_runs SET step_states = $7, updated_at = $1,
           state = coalesce($8, state), ended_at = CASE WHEN $8::text IS NULL THEN ended_at ELSE $1::bigint END
         WHERE id = $6
       )`;
  if (releases.length > 0) {
    assertTransition('ready', 'waiting', 'released');
    const deps = [...new Set(releases.flatMap((w) => w.deps))];
    const outputs = new Map<string, string>();
    for (const [step, o] of known) if (o !== null) outputs.set(step, o);
    const unknown = deps.filter((d) => !known.has(d));
    if (unknown.length > 0) {
      const r = await tx.query<{ dag_step: string; outputs: string }>(OUTPUTS_OF, [runId, unknown]);
      for (const row of r.rows) outputs.set(row.dag_step, row.outputs);
    }
    const envs = new Map<string, string | null>();
    const needEnv = releases.filter((w) => w.deps.some((d) => outputs.has(d)));
    if (needEnv.length > 0) {
      const r = await tx.query<{ dag_step: string; env: string }>('SELECT dag_step, env FROM tasks WHERE dag_run_id = $1 AND dag_step = ANY($2::text[])', [runId, needEnv.map((w) => w.step)]);
      const stored = new Map(r.rows.map((row) => [row.dag_step, row.env]));
      for (const w of needEnv) {
        const env = stored.get(w.step);
        if (env !== undefined) envs.set(w.step, releasedEnv(env, w.deps, outputs));
      }
    }
    const withRun = skips.length === 0;
    const r = await tx.query<{ id: string }>(
      `WITH u AS (
         UPDATE tasks t SET state = 'waiting', env = coalesce(v.env, t.env), updated_at = $1
         FROM unnest($2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS v(step, env, detail, n)
         WHERE t.dag_run_id = $6 AND t.dag_step = v.step AND t.state = 'ready'
         RETURNING t.id, v.detail, v.n
       ), e AS (
         INSERT INTO task_events (task_id, from_state, to_state, reason, actor, at, detail)
         SELECT u.id, 'ready', 'waiting', 'released', $5, $1, u.detail FROM u ORDER BY u.n
       )${withRun ? RUN_CTE : ''}
       SELECT id FROM u`,
      [now, releases.map((w) => w.step), releases.map((w) => envs.get(w.step) ?? null), releases.map((w) => JSON.stringify(w.detail)), DAG_ACTOR, runId, ...(withRun ? runParams : [])],
    );
    if (r.rows.length > 0) tx.signal({ kind: 'wake' }, ...r.rows.map((x) => ({ kind: 'task' as const, taskId: x.id })));
  }
  if (skips.length > 0) {
    assertTransition('ready', 'skipped', 'step_skipped');
    const r = await tx.query<{ id: string }>(
      `WITH u AS (
         UPDATE tasks t SET state = 'skipped', skip_reason = v.reason, updated_at = $1
         FROM unnest($2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS v(step, reason, detail, n)
         WHERE t.dag_run_id = $6 AND t.dag_step = v.step AND t.state = 'ready'
         RETURNING t.id, v.detail, v.n
       ), e AS (
         INSERT INTO task_events (task_id, from_state, to_state, reason, actor, at, detail)
         SELECT u.id, 'ready', 'skipped', 'step_skipped', $5, $1, u.detail FROM u ORDER BY u.n
       )${RUN_CTE}
       SELECT id FROM u`,
      [now, skips.map((w) => w.step), skips.map((w) => w.skipReason), skips.map((w) => JSON.stringify(w.detail)), DAG_ACTOR, runId, ...runParams],
    );
    for (const x of r.rows) tx.signal({ kind: 'task', taskId: x.id });
  }
  if (releases.length === 0 && skips.length === 0) {
    await tx.query(
      `UPDATE dag_runs SET step_states = $1, updated_at = $2,
         state = coalesce($3, state), ended_at = CASE WHEN $3::text IS NULL THEN ended_at ELSE $2::bigint END
       WHERE id = $4`,
      [p.stepStates, now, p.runEnd, runId],
    );
  }
}
