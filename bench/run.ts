/**
 * `npm run bench`: Drover side by side with its peers, in ONE invocation, on
 * this machine, with real server and agent processes (not part of npm test).
 * Only ratios within one run mean anything: the machine's speed varies by
 * several times from hour to hour.
 *
 * Sections (bench/sections/*.ts), run in this order:
 *   drain     20,000 waiting no-op tasks, one worker × 10 slots: SQLite vs BullMQ,
 *             PostgreSQL vs graphile-worker default and localQueue
 *   submit    sequential single submits and 1,000-task batches vs graphile-worker
 *             addJob/addJobs, BullMQ add/addBulk, raw better-sqlite3
 *   latency   submit → process started on a 20 ms grid vs add → handler
 *   process   2,000 × /bin/true vs xargs -P 8 and a Node spawn loop
 *   memory    server after 100,000 tasks, agent with 10 slots busy
 *   scale-out the drain with 1, 2, 3 servers on one PostgreSQL
 *   startup   `drover --version`, `ls`, `show ID` vs `node -e 0` (medians of interleaved runs)
 *   dag       DAG engine (issue 12), SQLite and PostgreSQL: overhead per step of a 100-step chain of
 *             /bin/true vs a shell loop and sequential submit-and-wait; a 1,000-step fan-out's
 *             validation, and its run vs the same tasks as one batch (--quick: 1 round instead of 3)
 *   cron      10,000 `* * * * *` schedules on SQLite and on PostgreSQL over 3 minute boundaries
 *             (1 with --quick): each (schedule, slot) fired once, lateness, server memory; and one
 *             per-second schedule's lateness over 60 runs (20 with --quick); no worker
 *   recovery  (not default: ~20 s of waiting for a lease) bench/recovery.ts
 *   dashboard (not default: fills 1,000,000 tasks, many minutes) bench/dashboard.ts
 * Default: every section but recovery and dashboard (930 s on 2026-12-02; dag alone about 2 minutes, cron about 8).
 *
 * Usage: npm run bench -- [--quick] [--sections=drain,submit,...]
 *   --quick   small sizes (see lib/context.ts QUICK; scale-out with 1 and 2 servers), and without
 *             --sections every section but dag and cron: under 2 minutes (QUICK_DEFAULT)
 *   BENCH_SECTIONS=... is the same as --sections. BENCH_PG_URL, BENCH_REDIS_URL:
 *   where PostgreSQL and Redis are (defaults 127.0.0.1).
 * Output: a markdown table on stdout (progress on stderr); exit 1 if a part failed.
 * DROVER_BIN=<other checkout>/bin/drover.js measures another build (named in the header).
 *
 * Peers: one file each in bench/peers/ (configuration and the docs it follows
 * at the top of each). pg-boss is no longer measured: pg-boss 10's worker loop
 * waits pollingIntervalSeconds (minimum 0.5 s) after every fetch unless a send
 * in the same process notifies it (node_modules/pg-boss/src/worker.js), and it
 * has no LISTEN/NOTIFY, so its drain is batchSize × work() calls / 0.5 s: a
 * number set by its configuration (the old one-work() setup capped it at
 * 64/s), not by its queue, and no configuration matches "one worker × 10
 * slots" without either that cap or batches of the whole queue.
 */
import type { Ctx, Section } from './lib/context.js';
import { FULL, QUICK } from './lib/context.js';
import { dropOnInterrupt } from './lib/pg.js';
import { fromLegacy, Report, type LegacyRow } from './lib/report.js';
import { cron } from './sections/cron.js';
import { dag } from './sections/dag.js';
import { drain } from './sections/drain.js';
import { latency } from './sections/latency.js';
import { memory } from './sections/memory.js';
import { processStarts } from './sections/process-starts.js';
import { scaleOut } from './sections/scale-out.js';
import { startup } from './sections/startup.js';
import { submit } from './sections/submit.js';

const legacy = (load: () => Promise<(rows: LegacyRow[]) => Promise<unknown>>): Section => async ({ report }) => {
  const rows: LegacyRow[] = [];
  await (await load())(rows);
  rows.forEach((r) => report.add(fromLegacy(r)));
};

const SECTIONS: Record<string, Section> = {
  drain,
  submit,
  latency,
  process: processStarts,
  memory,
  'scale-out': scaleOut,
  startup,
  dag,
  cron,
  recovery: legacy(async () => async (rows) => rows.push(...(await (await import('./recovery.js')).recovery()))),
  dashboard: legacy(async () => (await import('./dashboard.js')).dashboard),
};
const DEFAULT = ['drain', 'submit', 'latency', 'process', 'memory', 'scale-out', 'startup', 'dag', 'cron'];
/**
 * `--quick` without --sections: the sections that fit its two minutes (81 s, 88 s with the build, on
 * 2026-12-05, once the server's idle memory reading was left to the full run). dag (50 s
 * even at its smallest) and cron (it waits for minute boundaries: about 2.5 minutes) run with
 * `--quick --sections=dag,cron`.
 */
const QUICK_DEFAULT = DEFAULT.filter((s) => s !== 'dag' && s !== 'cron');

function parseArgs(argv: string[]): { quick: boolean; sections: string[] } {
  let quick = false;
  let sections: string[] | null = process.env.BENCH_SECTIONS ? process.env.BENCH_SECTIONS.split(',') : null;
  for (const a of argv) {
    if (a === '--quick') quick = true;
    else if (a.startsWith('--sections=')) sections = a.slice('--sections='.length).split(',');
    else throw new Error(`unknown argument "${a}": expected --quick or --sections=${Object.keys(SECTIONS).join(',')}`);
  }
  if (sections === null) {
    sections = quick ? QUICK_DEFAULT : DEFAULT;
    if (quick) console.error(`[bench] --quick runs ${sections.join(', ')}; dag and cron take longer: npm run bench -- --quick --sections=dag,cron`);
  }
  sections = sections.map((s) => s.trim()).filter(Boolean);
  const bad = sections.filter((s) => !SECTIONS[s]);
  if (bad.length) throw new Error(`unknown section "${bad.join(', ')}" in --sections / BENCH_SECTIONS: expected some of ${Object.keys(SECTIONS).join(', ')}`);
  return { quick, sections };
}

function command(argv: string[]): string {
  const env = Object.entries(process.env).filter(([k]) => k.startsWith('BENCH_') || k === 'DROVER_BIN').map(([k, v]) => `${k}=${v} `).join('');
  const args = argv.join(' ');
  return process.env.npm_lifecycle_event === 'bench' ? `${env}npm run bench${args ? ` -- ${args}` : ''}` : `${env}node dist/bench/run.js${args ? ` ${args}` : ''}`;
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const { quick, sections } = parseArgs(argv);
  dropOnInterrupt();
  const ctx: Ctx = { report: new Report(), sizes: quick ? QUICK : FULL };
  const t0 = performance.now();
  for (const s of sections) {
    const s0 = performance.now();
    console.error(`[bench] ${s}${quick ? ' (quick)' : ''}`);
    await SECTIONS[s]!(ctx);
    console.error(`[bench] ${s} took ${((performance.now() - s0) / 1000).toFixed(0)} s`);
  }
  ctx.report.print(command(argv), `sections ${sections.join(',')}; took ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  if (ctx.report.failures) process.exitCode = 1;
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
