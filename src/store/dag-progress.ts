/**
 * What both stores do with a run when some of its steps changed, inside the
 * transaction that changed them: read the run's row (its step states,
 * core/dag/step-states.ts), ask the core (core/dag/release.ts settle,
 * runOutcome) what follows, and get back the writes to make and the run's
 * new step states. The stores only persist the plan (sqlite/dag-runs.ts,
 * postgres/dag-runs.ts).
 *
 * Also the definitions' parsed graphs, cached by (dag id, version): a
 * version is immutable, so a cached graph can never be stale, and a run's
 * progress does not re-validate its definition at every step's end.
 */
import type { DagDefinition } from '../core/dag/dag-definition.js';
import { validateDagGraph, type DagGraph } from '../core/dag/dag-graph.js';
import { classify, runOutcome, settle, settleAll, type RunState, type SkipReason, type StepStatus, type StepWrite } from '../core/dag/release.js';
import { planDagRetry } from '../core/dag/retry-plan.js';
import { releaseEnv } from '../core/dag/step-env.js';
import { decodeStepStates, encodeStepStates } from '../core/dag/step-states.js';
import type { TaskState } from '../core/task-state.js';

export interface ParsedDag {
  definition: DagDefinition;
  graph: DagGraph;
}

const GRAPHS_KEPT = 256;
const graphs = new Map<string, ParsedDag>();

/** The parsed definition of (dagId, version) if cached (then it becomes the most recently used). */
export function cachedDag(dagId: string, version: number): ParsedDag | undefined {
  const key = `${dagId}\n${version}`;
  const p = graphs.get(key);
  if (p) {
    // Most recently used last: Map keeps insertion order, so re-insert.
    graphs.delete(key);
    graphs.set(key, p);
  }
  return p;
}

/** Parses the stored definition JSON of (dagId, version) and caches it. */
export function cacheDag(dagId: string, version: number, text: string): ParsedDag {
  const definition = JSON.parse(text) as DagDefinition;
  const p = { definition, graph: validateDagGraph(definition.steps) };
  graphs.set(`${dagId}\n${version}`, p);
  if (graphs.size > GRAPHS_KEPT) graphs.delete(graphs.keys().next().value!);
  return p;
}

/** The run's row as progress reads it (locked on PostgreSQL). */
export interface RunHead {
  id: string;
  dag_id: string;
  version: number;
  state: string;
  /** core/dag/step-states.ts: one character per step. */
  step_states: string;
  /** Epoch ms of the run's last progress (every step end writes it). */
  updated_at: number;
}

/** A step whose task reached `state` (a terminal state) in the calling transaction. */
export interface StepChange {
  step: string;
  state: TaskState;
}

/**
 * One write of a plan: a pending step (state `ready`) released or skipped,
 * keyed by its step name (tasks (dag_run_id, dag_step) is unique). A release
 * names its dependencies: the store reads their outputs and stores
 * releaseEnv(stored env, outputs) as the step's env (core/dag/step-env.ts)
 * when any wrote some.
 */
export type PlannedStepWrite =
  | { step: string; to: 'waiting'; deps: string[]; detail: Record<string, unknown> }
  | { step: string; to: 'skipped'; skipReason: SkipReason; detail: Record<string, unknown> };

export interface RunProgress {
  writes: PlannedStepWrite[];
  /** The run's end once every step has ended; null while any has not. */
  runEnd: 'succeeded' | 'failed' | null;
  /** When the writes happen: see progressTime. The stores date the writes, their events and the run's end with it. */
  at: number;
  /** The run's step states after the plan (dag_runs.step_states). */
  stepStates: string;
}

/**
 * The time a run's progress is dated: the caller's `now`, or the run's last
 * progress as read inside the transaction if that is later. The caller's
 * `now` was taken before the transaction, and on PostgreSQL the transaction
 * may then wait for the run's row while another server commits a step's end
 * (and its progress) with a later `now` (seen: 13 ms): the release that end
 * allows is made after it and must not be dated before it, nor may a run
 * end before its last step (test/store/contract-dags.ts).
 */
