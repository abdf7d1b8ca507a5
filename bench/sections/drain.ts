/**
 * Drain: N no-op tasks already waiting, then ONE worker with 10 slots starts
 * (the method of the peers' own benchmarks). Drover's span: wallMs() just
 * before the `drover worker --executor noop` process is spawned → the first
 * read of GET /v1/stats/counts showing N succeeded (polled every 5 ms). The
 * agent's boot (spawn → listed as connected) is inside the span and printed apart.
 * Pairs, run in this order in one invocation: Drover SQLite, BullMQ, Drover
 * PostgreSQL, graphile-worker default, graphile-worker localQueue. Drover
 * runs twice on each store: as the agent starts by default (`--prefetch
 * auto`, worker/auto-prefetch.ts: a queue of twice the slots, offered once 20
 * tasks in a row ran 50 ms or less), and with a fixed `--prefetch PREFETCH`
 * (worker/prefetch-queue.ts: assignments queued beyond the slots), its
 * configuration for short tasks, as localQueue is graphile-worker's.
 */
import { BULLMQ_CONFIG, bullmqDrain, redisDurability } from '../peers/bullmq.js';
import { graphileConfig, graphileDrain } from '../peers/graphile.js';
import type { Ctx } from '../lib/context.js';
import { cluster, fill, NOOP, startAgent, untilSucceeded } from '../lib/drover.js';
import { withDatabase } from '../lib/pg.js';
import { met, ratio } from '../lib/report.js';
import { fmtRate, wallMs } from '../lib/stats.js';

interface DroverDrain {
  totalS: number;
  bootMs: number;
  fillHow: string;
  prefetch: number;
}

/** `drover worker --prefetch` in the prefetch rows: two slots' worth of queue (measured against 10 and 30 on a 10-slot agent: within the noise of each other). */
export const PREFETCH = 20;

export async function droverDrain(n: number, slots: number, db: string | undefined, what: string, prefetch = 0): Promise<DroverDrain> {
  const c = await cluster({ workers: 0, ...(db ? { db } : {}) }, what);
  try {
    const { how } = await fill(c.api, n);
    const a = await startAgent(c, slots, prefetch > 0 ? [...NOOP, '--prefetch', String(prefetch)] : NOOP);
    await untilSucceeded(c.api, n);
    return { totalS: (wallMs() - a.spawnAt) / 1000, bootMs: a.bootMs, fillHow: how, prefetch };
  } finally {
    await c.close();
  }
}

const SPAN = 'span: just before the worker starts (Drover: the agent process is spawned, its boot included; peer: its Worker/run() is created in the bench process) → all N completed (Drover: /v1/stats/counts shows N succeeded; BullMQ: N-th "completed" event; graphile-worker: every job row deleted)';

export async function drain({ report, sizes }: Ctx): Promise<void> {
  const { drainN: n, drainSlots: slots } = sizes;
  const what = `drain ${n.toLocaleString('en-US')} waiting no-op tasks, 1 worker × ${slots} slots`;
  const drover = (d: DroverDrain) => `${fmtRate(n, d.totalS)}; agent boot ${d.bootMs.toFixed(0)} ms`;
  const droverCfg = (store: string, d: DroverDrain) =>
    `Drover: \`drover server --db ${store}\`, \`drover worker --executor noop --slots ${slots}${d.prefetch > 0 ? ` --prefetch ${d.prefetch}` : ''}\`${d.prefetch > 0 ? '' : ' (its default --prefetch auto: a queue of twice the slots offered once 20 tasks in a row ran 50 ms or less)'}; queue filled with ${d.fillHow} before the agent starts`;
  const how = (d: DroverDrain) => (d.prefetch > 0 ? ` (Drover --prefetch ${d.prefetch})` : ' (Drover default: --prefetch auto)');

  await report.part(`${what}, SQLite vs BullMQ`, async () => {
    const d = await droverDrain(n, slots, undefined, 'Drover SQLite');
    const b = await bullmqDrain(n, slots);
    const dp = await droverDrain(n, slots, undefined, 'Drover SQLite --prefetch', PREFETCH);
    for (const x of [d, dp]) {
      const r = n / x.totalS / (n / b.totalS);
      report.add({
        measure: `${what}: SQLite${how(x)} vs BullMQ`,
        drover: drover(x),
        peer: fmtRate(n, b.totalS),
        ratio: ratio(r),
        met: met(r >= 1, 'Drover ≥ BullMQ'),
        note: `${SPAN}. ${droverCfg('sqlite:<tmp>/drover.db (WAL, synchronous=FULL)', x)}. Peer: ${BULLMQ_CONFIG}, new Worker(concurrency ${slots}); jobs added with addBulk (1,000 a call) before the Worker starts; ${await redisDurability()}.`,
      });
    }
  });

  await report.part(`${what}, PostgreSQL vs graphile-worker`, async () => {
    const d = await withDatabase('drain', (url) => droverDrain(n, slots, url, 'Drover PostgreSQL'));
    const g = await withDatabase('gwdefault', (url) => graphileDrain(url, n, slots, 'default'));
    const q = await withDatabase('gwlocal', (url) => graphileDrain(url, n, slots, 'localQueue'));
    const dp = await withDatabase('drainpf', (url) => droverDrain(n, slots, url, 'Drover PostgreSQL --prefetch', PREFETCH));
    for (const [x, label, p, target] of [
      [d, 'graphile-worker default', g, 'never below graphile-worker default'],
      [dp, 'graphile-worker default', g, 'never below graphile-worker default'],
      [d, 'graphile-worker localQueue', q, 'Drover ≥ graphile-worker localQueue'],
      [dp, 'graphile-worker localQueue', q, 'Drover ≥ graphile-worker localQueue'],
    ] as const) {
      const cfg = `${SPAN}. ${droverCfg('postgres://…/drover_bench_drain_<random> (synchronous_commit=on)', x)}. Jobs added with addJobs (1,000 a call) before run(); each side in a fresh database`;
      const r = n / x.totalS / (n / p.totalS);
      report.add({
        measure: `${what}: PostgreSQL${how(x)} vs ${label}`,
        drover: drover(x),
        peer: `${fmtRate(n, p.totalS)}; run() ready after ${p.bootMs.toFixed(0)} ms`,
        ratio: ratio(r),
        met: met(r >= 1, target),
        note: `${cfg}. Peer: ${graphileConfig(label.endsWith('default') ? 'default' : 'localQueue', slots)}.`,
      });
    }
  });
}
