/**
 * A DAG run's progress on SQLite, inside the caller's write (store/dags.ts
 * header): the run's row read (its step states, core/dag/step-states.ts),
 * the plan made by store/dag-progress.ts (the core's decisions), and the plan
 * stored: each release (ready → waiting, with its dependencies' outputs in
 * its env), each skip (ready → skipped, with its reason), their events, the
 * run's new step states and its end once every step has ended. One writer at
 * a time, so what was read cannot change before it is written. Called by
 * every write that ends a step: attempts.ts (ends), tasks.ts (cancelTask),
 * dags.ts (start, retry).
 */
import { assertTransition } from '../../core/task-state.js';
import { cacheDag, cachedDag, planRunProgress, releasedEnv, type ParsedDag, type RunHead, type RunProgress } from '../dag-progress.js';
import { DAG_ACTOR, type DagChange } from '../dags.js';
import { changesByRun } from '../dag-changes.js';
import type { SqliteDb } from './db.js';
import { insertEvent } from './records.js';

export function runHead(d: SqliteDb, runId: string): RunHead | undefined {
  return d.q('SELECT id, dag_id, version, state, step_states, updated_at FROM dag_runs WHERE id = ?').get(runId) as RunHead | undefined;
}

export function dagOf(d: SqliteDb, run: Pick<RunHead, 'dag_id' | 'version'>): ParsedDag {
  return (
    cachedDag(run.dag_id, run.version) ??
    cacheDag(run.dag_id, run.version, (d.q('SELECT definition FROM dag_versions WHERE dag_id = ? AND version = ?').get(run.dag_id, run.version) as { definition: string }).definition)
  );
}

/**
 * Follows up the changed steps of each run (once per run), in run id order. A
 * run that is not running is left alone (a cancelled run ended itself).
 * Returns the time the progress was dated (dag-progress.ts progressTime; `now`
 * if none was made), so a claim in the same write is not dated before it.
 */
export function progressDagRuns(d: SqliteDb, changes: readonly DagChange[], now: number): number {
  let at = now;
  for (const [runId, steps] of changesByRun(changes)) {
    const run = runHead(d, runId);
    if (!run || run.state !== 'running') continue;
    const p = planRunProgress(dagOf(d, run), run, steps, now);
    applyProgress(d, runId, p);
    at = Math.max(at, p.at);
  }
  return at;
}

/** ?1 run id, ?2 JSON array of step names: their outputs, a lookup of tasks_dag_step per step. */
export const OUTPUTS_OF = "SELECT dag_step, outputs FROM tasks WHERE dag_run_id = ? AND outputs IS NOT NULL AND dag_step IN (SELECT value FROM json_each(?))";

/**
 * Stores a plan (see the header), dated p.at. Each write is guarded on
 * `state = 'ready'` (a step is decided once) and keyed by (run, step): the
 * unique index tasks_dag_step. The run's step states and updated_at are
 * written every time (progressTime reads updated_at).
 */
export function applyProgress(d: SqliteDb, runId: string, p: RunProgress): void {
  const now = p.at;
  const releases = p.writes.filter((w) => w.to === 'waiting');
  // Outputs of the released steps' dependencies, read once (a fan-in's end reads its 998 once, when released).
  const deps = [...new Set(releases.flatMap((w) => (w.to === 'waiting' ? w.deps : [])))];
  const outputs = new Map<string, string>();
  if (deps.length > 0) for (const r of d.q(OUTPUTS_OF).all(runId, JSON.stringify(deps)) as Array<{ dag_step: string; outputs: string }>) outputs.set(r.dag_step, r.outputs);
  for (const w of p.writes) {
    if (w.to === 'waiting') {
      assertTransition('ready', 'waiting', 'released');
      const row = d.q("SELECT id, env FROM tasks WHERE dag_run_id = ? AND dag_step = ? AND state = 'ready'").get(runId, w.step) as { id: string; env: string } | undefined;
      if (!row) continue;
      d.q("UPDATE tasks SET state = 'waiting', env = coalesce(?, env), updated_at = ? WHERE id = ?").run(releasedEnv(row.env, w.deps, outputs), now, row.id);
      insertEvent(d, row.id, 'ready', 'waiting', 'released', DAG_ACTOR, now, w.detail);
      d.signal({ kind: 'wake' }, { kind: 'task', taskId: row.id });
    } else {
      assertTransition('ready', 'skipped', 'step_skipped');
      const row = d.q("UPDATE tasks SET state = 'skipped', skip_reason = ?, updated_at = ? WHERE dag_run_id = ? AND dag_step = ? AND state = 'ready' RETURNING id").get(w.skipReason, now, runId, w.step) as
        | { id: string }
        | undefined;
      if (!row) continue;
      insertEvent(d, row.id, 'ready', 'skipped', 'step_skipped', DAG_ACTOR, now, w.detail);
      d.signal({ kind: 'task', taskId: row.id });
    }
  }
  if (p.runEnd !== null) d.q("UPDATE dag_runs SET state = ?, step_states = ?, ended_at = ?, updated_at = ? WHERE id = ?").run(p.runEnd, p.stepStates, now, now, runId);
  else d.q('UPDATE dag_runs SET step_states = ?, updated_at = ? WHERE id = ?').run(p.stepStates, now, runId);
}
