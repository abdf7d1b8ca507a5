/**
 * Latency, open loop: submits on a 20 ms grid (the i-th starts at
 * t0 + 20 ms·i, not waiting for earlier tasks) to an idle worker that runs
 * real processes (`true`). First sizes.warmUp tasks are submitted one by one
 * and run to the end, untimed (the peers as many jobs; context.ts says why);
 * then warm-up submits on the same grid come first and are dropped. Drover's span: the client's wallMs() just before the HTTP request →
 * the agent's own `spawnedAt` (its `process started` debug line, the agent's
 * performance.timeOrigin + performance.now() just after the spawn; same
 * machine, same clock source). Peers: wallMs() just before add/addJob → their
 * handler's first line (in the bench process). Same grid, same run.
 * Drover's span is also printed in two parts, at the agent's `assignedAt`
 * (its `attempt assigned` debug line: the assignment taken up, before the
 * work dir and the spawn): submit → there (the HTTP request, the server's
 * write and claim, the push), and there → process started (the agent).
 */
import { BULLMQ_CONFIG, bullmqLatency } from '../peers/bullmq.js';
import { graphileConfig, graphileLatency } from '../peers/graphile.js';
import type { Ctx } from '../lib/context.js';
import { assignmentsTaken, cluster, processStarts, startAgent, untilSucceeded } from '../lib/drover.js';
import { withDatabase } from '../lib/pg.js';
import { met } from '../lib/report.js';
import { dist, fmtDist, openLoop, until, type Dist } from '../lib/stats.js';

const GRID_MS = 20;
const SLOTS = 10;

/** Per timed submit: the whole span, and its two parts at the agent's assignedAt (ms). */
interface DroverSpans {
  total: number[];
  toAgent: number[];
  inAgent: number[];
}

async function droverLatency(total: number, warm: number, warmUp: number, db: string | undefined, what: string): Promise<DroverSpans> {
  const c = await cluster({ workers: 0, ...(db ? { db } : {}) }, what);
  try {
    const a = await startAgent(c, SLOTS, ['--log-level', 'debug']);
    for (let i = 0; i < warmUp; i++) await c.api.submit({ command: 'true' });
    await untilSucceeded(c.api, warmUp, 300_000);
    const sent: Array<{ id: string; at: number }> = [];
    await openLoop(total, GRID_MS, async (i, at) => {
      sent[i] = { id: await c.api.submit({ command: 'true' }), at };
    });
    await untilSucceeded(c.api, warmUp + total, 120_000);
    let starts = processStarts(a.proc.output());
    await until('the agent to log every `process started`', () => (starts = processStarts(a.proc.output())).size >= warmUp + total, 10_000);
    const taken = assignmentsTaken(a.proc.output());
    const out: DroverSpans = { total: [], toAgent: [], inAgent: [] };
    for (const s of sent.slice(warm)) {
      const spawned = starts.get(s.id);
      const assigned = taken.get(s.id);
      if (spawned === undefined) throw new Error(`${what}: no 'process started' line for task ${s.id}`);
      if (assigned === undefined) throw new Error(`${what}: no 'attempt assigned' line for task ${s.id}`);
      out.total.push(spawned - s.at);
      out.toAgent.push(assigned - s.at);
      out.inAgent.push(spawned - assigned);
    }
    return out;
  } finally {
    await c.close();
  }
}

function row(report: Ctx['report'], measure: string, spans: DroverSpans, p: Dist, peerName: string, note: string): void {
  const d = dist(spans.total);
  const ok = d.p50 <= p.p50 && d.p99 <= p.p99;
  const part = (xs: number[]) => `p50 ${dist(xs).p50.toFixed(1)} ms`;
  report.add({
    measure,
    drover: `${fmtDist(d)} (submit → the agent takes the assignment ${part(spans.toAgent)}; → process started ${part(spans.inAgent)})`,
    peer: fmtDist(p),
    ratio: `p50 ${(d.p50 / p.p50).toFixed(2)}×, p99 ${(d.p99 / p.p99).toFixed(2)}× (≤ 1 better)`,
    met: met(ok, `Drover p50 and p99 ≤ ${peerName}`),
    note,
  });
}

export async function latency({ report, sizes }: Ctx): Promise<void> {
  const { latencyN: n, latencyWarm: warm, warmUp } = sizes;
  const total = n + warm;
  const grid = (fire: (i: number, at: number) => Promise<void>) => openLoop(total, GRID_MS, fire);
  const what = `submit → process started, ${n} submits on a ${GRID_MS} ms grid (open loop), idle worker × ${SLOTS} slots`;
  const span = `span: client wallMs() just before the submit request → Drover: the agent's spawnedAt (\`process started\`, \`drover worker --slots ${SLOTS} --log-level debug\`, command \`true\`), in parts at the agent's assignedAt (\`attempt assigned\`: taken up, before its work dir and spawn); peer: its handler's first line. Before it, ${warmUp.toLocaleString('en-US')} tasks (peers: jobs) submitted one by one and run to the end, untimed; then ${warm} warm-up submits on the grid, dropped`;

  await report.part(`${what}: SQLite vs BullMQ`, async () => {
    const spans = await droverLatency(total, warm, warmUp, undefined, 'Drover SQLite');
    const b = dist((await bullmqLatency(SLOTS, warmUp, grid)).slice(warm));
    row(report, `${what}: SQLite vs BullMQ add → handler`, spans, b, 'BullMQ', `${span}. Peer: ${BULLMQ_CONFIG}, Worker concurrency ${SLOTS} (idle, blocked on Redis), queue.add() per grid tick.`);
  });

  await report.part(`${what}: PostgreSQL vs graphile-worker`, async () => {
    const spans = await withDatabase('lat', (url) => droverLatency(total, warm, warmUp, url, 'Drover PostgreSQL'));
    const g = dist((await withDatabase('gwlat', (url) => graphileLatency(url, SLOTS, warmUp, grid))).slice(warm));
    row(report, `${what}: PostgreSQL vs graphile-worker addJob → handler`, spans, g, 'graphile-worker', `${span}. Peer: ${graphileConfig('default', SLOTS)} (LISTEN/NOTIFY wakes it; localQueue is its throughput mode and, per its docs, can add latency), addJob() per grid tick.`);
  });
}
