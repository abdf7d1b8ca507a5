/**
 * `npm run bench`: Drover against a baseline measured in the same run, on
 * this machine, with real server and agent processes (not part of npm test).
 *
 *  1. submit-to-start latency: 200 sequential `true` tasks on an idle agent.
 *  2. throughput: 2,000 `/bin/true` tasks across 2 agents vs `xargs -P` running
 *     the same 2,000 `/bin/true`.
 *  3. peak memory (VmHWM) of the server and of one agent after that run.
 *  4. a task that prints 1 GiB (BENCH_LOG_BYTES to change): time, and peak memory of both processes.
 *  5. the control plane alone (noop agents), on SQLite and PostgreSQL, against
 *     graphile-worker and pg-boss on the same PostgreSQL: see control-plane.ts.
 *  6. the dashboard: the Tasks page's API calls at 1,000,000 tasks against raw
 *     SQL, and the live stream's delay at 200 tasks/s: see dashboard.ts.
 *
 * Environment: BENCH_LATENCY_N (200), BENCH_TASKS (2000), BENCH_SLOTS (slots per agent, 4),
 * BENCH_LOG_BYTES (1073741824; 0 skips), BENCH_SECTIONS (process,control-plane,recovery,dashboard: which to run;
 * `process` is 1-4), and control-plane.ts's own.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { startCluster, type Cluster } from '../test/e2e/harness.js';
import { controlPlane } from './control-plane.js';
import { dashboard } from './dashboard.js';
import { recovery } from './recovery.js';
import { submitLatency } from './submit-latency.js';

const LATENCY_N = Number(process.env.BENCH_LATENCY_N ?? 200);
const TASKS = Number(process.env.BENCH_TASKS ?? 2000);
const SLOTS = Number(process.env.BENCH_SLOTS ?? 4);
const LOG_BYTES = Number(process.env.BENCH_LOG_BYTES ?? 1024 ** 3);
const SECTIONS = new Set((process.env.BENCH_SECTIONS ?? 'process,control-plane,recovery,dashboard').split(',').map((s) => s.trim()));

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

function peakKb(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : NaN;
}

const mb = (kb: number) => `${(kb / 1024).toFixed(0)} MiB`;
const rows: Array<[string, string, string]> = [];

async function latency(c: Cluster): Promise<void> {
  const { claim, done } = await submitLatency(c, LATENCY_N);
  claim.sort((a, b) => a - b);
  done.sort((a, b) => a - b);
  const f = (s: number[]) => `p50 ${pct(s, 50).toFixed(1)} ms, p95 ${pct(s, 95).toFixed(1)} ms, p99 ${pct(s, 99).toFixed(1)} ms`;
  rows.push([`submit → claimed and pushed (server clock, ${LATENCY_N} sequential)`, f(claim), 'target p50 ≤ 10 ms, p99 ≤ 50 ms']);
  rows.push([`submit → process ran and exit stored (client clock)`, f(done), 'includes the spawn of `true` and its exit report']);
}

async function throughput(c: Cluster): Promise<void> {
  const t0 = performance.now();
  const ids: string[] = [];
  const inflight = 32;
  let next = 0;
  await Promise.all(
    Array.from({ length: inflight }, async () => {
      while (next < TASKS) {
        next++;
        ids.push(await c.api.submit({ command: '/bin/true' }));
      }
    }),
  );
  for (;;) {
    const busy = await Promise.all(['ready', 'waiting', 'running', 'retrying'].map((s) => c.api.req('GET', `/v1/tasks?state=${s}&limit=1`)));
    if (busy.every((r) => r.body.tasks.length === 0)) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const droverS = (performance.now() - t0) / 1000;
  const ok = await c.api.req('GET', '/v1/tasks?state=succeeded&limit=1');
  if (!ok.body.tasks.length) throw new Error('no task succeeded');

  const parallel = 2 * SLOTS;
  const x0 = performance.now();
  const res = spawnSync('sh', ['-c', `seq ${TASKS} | xargs -P ${parallel} -n 1 /bin/true`]);
  if (res.status !== 0) throw new Error(`xargs failed: ${res.stderr}`);
  const xargsS = (performance.now() - x0) / 1000;
  // A second reference: Node's own child_process.spawn in a loop, nothing else.
  // The agents spawn with it, so this is the ceiling for any Node-based agent.
  const n0 = performance.now();
  let spawned = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (spawned < TASKS) {
        spawned++;
        await new Promise<void>((done) => {
          const ch = spawn('/bin/true', [], { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
          ch.stdout!.resume();
          ch.stderr!.resume();
          ch.on('close', () => done());
        });
      }
    }),
  );
  const nodeS = (performance.now() - n0) / 1000;
  const dRate = TASKS / droverS;
  const xRate = TASKS / xargsS;
  rows.push([`throughput: ${TASKS} /bin/true, 2 agents × ${SLOTS} slots`, `${dRate.toFixed(0)} tasks/s (${droverS.toFixed(2)} s)`, 'submit of all tasks included']);
  rows.push([`baseline: xargs -P ${parallel} -n 1 /bin/true, same ${TASKS}`, `${xRate.toFixed(0)} tasks/s (${xargsS.toFixed(2)} s)`, '']);
  rows.push([`reference: one Node process spawning the same ${TASKS}, ${parallel} at a time`, `${(TASKS / nodeS).toFixed(0)} tasks/s (${nodeS.toFixed(2)} s)`, 'no scheduler: the cost of fork+exec from Node alone']);
  rows.push(['Drover ÷ xargs', `${((100 * dRate) / xRate).toFixed(0)} %`, 'target ≥ 50 %']);
  rows.push(['Drover ÷ Node spawn loop', `${((100 * dRate * nodeS) / TASKS).toFixed(0)} %`, '']);
  rows.push(['peak memory (VmHWM) after the throughput run', `server ${mb(peakKb(c.server.child.pid!))}, agent ${mb(peakKb(c.workers[0]!.child.pid!))}`, '']);
}

async function bigLog(c: Cluster): Promise<void> {
  if (!LOG_BYTES) return;
  const t0 = performance.now();
  const id = await c.api.submit({ command: 'head', args: ['-c', String(LOG_BYTES), '/dev/zero'] });
  // Count the bytes as they stream, without keeping them.
  const res = await fetch(`${c.url}/v1/tasks/${id}/logs?follow=1`, { headers: { authorization: `Bearer ${c.api.token}` } });
  let n = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) n += chunk.byteLength;
  const s = (performance.now() - t0) / 1000;
  const t = await c.api.task(id);
  if (t.task.state !== 'succeeded' || n !== LOG_BYTES) throw new Error(`big log: ${t.task.state}, ${n} bytes`);
  rows.push([`a task printing ${(LOG_BYTES / 1024 ** 2).toFixed(0)} MiB, followed live`, `${s.toFixed(1)} s (${(LOG_BYTES / 1024 ** 2 / s).toFixed(0)} MiB/s)`, '']);
  rows.push(['peak memory after it', `server ${mb(peakKb(c.server.child.pid!))}, agents ${c.workers.map((w) => mb(peakKb(w.child.pid!))).join(' / ')}`, 'bounded: logs are streamed with a 1 MiB window']);
}

async function main(): Promise<void> {
  const cpu = execFileSync('sh', ['-c', "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"]).toString().trim();
  console.log(`Drover bench on ${cpu}, ${process.env.BENCH_NOTE ?? ''}node ${process.version}`);
  if (SECTIONS.has('process')) {
    let c = await startCluster({ workers: 1, slots: SLOTS });
    try {
      await latency(c);
    } finally {
      await c.close();
    }
    c = await startCluster({ workers: 2, slots: SLOTS });
    try {
      await throughput(c);
      await bigLog(c);
    } finally {
      await c.close();
    }
  }
  if (SECTIONS.has('control-plane')) await controlPlane(rows);
  if (SECTIONS.has('recovery')) rows.push(...(await recovery()));
  if (SECTIONS.has('dashboard')) await dashboard(rows);
  const w = [Math.max(...rows.map((r) => r[0].length)), Math.max(...rows.map((r) => r[1].length))];
  console.log(`\n| measure | result | note |\n| --- | --- | --- |`);
  for (const r of rows) console.log(`| ${r[0].padEnd(w[0]!)} | ${r[1].padEnd(w[1]!)} | ${r[2]} |`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
