/**
 * Scale-out: the drain (N waiting no-op tasks) with 1, 2 and 3 `drover server`
 * processes on ONE PostgreSQL database, a noop agent with 10 slots on each.
 * Span: just before the agents are spawned (together) → /v1/stats/counts on
 * the first server shows N succeeded. Alongside, the CPU the PostgreSQL
 * backends and the Drover servers used during the span (cores busy, from
 * /proc): when PostgreSQL's share stops growing with servers, or the machine's
 * cores are used up, PostgreSQL (or the machine) is the limit.
 */
import { cpus } from 'node:os';
import type { Ctx } from '../lib/context.js';
import { agentOn, cluster, extraServer, fill, NOOP, untilSucceeded, type Api, type Proc } from '../lib/drover.js';
import { withDatabase } from '../lib/pg.js';
import { ratio } from '../lib/report.js';
import { cpuSeconds, fmtRate, postgresCpuSeconds, wallMs } from '../lib/stats.js';

const SLOTS = 10;

async function scaled(url: string, servers: number, n: number): Promise<{ s: number; pgCores: number; serverCores: number; how: string }> {
  const c = await cluster({ workers: 0, db: url }, `Drover PostgreSQL × ${servers}`);
  try {
    const apis: Api[] = [c.api];
    const procs: Proc[] = [c.server];
    for (let i = 1; i < servers; i++) {
      const s = await extraServer(url, c.api.token);
      apis.push(s.api);
      procs.push(s.proc);
    }
    const { how } = await fill(c.api, n);
    const serverPids = procs.map((p) => p.child.pid!);
    const cpu0 = [postgresCpuSeconds(), cpuSeconds(serverPids)];
    const t0 = wallMs();
    await Promise.all(apis.map((api, i) => agentOn(c, api, `scale${i + 1}`, SLOTS, NOOP)));
    await untilSucceeded(c.api, n);
    const s = (wallMs() - t0) / 1000;
    return { s, pgCores: (postgresCpuSeconds() - cpu0[0]!) / s, serverCores: (cpuSeconds(serverPids) - cpu0[1]!) / s, how };
  } finally {
    await c.close();
  }
}

export async function scaleOut({ report, sizes }: Ctx): Promise<void> {
  const n = sizes.scaleN;
  let one: number | null = null;
  for (const k of sizes.scaleServers) {
    await report.part(`scale-out ${k} servers`, async () => {
      const r = await withDatabase(`scale${k}`, (url) => scaled(url, k, n));
      one ??= k === 1 ? r.s : null;
      report.add({
        measure: `scale-out: drain ${n.toLocaleString('en-US')} no-op tasks, ${k} server${k > 1 ? 's' : ''} × 1 noop agent × ${SLOTS} slots, one PostgreSQL`,
        drover: `${fmtRate(n, r.s)}; CPU: PostgreSQL ${r.pgCores.toFixed(2)} cores, Drover servers ${r.serverCores.toFixed(2)} cores (of ${cpus().length})`,
        peer: '',
        ratio: one ? `${ratio(one / r.s)} vs 1 server` : '',
        met: '',
        note: `${k} × \`drover server --db postgres://…/drover_bench_scale${k}_<random>\` on the same database, one \`drover worker --executor noop --slots ${SLOTS}\` connected to each; tasks filled through the first server with ${r.how}; span: just before the agents are spawned → /v1/stats/counts shows ${n} succeeded; CPU from /proc/<pid>/stat of every \`postgres\` process and of the servers, over the span.`,
      });
    });
  }
}
