/**
 * The DAG section's shapes and probes (bench/sections/dag.ts): the bodies of
 * issue 12's benchmark graphs (a chain, a wide fan-out), one run started and
 * timed against the end the store recorded, and the time a run's steps spent
 * inside their processes as the agent measured it.
 *
 * Clocks: the client's wallMs() (performance.timeOrigin + now) and the
 * server's Date.now() (what the store writes as endedAt, integer ms) read the
 * same machine clock, so a span may start on one and end on the other.
 */
import type { Api } from './drover.js';
import { counts } from './drover.js';
import { inFlight, until, wallMs } from './stats.js';

/** Every step runs this: an absolute path, so neither side pays a PATH lookup the other does not (in sh, `true` would be a builtin). */
export const TRUE = '/bin/true';

export interface DagStepBody {
  name: string;
  command: string;
  depends_on?: string[];
}
export interface DagBody {
  name: string;
  description: string;
  steps: DagStepBody[];
}

/** Step i of a chain: s000, s001, ... (zero-padded, so the name prefix `<dag>/s099` matches one step). */
export const chainStep = (i: number): string => `s${String(i).padStart(3, '0')}`;

/** s000 → s001 → ... → s(n-1), each running /bin/true. */
export function chainBody(name: string, n: number): DagBody {
  return {
    name,
    description: `bench: a chain of ${n} × ${TRUE}`,
    steps: Array.from({ length: n }, (_, i) => ({ name: chainStep(i), command: TRUE, ...(i > 0 ? { depends_on: [chainStep(i - 1)] } : {}) })),
  };
}

/** start → `width` parallel steps → end (issue 12's 1,000-step graph with width 998). */
export function fanOutBody(name: string, width: number): DagBody {
  const mid = Array.from({ length: width }, (_, i) => `m${String(i).padStart(4, '0')}`);
  return {
    name,
    description: `bench: start → ${width} × ${TRUE} → end`,
    steps: [{ name: 'start', command: TRUE }, ...mid.map((m) => ({ name: m, command: TRUE, depends_on: ['start'] })), { name: 'end', command: TRUE, depends_on: mid }],
  };
}

/**
 * POST /v1/dags; `body` may be serialized beforehand, so a timed call does not
 * time the client's JSON.stringify. Returns whether a version was stored (201)
 * and the answer's size in bytes.
 */
export async function applyDag(api: Api, body: DagBody | string): Promise<{ created: boolean; bytes: number }> {
  const r = await api.req('POST', '/v1/dags', body);
  if (r.status !== 201 && r.status !== 200) throw new Error(`POST /v1/dags: ${r.status} ${r.text.slice(0, 300)}`);
  return { created: r.status === 201, bytes: Buffer.byteLength(r.text) };
}

/** POST /v1/dags/:name/runs, stamped with the client's wallMs() just before the request. */
export async function startRun(api: Api, dag: string): Promise<{ runId: string; t0: number }> {
  const t0 = wallMs();
  const r = await api.req('POST', `/v1/dags/${encodeURIComponent(dag)}/runs`, {});
  if (r.status !== 201) throw new Error(`POST /v1/dags/${dag}/runs: ${r.status} ${r.text.slice(0, 300)}`);
  return { runId: r.body.run.id, t0 };
}

/**
 * The task of `step` in run `runId`: the newest task named `<dag>/<step>`
 * (GET /v1/tasks?name=, a name-prefix index range, newest first), checked to
 * be this run's. A light request, unlike the run's detail.
 */
export async function stepTask(api: Api, dag: string, step: string, runId: string): Promise<string> {
  const r = await api.req('GET', `/v1/tasks?name=${encodeURIComponent(`${dag}/${step}`)}&limit=1`);
  const t = r.body?.tasks?.[0];
  if (r.status !== 200 || !t || t.dagRunId !== runId) throw new Error(`step ${step} of run ${runId}: ${r.status} ${r.text.slice(0, 300)}`);
  return t.id;
}

/** Returns when the server closes the task's log follow: the task is terminal (push: the follower wakes on the store's task signal). */
export async function followToEnd(api: Api, taskId: string): Promise<void> {
  const r = await api.req('GET', `/v1/tasks/${taskId}/logs?follow=1`);
  if (r.status !== 200) throw new Error(`GET /v1/tasks/${taskId}/logs?follow=1: ${r.status} ${r.text.slice(0, 300)}`);
}

export interface RunEnd {
  /** run.endedAt as stored (epoch ms, server clock): written in the transaction that ended its last step. */
  storedEnd: number;
  /** Each step's task id, in definition order. */
  taskIds: string[];
}

/** The run's detail, checked: succeeded, every step succeeded in exactly one attempt. */
export async function succeededRun(api: Api, runId: string, steps: number): Promise<RunEnd> {
  const r = await api.req('GET', `/v1/dag-runs/${runId}`);
  if (r.status !== 200) throw new Error(`GET /v1/dag-runs/${runId}: ${r.status} ${r.text.slice(0, 300)}`);
  const { run, steps: rows } = r.body as { run: { state: string; endedAt: string | null }; steps: Array<{ name: string; taskId: string; state: string; attempts: number }> };
  if (run.state !== 'succeeded' || run.endedAt === null) throw new Error(`run ${runId} is ${run.state}: ${JSON.stringify(r.body.counts)}`);
  const bad = rows.filter((s) => s.state !== 'succeeded' || s.attempts !== 1);
  if (rows.length !== steps || bad.length) throw new Error(`run ${runId}: ${rows.length} steps, not clean: ${JSON.stringify(bad.slice(0, 3))}`);
  return { storedEnd: Date.parse(run.endedAt), taskIds: rows.map((s) => s.taskId) };
}

/**
 * Σ of the tasks' attempts' durationMs: the agent's Date.now() just before
 * its spawner call → its event loop seeing the process's exit (integer ms
 * each; see the section's notes for what it leaves out).
 */
export async function insideMs(api: Api, taskIds: readonly string[]): Promise<number> {
  let sum = 0;
  await inFlight(taskIds.length, 8, async (i) => {
    for (const a of (await api.task(taskIds[i]!)).attempts) sum += a.durationMs ?? 0;
  });
  return sum;
}

/** Until /v1/stats/counts shows `n` succeeded, polled every `everyMs`; fails at once on a failed or cancelled task. Returns wallMs() when seen. */
export async function seenSucceeded(api: Api, n: number, everyMs: number, timeoutMs = 600_000): Promise<number> {
  await until(
    `${n} tasks succeeded`,
    async () => {
      const k = await counts(api);
      if ((k.failed ?? 0) + (k.cancelled ?? 0) > 0) throw new Error(`tasks failed or were cancelled: ${JSON.stringify(k)}`);
      return (k.succeeded ?? 0) >= n;
    },
    timeoutMs,
    everyMs,
  );
  return wallMs();
}
