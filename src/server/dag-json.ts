/** DAG records (epoch ms) → API JSON (ISO times), per docs/api.md "DAGs". */
import { criticalPath } from '../core/dag/critical-path.js';
import type { DagDefinition } from '../core/dag/dag-definition.js';
import { validateDagGraph } from '../core/dag/dag-graph.js';
import type { DagRecord, DagRunRecord, DagRunStep, DagSummary } from '../store/dags.js';
import { isoTime } from './iso-time.js';
import { templateJson } from './schedule-json.js';

const iso = (t: number | null): string | null => (t === null ? null : isoTime(t));

/** A definition's steps as `viewer` may see them: env values only for the owner (as for a task). */
function stepsJson(def: DagDefinition, owner: string, viewer: string) {
  return def.steps.map((s) => ({ name: s.name, dependsOn: s.dependsOn, when: s.when, task: templateJson(s.task, owner, viewer) }));
}

export function dagJson(d: DagRecord, viewer: string) {
  return {
    id: d.id,
    name: d.name,
    owner: d.owner,
    version: d.version,
    description: d.definition.description,
    params: d.definition.params,
    hash: d.hash,
    steps: stepsJson(d.definition, d.owner, viewer),
    createdAt: isoTime(d.createdAt),
    firstCreatedAt: isoTime(d.firstCreatedAt),
  };
}

export function dagSummaryJson(d: DagSummary) {
  return { id: d.id, name: d.name, owner: d.owner, version: d.version, stepCount: d.stepCount, description: d.description, createdAt: isoTime(d.createdAt), updatedAt: isoTime(d.updatedAt) };
}

/** Run parameters are shown like env: their values only to the run's owner. */
export function dagRunJson(r: DagRunRecord, viewer: string) {
  return {
    id: r.id,
    dag: r.dagName,
    dagId: r.dagId,
    version: r.version,
    owner: r.owner,
    state: r.state,
    params: viewer === r.owner ? r.params : Object.fromEntries(Object.keys(r.params).map((k) => [k, ''])),
    stepCount: r.stepCount,
    scheduleId: r.scheduleId,
    scheduledAt: iso(r.scheduledAt),
    createdAt: isoTime(r.createdAt),
    updatedAt: isoTime(r.updatedAt),
    endedAt: iso(r.endedAt),
  };
}

/**
 * A run with its steps in definition order, each with its dependencies (from
 * the run's version), timing, outputs and whether it is on the critical path
 * (core/dag/critical-path.ts), plus the counts of steps by state.
 */
export function dagRunDetailJson(r: DagRunRecord, def: DagDefinition, steps: DagRunStep[], viewer: string, now: number) {
  const graph = validateDagGraph(def.steps);
  const byName = new Map(steps.map((s) => [s.step, s]));
  const timings = def.steps.map((s) => {
    const x = byName.get(s.name);
    return { startedAt: x?.startedAt ?? null, endedAt: x?.endedAt ?? null };
  });
  // A run that ended has no step running: "now" only matters while it runs.
  const path = criticalPath(graph, timings, r.endedAt ?? now).map((i) => def.steps[i]!.name);
  const onPath = new Set(path);
  const counts: Record<string, number> = {};
  const out = [];
  for (const s of def.steps) {
    const x = byName.get(s.name);
    if (!x) continue;
    counts[x.state] = (counts[x.state] ?? 0) + 1;
    out.push({
      name: s.name,
      dependsOn: s.dependsOn,
      when: s.when,
      taskId: x.taskId,
      state: x.state,
      skipReason: x.skipReason,
      attempts: x.attempts,
      releasedAt: iso(x.releasedAt),
      startedAt: iso(x.startedAt),
      endedAt: iso(x.endedAt),
      durationMs: x.startedAt === null ? null : (x.endedAt ?? now) - x.startedAt,
      result: x.result,
      outputs: x.outputs === null || viewer === r.owner ? x.outputs : Object.fromEntries(Object.keys(x.outputs).map((k) => [k, ''])),
      critical: onPath.has(s.name),
    });
  }
  return { run: dagRunJson(r, viewer), steps: out, criticalPath: path, counts };
}
