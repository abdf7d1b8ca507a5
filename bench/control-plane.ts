/**
 * Control-plane bench (part of `npm run bench`, see run.ts): what the
 * scheduler itself costs, with no process to start. Agents run with
 * `--executor noop` (src/worker/noop-executor.ts): an attempt is reported
 * started and succeeded as soon as it is assigned, through the normal protocol.
 *
 *  1. throughput: N tasks submitted by 32 concurrent keep-alive HTTP clients
 *     (as in run.ts), claimed, started and completed by 2 noop agents × 16
 *     slots, end to end, on (a) SQLite and (b) PostgreSQL (a fresh database
 *     `drover_bench_cp_<random>`, dropped at the end WITH (FORCE)).
 *  2. submit-to-start latency on PostgreSQL (and SQLite, for reference): 200
 *     sequential tasks on an idle noop agent; attempt.startedAt −
 *     task.createdAt (server clock) and submit → done (client clock).
 *  3. baselines on the same PostgreSQL, in the same run, each variant in its
 *     own fresh database: graphile-worker and pg-boss draining N no-op jobs,
 *     enqueued one by one with the same 32-way concurrency (and in bulk), then
 *     a worker with concurrency 32; and graphile-worker's enqueue-to-start
 *     latency for 200 sequential jobs on an idle worker.
 *
 * Environment: BENCH_CP_TASKS (2000), BENCH_CP_LATENCY_N (200), BENCH_CP_SLOTS
 * (16), BENCH_PG_URL (postgres://postgres@127.0.0.1:5432/postgres: any
 * database on the server; the bench creates and drops its own).
 */
import { submitLatency } from './submit-latency.js';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { Logger, makeWorkerUtils, run as runGraphile, runMigrations, type Runner, type WorkerUtils } from 'graphile-worker';
import PgBoss from 'pg-boss';
import { startCluster, type Api, type Cluster, type ClusterOptions } from '../test/e2e/harness.js';

export type Row = [string, string, string];

const TASKS = Number(process.env.BENCH_CP_TASKS ?? 2000);
const LATENCY_N = Number(process.env.BENCH_CP_LATENCY_N ?? 200);
const SLOTS = Number(process.env.BENCH_CP_SLOTS ?? 16);
const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
/** Submit / enqueue concurrency, as in run.ts. */
const CLIENTS = 32;
/** Worker concurrency of the baselines (2 agents × 16 slots on Drover's side). */
const CONCURRENCY = 32;
const NOOP_WORKER = ['--executor', 'noop'];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const rate = (n: number, s: number) => `${(n / s).toFixed(0)} tasks/s (${s.toFixed(2)} s)`;
const pctOf = (a: number, b: number) => `${((100 * a) / b).toFixed(0)} %`;

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

interface Dist {
  p50: number;
  p95: number;
  p99: number;
}
function dist(xs: number[]): Dist {
  const s = [...xs].sort((a, b) => a - b);
  return { p50: pct(s, 50), p95: pct(s, 95), p99: pct(s, 99) };
}
const fmt = (d: Dist) => `p50 ${d.p50.toFixed(1)} ms, p95 ${d.p95.toFixed(1)} ms, p99 ${d.p99.toFixed(1)} ms`;

// ---------------------------------------------------------------- PostgreSQL databases

const created = new Set<string>();

function dbUrl(name: string): string {
  const u = new URL(PG_URL);
  u.pathname = `/${name}`;
  return u.toString();
}

async function admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: PG_URL, application_name: 'drover-bench' });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** Runs `fn` with the URL of a fresh database, dropped afterwards (WITH (FORCE): whoever is still connected). */
async function withDatabase<T>(tag: string, fn: (url: string) => Promise<T>): Promise<T> {
  const name = `drover_bench_${tag}_${randomBytes(4).toString('hex')}`;
  backgroundError = null;
  await admin((c) => c.query(`CREATE DATABASE ${name}`));
  created.add(name);
  try {
    return await fn(dbUrl(name));
  } finally {
    await dropDatabase(name);
  }
}

async function dropDatabase(name: string): Promise<void> {
  await admin(async (c) => {
    // Connections just closed by their clients linger a moment on the server: let them go rather than kill them.
    for (let i = 0; i < 100; i++) {
      const r = await c.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1', [name]);
      if (r.rows[0].n === 0) break;
      await sleep(20);
    }
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  });
  created.delete(name);
}