export function progressTime(now: number, run: Pick<RunHead, 'updated_at'>): number {
  return Math.max(now, run.updated_at);
}

function statusesOf(dag: ParsedDag, run: Pick<RunHead, 'step_states'>): StepStatus[] {
  return decodeStepStates(run.step_states, dag.graph.steps.length);
}

/**
 * The writes that follow from `changes` (steps whose tasks just ended, in
 * this transaction) given the run's step states as read inside it, and the
 * run's end.
 */
export function planRunProgress(dag: ParsedDag, run: RunHead, changes: readonly StepChange[], now: number): RunProgress {
  const statuses = statusesOf(dag, run);
  const changed: number[] = [];
  for (const c of changes) {
    const i = dag.graph.index.get(c.step);
    if (i === undefined) continue;
    statuses[i] = { state: c.state, skipReason: null };
    changed.push(i);
  }
  return finish(dag, statuses, settle(dag.graph, statuses, changed), progressTime(now, run));
}

/** A run's start: every step pending, the roots released (core/dag/release.ts settleAll). */
export function planRunStart(dag: ParsedDag, now: number): RunProgress {
  const statuses: StepStatus[] = dag.graph.steps.map(() => ({ state: 'ready', skipReason: null }));
  return finish(dag, statuses, settleAll(dag.graph, statuses), now);
}

function finish(dag: ParsedDag, statuses: StepStatus[], writes: StepWrite[], at: number): RunProgress {
  const { graph } = dag;
  const out: PlannedStepWrite[] = [];
  for (const w of writes) {
    const step = graph.steps[w.step]!.name;
    if (w.action === 'release') {
      statuses[w.step] = { state: 'waiting', skipReason: null };
      const deps = graph.deps[w.step]!.map((j) => graph.steps[j]!.name);
      out.push({ step, to: 'waiting', deps, detail: { dag: { step, dependencies: deps } } });
    } else {
      statuses[w.step] = { state: 'skipped', skipReason: w.reason };
      out.push({ step, to: 'skipped', skipReason: w.reason, detail: { dag: { step, reason: w.reason, because: w.because } } });
    }
  }
  return { writes: out, runEnd: runOutcome(statuses), at, stepStates: encodeStepStates(statuses) };
}

/**
 * `retryDagRun`'s plan (core/dag/retry-plan.ts): the steps to reset to
 * `ready` (names), then the releases and skips of the reset steps. Throws
 * ConflictError as planDagRetry does.
 */
export function planRunRetry(dag: ParsedDag, run: RunHead, now: number): { reset: string[]; progress: RunProgress } {
  const statuses = statusesOf(dag, run);
  const plan = planDagRetry(run.id, run.state as RunState, dag.graph, statuses);
  for (const i of plan.reset) statuses[i] = { state: 'ready', skipReason: null };
  return { reset: plan.reset.map((i) => dag.graph.steps[i]!.name), progress: finish(dag, statuses, plan.writes, progressTime(now, run)) };
}

/** A cancelled run's step states: every step that had not ended is cancelled (cancelDagRun cancels their tasks). */
export function cancelledStepStates(dag: ParsedDag, run: Pick<RunHead, 'step_states'>): string {
  return encodeStepStates(statusesOf(dag, run).map((s) => (classify(s) === 'pending' ? { state: 'cancelled', skipReason: null } : s)));
}

/** The env a released step gets: its stored env plus its dependencies' outputs (null: none wrote any, the env stays). */
export function releasedEnv(storedEnv: string, deps: readonly string[], outputs: ReadonlyMap<string, string>): string | null {
  const withOutputs = deps.filter((d) => outputs.has(d));
  if (withOutputs.length === 0) return null;
  return JSON.stringify(releaseEnv(JSON.parse(storedEnv) as Record<string, string>, withOutputs.map((step) => ({ step, outputs: JSON.parse(outputs.get(step)!) as Record<string, string> }))));
}
