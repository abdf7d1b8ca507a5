/**
 * DAG engine (issue 12, "Performance"): real `drover server` + ONE
 * `drover worker --slots 8` (process executor, every step /bin/true), on
 * SQLite and on PostgreSQL, each store in one cluster:
 *
 * - Scheduler overhead per step: a chain of 100 steps; (wall − time inside
 *   the processes) ÷ 100. Wall: the client's wallMs() just before
 *   POST /v1/dags/:name/runs → the run's endedAt as stored (written in the
 *   transaction that ended the last step; server clock, ms). Inside: Σ of the
 *   steps' attempts' durationMs as the agent measured them (Date.now() just
 *   before its spawner call → its event loop seeing the exit through the
 *   pidfd). Targets ≤ 5 ms (SQLite), ≤ 10 ms (PostgreSQL). Side by side,
 *   interleaved run by run: the same 100 /bin/true from a shell loop, and as
 *   100 sequential submit-and-wait round trips through Drover (POST
 *   /v1/tasks, follow its log until the server closes it, GET the task: what
 *   `drover submit --wait` does), with the same overhead formula.
 * - A 1,000-step fan-out (start → 998 → end): its validation in-process and
 *   through POST /v1/dags (a cyclic copy refused with 400 after every check:
 *   target < 100 ms), beside the same body stored (201) and re-applied (200);
 *   the run's total against the same 998 /bin/true as one POST
 *   /v1/tasks/batch drained by the same worker.
 *
 * Windmill's published comparison of engines (40 light tasks in a row) puts
 * the fastest at about 30 ms per step and Airflow at about 3 s.
 */
import { toDagDefinition } from '../../src/server/dag-input.js';
import type { DagBody as ServerDagBody } from '../../src/server/dag-schemas.js';
import { validateDagGraph } from '../../src/core/dag/dag-graph.js';
import { shellLoopTrue } from '../peers/process-spawn.js';
import type { Ctx } from '../lib/context.js';
import { applyDag, chainBody, type DagBody, chainStep, fanOutBody, followToEnd, insideMs, seenSucceeded, startRun, stepTask, succeededRun, TRUE } from '../lib/dag.js';
import { cluster, counts, listTasks, startAgent, submitBatch, type Api } from '../lib/drover.js';
import { withDatabase } from '../lib/pg.js';
import { met } from '../lib/report.js';
import { dist, wallMs } from '../lib/stats.js';

const SLOTS = 8;
const CHAIN = 100;
const WIDTH = 998;
const FAN_STEPS = WIDTH + 2;
/** Polling of /v1/stats/counts while a fan-out or its batch drains (both sides alike). */
const COUNTS_EVERY_MS = 50;
const SEQ_WARMUP = 10;

/** One sequence of CHAIN /bin/true: wall (start → stored end), seen (start → the client saw the end), inside (Σ attempt durationMs). */
interface Sample {
  wallMs: number;
  seenMs: number;
  insideMs: number;
}
const overhead = (s: Sample): number => (s.wallMs - s.insideMs) / CHAIN;

async function chainRun(api: Api, dag: string): Promise<Sample> {
  const { runId, t0 } = await startRun(api, dag);
  await followToEnd(api, await stepTask(api, dag, chainStep(CHAIN - 1), runId));
  const seen = wallMs();
  const end = await succeededRun(api, runId, CHAIN);
  return { wallMs: end.storedEnd - t0, seenMs: seen - t0, insideMs: await insideMs(api, end.taskIds) };
}

/** n × (POST /v1/tasks, follow its log to the end, GET the task), one after another. Wall ends on the n-th task's stored end. */
async function submitAndWait(api: Api, n: number): Promise<Sample> {
  const t0 = wallMs();
  let inside = 0;
  let storedEnd = NaN;
  for (let i = 0; i < n; i++) {
    const d = await api.waitDone(await api.submit({ name: 'bench-dag-seq', command: TRUE }));
    const a = d.attempts[0];
    if (d.task.state !== 'succeeded' || d.attempts.length !== 1) throw new Error(`sequential task ${d.task.id}: ${d.task.state}, ${d.attempts.length} attempts`);
    inside += a.durationMs ?? 0;
    storedEnd = Date.parse(a.endedAt);
  }
  return { wallMs: storedEnd - t0, seenMs: wallMs() - t0, insideMs: inside };
}

async function fanOutRun(api: Api, dag: string): Promise<{ totalMs: number; seenMs: number }> {
  const before = (await counts(api)).succeeded ?? 0;
  const { runId, t0 } = await startRun(api, dag);
  const seen = await seenSucceeded(api, before + FAN_STEPS, COUNTS_EVERY_MS);
  const end = await succeededRun(api, runId, FAN_STEPS);
  return { totalMs: end.storedEnd - t0, seenMs: seen - t0 };
}