/** Ctrl-C during the bench: drop what it created, then exit as interrupted. */
function onInterrupt(): void {
  void Promise.allSettled([...created].map(dropDatabase)).finally(() => process.exit(130));
}

// ---------------------------------------------------------------- Drover

/** Submits `n` tasks from CLIENTS concurrent keep-alive clients (as run.ts does). */
async function submitAll(api: Api, n: number): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (next < n) {
        next++;
        await api.submit({ command: '/bin/true' });
      }
    }),
  );
}

/** Until no task is in a non-terminal state; one request per round while tasks are waiting. */
async function waitIdle(api: Api): Promise<void> {
  for (;;) {
    let busy = false;
    for (const s of ['waiting', 'running', 'ready', 'retrying']) {
      const r = await api.req('GET', `/v1/tasks?state=${s}&limit=1`);
      if (r.status !== 200) throw new Error(`list failed ${r.status}: ${r.text}`);
      if (r.body.tasks.length) {
        busy = true;
        break;
      }
    }
    if (!busy) return;
    await sleep(20);
  }
}

async function countState(api: Api, state: string): Promise<number> {
  let n = 0;
  let cursor: string | null = null;
  do {
    const r = await api.req('GET', `/v1/tasks?state=${state}&limit=500${cursor ? `&cursor=${cursor}` : ''}`);
    if (r.status !== 200) throw new Error(`list failed ${r.status}: ${r.text}`);
    n += r.body.tasks.length;
    cursor = r.body.nextCursor;
  } while (cursor);
  return n;
}

async function cluster(opts: ClusterOptions, what: string): Promise<Cluster> {
  try {
    return await startCluster({ ...opts, workerArgs: NOOP_WORKER });
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    // The server's own last words (e.g. "the PostgreSQL store is not available") are the useful part.
    const last = msg.split('\n').map((l) => l.trim()).filter(Boolean).slice(-3).join(' / ');
    throw new Error(`${what}: could not start the cluster: ${last}`);
  }
}

interface Throughput {
  totalS: number;
  submitS: number;
}

async function droverThroughput(db: string | undefined, what: string): Promise<Throughput> {
  const c = await cluster({ workers: 2, slots: SLOTS, ...(db ? { db } : {}) }, what);
  try {
    const t0 = performance.now();
    await submitAll(c.api, TASKS);
    const submitS = (performance.now() - t0) / 1000;
    await waitIdle(c.api);
    const totalS = (performance.now() - t0) / 1000;
    const ok = await countState(c.api, 'succeeded');
    if (ok !== TASKS) throw new Error(`${what}: ${ok} of ${TASKS} tasks succeeded`);
    return { totalS, submitS };
  } finally {
    await c.close();
  }
}

interface Latency {
  claim: Dist;
  done: Dist;
}

async function droverLatency(db: string | undefined, what: string): Promise<Latency> {
  const c = await cluster({ workers: 1, slots: SLOTS, ...(db ? { db } : {}) }, what);
  try {
    const { claim, done } = await submitLatency(c, LATENCY_N, what);
    return { claim: dist(claim), done: dist(done) };
  } finally {
    await c.close();
  }
}

// ---------------------------------------------------------------- baselines

const quiet = new Logger(() => () => {});

/** Runs `fn` CLIENTS-way concurrently until it has been called `n` times. */
async function concurrently(n: number, fn: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (next < n) await fn(next++);
    }),
  );
}

/**
 * An error the libraries raise outside any call of ours (a pool's idle client,
 * a background completion batch): it fails the measurement in progress instead
 * of killing the bench before it drops its databases.
 */
let backgroundError: unknown = null;
function background(err: unknown): void {
  console.error('control-plane bench: background error:', err);
  backgroundError ??= err;
}

