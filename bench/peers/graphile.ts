/**
 * graphile-worker 0.17 on the bench's PostgreSQL, each measurement in a fresh
 * database. Two configurations:
 *  - 'default': run({ concurrency, maxPoolSize: concurrency + 1 }), no batching
 *    (LISTEN/NOTIFY wakes the worker; each job is fetched and completed by its own statements);
 *  - 'localQueue': the throughput configuration of its performance page
 *    (worker.graphile.org/docs/performance: `localQueue: { size: 500 },
 *    completeJobBatchDelay: 0, failJobBatchDelay: 0`, pool = concurrency + 1):
 *    jobs are fetched and locked 500 at a time and completions are batched.
 * Enqueue with WorkerUtils.addJob / addJobs (worker.graphile.org/docs/library/add-job).
 */
import pg from 'pg';
import { Logger, makeWorkerUtils, run, runMigrations, type Runner, type RunnerOptions, type WorkerUtils } from 'graphile-worker';
import { afterWarmUp, chunks, until, wallMs, type WarmedSpan } from '../lib/stats.js';

export type GraphileMode = 'default' | 'localQueue';
const LOCAL_QUEUE_SIZE = 500;
const quiet = new Logger(() => () => {});

export function graphileConfig(mode: GraphileMode, concurrency: number): string {
  const base = `graphile-worker 0.17 run({ concurrency: ${concurrency}, maxPoolSize: ${concurrency + 1} })`;
  return mode === 'default' ? `${base}, no batching (defaults)` : `${base}, preset.worker { localQueue: { size: ${LOCAL_QUEUE_SIZE} }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } (docs' performance configuration)`;
}

function options(url: string, mode: GraphileMode, concurrency: number, taskList: RunnerOptions['taskList']): RunnerOptions {
  return {
    connectionString: url,
    concurrency,
    maxPoolSize: concurrency + 1,
    noHandleSignals: true,
    logger: quiet,
    taskList,
    ...(mode === 'localQueue' ? { preset: { worker: { localQueue: { size: LOCAL_QUEUE_SIZE }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } } } : {}),
  };
}

/** Migrated schema and WorkerUtils on `url`, released afterwards. */
async function withUtils<T>(url: string, fn: (u: WorkerUtils) => Promise<T>): Promise<T> {
  await runMigrations({ connectionString: url, logger: quiet });
  const utils = await makeWorkerUtils({ connectionString: url, logger: quiet });
  try {
    return await fn(utils);
  } finally {
    await utils.release();
  }
}

async function addJobs(u: WorkerUtils, n: number, size: number, identifier = 'noop'): Promise<void> {
  let i = 0;
  for (const k of chunks(n, size)) await u.addJobs(Array.from({ length: k }, () => ({ identifier, payload: { i: i++ } })));
}

async function jobsLeft(c: pg.Client): Promise<number> {
  return (await c.query('select count(*)::int as n from graphile_worker._private_jobs')).rows[0].n;
}

/**
 * Drain: n jobs waiting (addJobs, 1,000 a call), then run() starts. Span:
 * just before run() → every job's row deleted (graphile-worker deletes a job
 * when its completion commits; with completeJobBatchDelay that is after the handler returned).
 */
export async function graphileDrain(url: string, n: number, concurrency: number, mode: GraphileMode): Promise<{ totalS: number; bootMs: number }> {
  return withUtils(url, async (utils) => {
    await addJobs(utils, n, 1000);
    const probe = new pg.Client({ connectionString: url });
    await probe.connect();
    let handled = 0;
    let runner: Runner | null = null;
    try {
      const t0 = performance.now();
      runner = await run(options(url, mode, concurrency, { noop: async () => void handled++ }));
      const bootMs = performance.now() - t0;
      await until('graphile-worker to run every job', () => handled >= n, 900_000, 2);
      await until('graphile-worker to complete every job', async () => (await jobsLeft(probe)) === 0, 60_000, 2);
      return { totalS: (performance.now() - t0) / 1000, bootMs };
    } finally {
      await runner?.stop();
      await probe.end();
    }
  });
}

/**
 * n sequential awaited addJob calls, after `warm` untimed ones on the same
 * WorkerUtils (sizes.warmUp). Span: first timed call → last resolved (the
 * insert committed). warmS: the warm-up's own time.
 */
export async function graphileAddSequential(url: string, n: number, warm: number): Promise<WarmedSpan> {
  return withUtils(url, (u) => {
    const adds = async (k: number) => {
      for (let i = 0; i < k; i++) await u.addJob('noop', { i });
    };
    return afterWarmUp(() => adds(warm), () => adds(n));
  });
}

/** n jobs by addJobs, `size` per call, calls sequential, after `warm` untimed jobs the same way (sizes.warmUp). */
export async function graphileAddBulk(url: string, n: number, size: number, warm: number): Promise<WarmedSpan> {
  return withUtils(url, (u) => afterWarmUp(() => addJobs(u, warm, size), () => addJobs(u, n, size)));
}

/**
 * Latency on an idle runner ('default' mode: localQueue trades latency for
 * throughput, per its docs): addJob called → handler entered, ms, in fire
 * order. First `warm` jobs are added one by one and run, untimed
 * (sizes.warmUp), on the same runner.
 */
export async function graphileLatency(url: string, concurrency: number, warm: number, schedule: (fire: (i: number, stampMs: number) => Promise<void>) => Promise<void>): Promise<number[]> {
  return withUtils(url, async (utils) => {
    const started = new Map<number, number>();
    let warmed = 0;
    const runner = await run(
      options(url, 'default', concurrency, {
        warm: async () => void warmed++,
        lat: async (p) => void started.set((p as { i: number }).i, wallMs()),
      }),
    );
    try {
      for (let i = 0; i < warm; i++) await utils.addJob('warm', { i });
      await until('graphile-worker to run the warm-up jobs', () => warmed >= warm, 300_000, 2);
      const sent = new Map<number, number>();
      await schedule(async (i, stamp) => {
        sent.set(i, stamp);
        await utils.addJob('lat', { i });
      });
      await until('graphile-worker to start every job', () => started.size >= sent.size, 60_000, 2);
      return [...sent].map(([i, at]) => started.get(i)! - at);
    } finally {
      await runner.stop();
    }
  });
}