async function batchRun(api: Api): Promise<{ totalMs: number; seenMs: number }> {
  const before = (await counts(api)).succeeded ?? 0;
  const t0 = wallMs();
  const ids = new Set(await submitBatch(api, WIDTH, { name: 'bench-dag-batch', command: TRUE }));
  const seen = await seenSucceeded(api, before + WIDTH, COUNTS_EVERY_MS);
  const ends = (await listTasks(api, 'succeeded')).filter((t) => ids.has(t.id)).map((t) => Date.parse(t.endedAt));
  if (ends.length !== WIDTH || ends.some((e) => !Number.isFinite(e))) throw new Error(`batch: ${ends.length} of ${WIDTH} succeeded with an endedAt`);
  return { totalMs: Math.max(...ends) - t0, seenMs: seen - t0 };
}

interface StoreResult {
  chains: Sample[];
  seqs: Sample[];
  shellMs: number[];
  applyMs: number[];
  /** The same body applied again: 200, nothing stored. */
  againMs: number[];
  refuseMs: number[];
  /** Size of the 201's answer. */
  answerBytes: number;
  fan: Array<{ totalMs: number; seenMs: number }>;
  batch: Array<{ totalMs: number; seenMs: number }>;
}

async function measure(db: string | undefined, what: string, runs: number, applies: number): Promise<StoreResult> {
  const c = await cluster({ workers: 0, ...(db ? { db } : {}) }, what);
  try {
    await startAgent(c, SLOTS);
    const api = c.api;
    await applyDag(api, chainBody('bench-chain', CHAIN));
    await applyDag(api, fanOutBody('bench-fanout', WIDTH));
    // Warm-up, dropped: one chain, a few round trips, one shell loop.
    await chainRun(api, 'bench-chain');
    await submitAndWait(api, SEQ_WARMUP);
    shellLoopTrue(CHAIN);
    const r: StoreResult = { chains: [], seqs: [], shellMs: [], applyMs: [], againMs: [], refuseMs: [], answerBytes: 0, fan: [], batch: [] };
    for (let k = 0; k < runs; k++) {
      r.chains.push(await chainRun(api, 'bench-chain'));
      r.seqs.push(await submitAndWait(api, CHAIN));
      r.shellMs.push(shellLoopTrue(CHAIN).ms);
    }
    for (let k = 0; k < applies; k++) {
      const text = JSON.stringify(fanOutBody(`bench-fanout-apply-${k}`, WIDTH));
      const cyclic = JSON.stringify(withCycle(fanOutBody(`bench-fanout-cycle-${k}`, WIDTH)));
      let t0 = performance.now();
      const stored = await applyDag(api, text);
      r.applyMs.push(performance.now() - t0);
      if (!stored.created) throw new Error(`apply ${k}: expected a new DAG (201)`);
      r.answerBytes = stored.bytes;
      t0 = performance.now();
      const again = await applyDag(api, text);
      r.againMs.push(performance.now() - t0);
      if (again.created) throw new Error(`apply ${k} again: expected 200, nothing stored`);
      t0 = performance.now();
      await refused(api, cyclic);
      r.refuseMs.push(performance.now() - t0);
    }
    // Alternate which goes first, so a drift of the machine's speed does not favour one side.
    for (let k = 0; k < runs; k++) {
      if (k % 2 === 0) {
        r.fan.push(await fanOutRun(api, 'bench-fanout'));
        r.batch.push(await batchRun(api));
      } else {
        r.batch.push(await batchRun(api));
        r.fan.push(await fanOutRun(api, 'bench-fanout'));
      }
    }
    return r;
  } finally {
    await c.close();
  }
}

/**
 * The body with `start` depending on `end`: a cycle through every branch,
 * which validateDagGraph finds last (after the names, the dependencies and
 * Kahn's pass over the whole graph), so its 400 comes after all the
 * validation a good body gets and before anything is stored.
 */
function withCycle(body: DagBody): DagBody {
  return { ...body, steps: body.steps.map((s) => (s.name === 'start' ? { ...s, depends_on: ['end'] } : s)) };
}

async function refused(api: Api, text: string): Promise<void> {
  const r = await api.req('POST', '/v1/dags', text);
  if (r.status !== 400 || !/cycle/i.test(r.text)) throw new Error(`a cyclic DAG: expected 400 naming the cycle, got ${r.status} ${r.text.slice(0, 300)}`);
}