async function until(cond: () => Promise<boolean> | boolean, what: string, timeoutMs = 600_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (backgroundError) throw new Error(`while waiting for ${what}: ${backgroundError instanceof Error ? backgroundError.message : String(backgroundError)}`);
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

type Variant = 'each' | 'bulk' | 'live';
interface Drain {
  totalS: number;
  enqueueS: number;
}

/**
 * graphile-worker: enqueue TASKS jobs ('each': addJob from CLIENTS concurrent
 * callers; 'bulk': one addJobs), then start the worker; or 'live': the worker
 * runs first and the jobs are enqueued one by one while it drains them (as
 * Drover's agents are connected while tasks are submitted). Timed from the
 * first enqueue until the last job is completed (its row deleted).
 */
async function graphileDrain(url: string, variant: Variant): Promise<Drain> {
  // One pool of CONCURRENCY connections for the enqueuers and the worker (as pg-boss has one, and a Drover server one).
  const pool = new pg.Pool({ connectionString: url, max: CONCURRENCY });
  pool.on('error', (err) => background(err));
  pool.on('connect', (client) => client.on('error', (err) => background(err)));
  await runMigrations({ pgPool: pool, logger: quiet });
  const utils: WorkerUtils = await makeWorkerUtils({ pgPool: pool, logger: quiet });
  const probe = new pg.Client({ connectionString: url });
  await probe.connect();
  let handled = 0;
  let runner: Runner | null = null;
  const start = async () => {
    runner = await runGraphile({
      pgPool: pool,
      concurrency: CONCURRENCY,
      noHandleSignals: true,
      pollInterval: 1000,
      logger: quiet,
      taskList: {
        noop: async () => {
          handled++;
        },
      },
    });
  };
  try {
    if (variant === 'live') await start();
    const t0 = performance.now();
    if (variant === 'bulk') await utils.addJobs(Array.from({ length: TASKS }, (_, i) => ({ identifier: 'noop', payload: { i } })));
    else await concurrently(TASKS, (i) => utils.addJob('noop', { i }));
    const enqueueS = (performance.now() - t0) / 1000;
    if (variant !== 'live') await start();
    await until(() => handled >= TASKS, 'graphile-worker to run every job');
    await until(async () => (await probe.query('select count(*)::int as n from graphile_worker._private_jobs')).rows[0].n === 0, 'graphile-worker to complete every job');
    const totalS = (performance.now() - t0) / 1000;
    if (handled !== TASKS) throw new Error(`graphile-worker ran ${handled} jobs, expected ${TASKS}`);
    return { totalS, enqueueS };
  } finally {
    await (runner as Runner | null)?.stop();
    await utils.release();
    await probe.end();
    await pool.end();
  }
}

/** graphile-worker: enqueue → task handler started, LATENCY_N sequential jobs on an idle worker. */
async function graphileLatency(url: string): Promise<{ db: Dist; client: Dist }> {
  const pool = new pg.Pool({ connectionString: url, max: CONCURRENCY });
  pool.on('error', (err) => background(err));
  pool.on('connect', (client) => client.on('error', (err) => background(err)));
  await runMigrations({ pgPool: pool, logger: quiet });
  const utils = await makeWorkerUtils({ pgPool: pool, logger: quiet });
  const waiting = new Map<number, (v: { at: number; wall: number; createdAt: number }) => void>();
  const runner = await runGraphile({
    pgPool: pool,
    concurrency: CONCURRENCY,
    noHandleSignals: true,
    pollInterval: 1000,
    logger: quiet,
    taskList: {
      lat: async (payload, helpers) => {
        const at = performance.now();
        const wall = Date.now();
        waiting.get((payload as { i: number }).i)?.({ at, wall, createdAt: new Date(helpers.job.created_at).getTime() });
      },
    },
  });
  try {
    const db: number[] = [];
    const client: number[] = [];
    for (let i = 0; i < 20 + LATENCY_N; i++) {
      const started = new Promise<{ at: number; wall: number; createdAt: number }>((r) => waiting.set(i, r));
      const t0 = performance.now();
      await utils.addJob('lat', { i });
      const s = await started;
      waiting.delete(i);
      if (i < 20) continue; // warm-up, as for Drover
      client.push(s.at - t0);
      db.push(s.wall - s.createdAt);
    }
    return { db: dist(db), client: dist(client) };
  } finally {
    await runner.stop();
    await utils.release();
    await pool.end();
  }
}

/**
 * pg-boss: enqueue TASKS jobs ('each': send from CLIENTS concurrent callers;
 * 'bulk': one insert), then work() with batchSize CONCURRENCY and a 0.5 s
 * polling interval (its minimum); or 'live': work() first. Timed from the
 * first enqueue until every job is in state completed.
 */
async function pgBossDrain(url: string, variant: Variant): Promise<Drain> {
  const boss = new PgBoss({ connectionString: url, max: CONCURRENCY });
  boss.on('error', (err) => background(err));
  await boss.start();
  const queue = 'noop';
  await boss.createQueue(queue);
  const probe = new pg.Client({ connectionString: url });
  await probe.connect();
  let handled = 0;
  const work = () =>
    boss.work(queue, { batchSize: CONCURRENCY, pollingIntervalSeconds: 0.5 }, async (jobs) => {
      handled += jobs.length;
    });
  try {
    if (variant === 'live') await work();
    const t0 = performance.now();
    if (variant === 'bulk') await boss.insert(Array.from({ length: TASKS }, (_, i) => ({ name: queue, data: { i } })));
    else await concurrently(TASKS, (i) => boss.send(queue, { i }));
    const enqueueS = (performance.now() - t0) / 1000;
    if (variant !== 'live') await work();
    await until(() => handled >= TASKS, 'pg-boss to run every job');
    await until(async () => (await probe.query(`select count(*)::int as n from pgboss.job where name = $1 and state = 'completed'`, [queue])).rows[0].n === TASKS, 'pg-boss to complete every job');
    const totalS = (performance.now() - t0) / 1000;
    if (handled !== TASKS) throw new Error(`pg-boss ran ${handled} jobs, expected ${TASKS}`);
    return { totalS, enqueueS };
  } finally {
    await boss.stop({ graceful: true, wait: true, close: true, timeout: 1000 });
    await probe.end();
  }
}

// ---------------------------------------------------------------- the section

/** Measures everything above and appends its rows. Sets process.exitCode = 1 when a part could not run. */
export async function controlPlane(outRows: Row[]): Promise<void> {
  process.once('SIGINT', onInterrupt);
  process.once('SIGTERM', onInterrupt);
  process.on('unhandledRejection', background);
  process.on('uncaughtException', background);
  // Each row is also printed as it is measured: a long run shows progress.
  const rows = {
    push(r: Row) {
      console.error(`  ${r[0]}: ${r[1]}${r[2] ? ` (${r[2]})` : ''}`);
      outRows.push(r);
    },
  };
  const failed = (what: string, err: unknown) => {
    backgroundError = null;
    const msg = err instanceof Error ? err.message : String(err);
    console.error(`control-plane bench: ${what} FAILED: ${msg}`);
    rows.push([what, 'not measured', `FAILED: ${msg.replace(/\s*\n\s*/g, ' / ').replace(/\|/g, '\\|')}`]);
    process.exitCode = 1;
  };
  const slots = `2 noop agents × ${SLOTS} slots`;
  const subNote = (t: Throughput) => `end to end, submits (32 clients) included; all submitted after ${t.submitS.toFixed(2)} s`;

  let sqlite: Throughput | null = null;
  try {
    sqlite = await droverThroughput(undefined, 'Drover on SQLite');
    rows.push([`control plane: ${TASKS} tasks, ${slots}, SQLite`, rate(TASKS, sqlite.totalS), subNote(sqlite)]);
  } catch (err) {
    failed(`control plane: ${TASKS} tasks, ${slots}, SQLite`, err);
  }

  let pgT: Throughput | null = null;
  let pgLat: Latency | null = null;
  try {
    pgT = await withDatabase('cp', (url) => droverThroughput(url, 'Drover on PostgreSQL'));
    rows.push([`control plane: ${TASKS} tasks, ${slots}, PostgreSQL`, rate(TASKS, pgT.totalS), subNote(pgT)]);
    pgLat = await withDatabase('cplat', (url) => droverLatency(url, 'Drover on PostgreSQL'));
    rows.push([`PostgreSQL: submit → claimed and pushed (server clock, ${LATENCY_N} sequential, noop agent)`, fmt(pgLat.claim), 'attempt.startedAt − task.createdAt']);
    rows.push([`PostgreSQL: submit → done (client clock, noop agent)`, fmt(pgLat.done), 'HTTP submit until the exit is stored and the log follow ends']);
  } catch (err) {
    failed(`Drover on PostgreSQL (drover server --db ${dbUrl('drover_bench_cp_RANDOM')})`, err);
  }
  try {
    const sl = await droverLatency(undefined, 'Drover on SQLite');
    rows.push([`SQLite: submit → claimed and pushed (server clock, ${LATENCY_N} sequential, noop agent)`, fmt(sl.claim), 'for reference']);
    rows.push([`SQLite: submit → done (client clock, noop agent)`, fmt(sl.done), 'for reference']);
  } catch (err) {
    failed('Drover on SQLite, latency', err);
  }

  const base: Record<string, Partial<Record<Variant, Drain>>> = { 'graphile-worker': {}, 'pg-boss': {} };
  const label: Record<Variant, (lib: string) => string> = {
    each: (lib) => `${lib}: ${TASKS} jobs enqueued one by one (${CLIENTS} concurrent), then drained`,
    bulk: (lib) => `${lib}: ${TASKS} jobs enqueued in bulk, then drained`,
    live: (lib) => `${lib}: worker running while ${TASKS} jobs are enqueued one by one`,
  };
  const how: Record<string, Record<Variant, string>> = {
    'graphile-worker': { each: 'addJob', bulk: 'addJobs (one call)', live: 'addJob, like Drover\'s submits' },
    'pg-boss': { each: 'send', bulk: 'insert (one call)', live: 'send, like Drover\'s submits' },
  };
  const workerNote: Record<string, string> = {
    'graphile-worker': `run({ concurrency: ${CONCURRENCY}, pollInterval: 1000 }), LISTEN/NOTIFY`,
    'pg-boss': `work({ batchSize: ${CONCURRENCY}, pollingIntervalSeconds: 0.5 })`,
  };
  for (const [lib, drain] of [
    ['graphile-worker', graphileDrain],
    ['pg-boss', pgBossDrain],
  ] as const) {
    for (const v of ['each', 'bulk', 'live'] as const) {
      try {
        const d = await withDatabase(lib === 'pg-boss' ? 'pgboss' : 'graphile', (url) => drain(url, v));
        base[lib]![v] = d;
        const phases = v === 'live' ? '' : `enqueue ${d.enqueueS.toFixed(2)} s + drain ${(d.totalS - d.enqueueS).toFixed(2)} s; `;
        rows.push([label[v](lib), rate(TASKS, d.totalS), `${phases}${how[lib]![v]}; ${workerNote[lib]}`]);
      } catch (err) {
        failed(label[v](lib), err);
      }
    }
  }
  let gLat: { db: Dist; client: Dist } | null = null;
  try {
    gLat = await withDatabase('graphilelat', graphileLatency);
    rows.push([`graphile-worker: enqueue → task handler started (DB clock → handler, ${LATENCY_N} sequential, idle worker)`, fmt(gLat.db), 'job.created_at → handler start; compare with Drover\'s server-clock row']);
    rows.push([`graphile-worker: addJob() called → task handler started (client clock)`, fmt(gLat.client), 'ends at handler start, not at completion']);
  } catch (err) {
    failed('graphile-worker latency', err);
  }

  // Ratios and the issue's targets.
  if (pgT) {
    const dRate = TASKS / pgT.totalS;
    const verdicts: boolean[] = [];
    for (const lib of ['graphile-worker', 'pg-boss']) {
      const each = base[lib]!.each;
      const measured = (['each', 'bulk', 'live'] as const).filter((v) => base[lib]![v]);
      if (!each || !measured.length) continue;
      const best = measured.reduce((a, b) => (base[lib]![a]!.totalS <= base[lib]![b]!.totalS ? a : b));
      const bestRate = TASKS / base[lib]![best]!.totalS;
      verdicts.push(dRate >= bestRate);
      rows.push([`Drover-PG ÷ ${lib}`, `${pctOf(dRate, TASKS / each.totalS)} (÷ its best variant, ${best}: ${pctOf(dRate, bestRate)})`, 'target ≥ 100 %']);
    }
    if (verdicts.length === 2) {
      rows.push(['target: Drover-PG throughput ≥ graphile-worker and pg-boss', verdicts.every(Boolean) ? 'met' : '**not met**', 'against the best variant of each']);
    }
  }
  if (!pgT || !pgLat) rows.push(['targets (Drover-PG vs graphile-worker and pg-boss)', 'not evaluated', 'Drover on PostgreSQL was not measured (see above)']);
  if (pgLat && gLat) {
    const met = pgLat.claim.p50 <= gLat.db.p50 && pgLat.claim.p99 <= gLat.db.p99;
    rows.push([
      'target: Drover-PG submit-to-start no worse than graphile-worker',
      met ? 'met' : '**not met**',
      `p50 ${pgLat.claim.p50.toFixed(1)} vs ${gLat.db.p50.toFixed(1)} ms, p99 ${pgLat.claim.p99.toFixed(1)} vs ${gLat.db.p99.toFixed(1)} ms (server-side clocks)`,
    ]);
  }
  process.off('SIGINT', onInterrupt);
  process.off('SIGTERM', onInterrupt);
  process.off('unhandledRejection', background);
  process.off('uncaughtException', background);
}