/** In-process validation of the 1,000-step body: the core's graph check alone, and the server's whole body → definition. */
function pureValidation(reps: number): { graph: number[]; body: number[] } {
  const body = fanOutBody('bench-fanout-pure', WIDTH) as unknown as ServerDagBody;
  const def = toDagDefinition(body);
  for (let i = 0; i < 3; i++) validateDagGraph(def.steps);
  const graph: number[] = [];
  const whole: number[] = [];
  for (let i = 0; i < reps; i++) {
    let t0 = performance.now();
    validateDagGraph(def.steps);
    graph.push(performance.now() - t0);
    t0 = performance.now();
    toDagDefinition(body);
    whole.push(performance.now() - t0);
  }
  return { graph, body: whole };
}

const ms = (x: number, digits = 1): string => `${x.toFixed(digits)} ms`;
const list = (xs: number[], digits = 1): string => xs.map((x) => x.toFixed(digits)).join(', ');
const p50 = (xs: number[]): number => dist(xs).p50;

export async function dag({ report, sizes }: Ctx): Promise<void> {
  const { dagRuns: runs, dagApplies: applies } = sizes;
  const worker = `one \`drover worker --slots ${SLOTS}\` (process executor)`;

  await report.part('DAG: 1,000-step fan-out validation in-process', async () => {
    const v = pureValidation(20);
    const g = p50(v.graph);
    const b = p50(v.body);
    report.add({
      measure: `DAG: validate a 1,000-step fan-out in-process (start → ${WIDTH} → end)`,
      drover: `validateDagGraph p50 ${ms(g, 2)}; whole body → definition p50 ${ms(b, 2)}`,
      peer: '',
      ratio: '',
      met: met(b < 100, '< 100 ms'),
      note: `In the bench process, 20 timed calls after 3 warm-ups: validateDagGraph (core/dag/dag-graph.ts: names, duplicates, missing dependencies, cycles, topological order) on the ${FAN_STEPS} steps; and toDagDefinition (server/dag-input.ts: every step through the task submit rules, then validateDagGraph), i.e. what POST /v1/dags does after the schema check and before the store. Span: performance.now() around each call.`,
    });
  });

  for (const [store, target, db] of [
    ['SQLite', 5, undefined],
    ['PostgreSQL', 10, 'pg'],
  ] as const) {
    const storeCfg = store === 'SQLite' ? '`drover server --db sqlite:<tmp>/drover.db` (WAL, synchronous=FULL)' : '`drover server --db postgres://…/drover_bench_dag_<random>` (synchronous_commit=on)';
    await report.part(`DAG on ${store}`, async () => {
      const r = db ? await withDatabase('dag', (url) => measure(url, `Drover ${store}`, runs, applies)) : await measure(undefined, `Drover ${store}`, runs, applies);
      const over = r.chains.map(overhead);
      const seqOver = r.seqs.map(overhead);
      const o = p50(over);
      const so = p50(seqOver);
      const lag = r.chains.map((s) => s.seenMs - s.wallMs);
      const setup = `${storeCfg}, ${worker}; one cluster for every row of this store; each measured chain is followed by one sequential submit-and-wait loop and one shell loop (interleaved), after a dropped warm-up (one chain, ${SEQ_WARMUP} round trips, one shell loop)`;
      const inside = `"inside the processes" is Σ of the steps' attempts' durationMs as the agent measured them: Date.now() just before its spawner call (posix_spawn through the native addon) → its event loop seeing the exit through the pidfd, integer ms each (±1 ms per step, unbiased in the sum); the agent's work dir, argv resolution, the wait for the process group to empty, the pipes' drain, the output-file read and the exit report are outside it, so they count as overhead`;
      report.add({
        measure: `DAG chain of ${CHAIN} × /bin/true: scheduler overhead per step, ${store}`,
        drover: `p50 ${ms(o, 2)}/step (chains: ${list(over, 2)})`,
        peer: `${CHAIN} sequential submit-and-wait: p50 ${ms(so, 2)}/task (${list(seqOver, 2)})`,
        ratio: `${(o / so).toFixed(2)}× (≤ 1 better)`,
        met: met(o <= target, `≤ ${target} ms per step`),
        note: `Overhead = (wall − time inside the processes) ÷ ${CHAIN}. Wall: the client's wallMs() just before POST /v1/dags/bench-chain/runs → the run's endedAt as stored (server clock, ms; written in the transaction that ended the last step). ${inside}. The client saw the end (GET /v1/tasks/<last step>/logs?follow=1 closed by the server, woken by the store's task signal) ${list(lag)} ms after the stored endedAt. Peer (Drover without a DAG): ${CHAIN} × (POST /v1/tasks {command: /bin/true}, GET …/logs?follow=1 until the server closes it, GET /v1/tasks/:id), what \`drover submit --wait\` does, one after another; wall: client before the first POST → the ${CHAIN}th task's attempt endedAt as stored; same formula. Windmill's comparison of engines (40 light tasks in a row): about 30 ms per step for the fastest to about 3 s for Airflow. ${setup}.`,
      });
      const wallStep = p50(r.chains.map((s) => s.wallMs / CHAIN));
      const shStep = p50(r.shellMs.map((x) => x / CHAIN));
      report.add({
        measure: `DAG chain of ${CHAIN} × /bin/true: wall per step vs a shell loop, ${store}`,
        drover: `p50 ${ms(wallStep, 2)}/step (chain walls ${list(r.chains.map((s) => s.wallMs), 0)} ms, of which inside the processes ${list(r.chains.map((s) => s.insideMs), 0)} ms)`,
        peer: `shell loop p50 ${ms(shStep, 2)}/step; submit-and-wait p50 ${ms(p50(r.seqs.map((s) => s.wallMs / CHAIN)), 2)}/task`,
        ratio: `${(wallStep / shStep).toFixed(1)}× the shell loop (≤ 1 better)`,
        met: '',
        note: `Drover: wall as in the overhead row (client before POST …/runs → the run's stored endedAt) ÷ ${CHAIN}. Shell loop: \`sh -c 'for i in $(seq ${CHAIN}); do /bin/true; done'\` run by spawnSync from the bench process; span: just before sh is spawned → its exit (sh's own start inside) ÷ ${CHAIN}: fork + exec + wait and nothing else, the floor. Submit-and-wait: wall as in the overhead row ÷ ${CHAIN}. ${setup}.`,
      });
      const a = dist(r.applyMs);
      const g = dist(r.againMs);
      const v = dist(r.refuseMs);
      report.add({
        measure: `DAG: validate a 1,000-step fan-out through POST /v1/dags, ${store}`,
        drover: `refused (cycle, 400) p50 ${ms(v.p50)}, max ${ms(v.max)}; unchanged (200) p50 ${ms(g.p50)}; stored (201) p50 ${ms(a.p50)}, max ${ms(a.max)} (${a.n} each)`,
        peer: '',
        ratio: '',
        met: met(v.p50 < 100, 'validation < 100 ms'),
        note: `Span: performance.now() just before the request → its answer read by the client (keep-alive connection; the ${Math.round(JSON.stringify(fanOutBody('x', WIDTH)).length / 1024)} KiB body serialized before the span). Refused: the same ${FAN_STEPS} steps with start depending on end, a cycle through every branch, which the graph check finds last: the server parses and schema-checks the body, puts every step through the task submit rules, checks names and dependencies, runs Kahn's pass over the whole graph, then answers 400 naming the cycle; nothing is stored. This is the validation the issue's < 100 ms is about. Stored: a valid body under a new name each time: the same validation, then the definition hashed and stored in one transaction, and an answer that echoes the whole definition (${Math.round(r.answerBytes / 1024)} KiB of JSON: every step's task template, end's ${WIDTH} dependencies). Unchanged: that body applied again right after: the same validation and hash, the newest version read back, the same echo, nothing stored. ${storeCfg}.`,
      });
      const fanP = p50(r.fan.map((x) => x.totalMs));
      const batchP = p50(r.batch.map((x) => x.totalMs));
      report.add({
        measure: `DAG: 1,000-step fan-out run vs the same ${WIDTH} × /bin/true as one batch, 1 worker × ${SLOTS} slots, ${store}`,
        drover: `run p50 ${ms(fanP, 0)} (${list(r.fan.map((x) => x.totalMs), 0)})`,
        peer: `batch p50 ${ms(batchP, 0)} (${list(r.batch.map((x) => x.totalMs), 0)})`,
        ratio: `${(fanP / batchP).toFixed(2)}× the batch (≤ 1 better)`,
        met: '',
        note: `DAG run: the client's wallMs() just before POST /v1/dags/bench-fanout/runs → the run's endedAt as stored (${FAN_STEPS} steps: start, ${WIDTH} parallel, end; two of them run alone, so the run cannot beat the batch by design). Batch: wallMs() just before POST /v1/tasks/batch of ${WIDTH} {command: /bin/true} → the latest of their endedAt as stored. Both drained by the same ${worker}; both watched by polling /v1/stats/counts every ${COUNTS_EVERY_MS} ms (the client saw the ends ${list(r.fan.map((x) => x.seenMs - x.totalMs), 0)} ms (run) and ${list(r.batch.map((x) => x.seenMs - x.totalMs), 0)} ms (batch) after the stored ones); ${runs} round${runs === 1 ? '' : 's'}, the order alternating. Issue 12 asks that the run finish "as fast as the workers' slots allow": the batch is that limit on this machine in this run. ${storeCfg}.`,
      });
    });
  }
}
