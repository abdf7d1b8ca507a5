/**
 * Batch submit throughput over HTTP, with graphile-worker's bulk addJobs in
 * the same run as the reference (issue 9: the batch endpoint ≥ addJobs):
 *
 *   npx tsc -p tsconfig.json && node dist/test/e2e/measure-batch-submit.js --measure [batches] [rounds]
 *
 * Drover: a real server process (startCluster, no worker) on a fresh SQLite
 * file and on a fresh PostgreSQL database; `batches` (default 20) sequential
 * POST /v1/tasks/batch of 1,000 ordinary tasks ({name, command, args}) over a
 * keep-alive connection, one at a time, then again with 4 in flight. The span starts before the first request is sent and
 * ends when the last answer (201, all tasks stored and committed) has been
 * read, so it covers the client's JSON encoding, HTTP, validation, the
 * commit (SQLite synchronous=FULL, PostgreSQL synchronous_commit=on) and the
 * answer. Also the sequential single-submit rate (POST /v1/tasks, one awaited
 * at a time, 1,000 of them) on each, to see that the single path did not get
 * slower. graphile-worker 0.17 with its defaults (makeWorkerUtils on a pool,
 * migrated first, as its docs show): the same number of addJobs calls of
 * 1,000 jobs each, sequential, then one addJobs of all of them (the shape of
 * the bench's bulk figure), on its own fresh database; its span is the same
 * (first call → last call resolved). Each round prints its rates; the
 * best round of each is the figure to compare (the machine is shared). Does
 * nothing without --measure (the test runner loads every file under test/).
 */
import pg from 'pg';
import { makeWorkerUtils, Logger } from 'graphile-worker';
import { createTestDatabase } from '../support/postgres.js';
import { startCluster, type Api } from './harness.js';

const N = 1000;
const quiet = new Logger(() => () => {});

const ordinary = (b: number) => Array.from({ length: N }, (_, i) => ({ name: `job-${i % 10}`, command: 'echo', args: ['hello', String(b * N + i)] }));

/** `batches` POST /v1/tasks/batch of N tasks, `inFlight` at a time (1: sequential). */
async function droverBatches(api: Api, batches: number, inFlight: number): Promise<number> {
  await api.req('POST', '/v1/tasks/batch', { tasks: ordinary(-1) }); // warm-up: schemas compiled, statements prepared
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < batches) {
        const b = next++;
        const r = await api.req('POST', '/v1/tasks/batch', { tasks: ordinary(b) });
        if (r.status !== 201) throw new Error(`batch ${b}: ${r.status} ${r.text.slice(0, 300)}`);
      }
    }),
  );
  return (batches * N) / ((performance.now() - t0) / 1000);
}

async function droverSingles(api: Api, n: number): Promise<number> {
  for (let i = 0; i < 20; i++) await api.submit({ command: 'echo', args: ['warm'] });
  const t0 = performance.now();
  for (let i = 0; i < n; i++) await api.submit({ name: `job-${i % 10}`, command: 'echo', args: ['hello', String(i)] });
  return n / ((performance.now() - t0) / 1000);
}

async function drover(db: string | undefined, batches: number): Promise<{ batch: number; batch4: number; single: number }> {
  const c = await startCluster({ workers: 0, ...(db ? { db } : {}) });
  try {
    const batch = await droverBatches(c.api, batches, 1);
    const batch4 = await droverBatches(c.api, batches, 4);
    const single = await droverSingles(c.api, 1000);
    return { batch, batch4, single };
  } finally {
    await c.close();
  }
}

/** graphile-worker's addJobs: `batches` sequential calls of N jobs, then one call of batches × N (the bench's shape). */
async function graphile(url: string, batches: number): Promise<{ each: number; one: number }> {
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  pool.on('error', () => {});
  try {
    const utils = await makeWorkerUtils({ pgPool: pool, logger: quiet });
    await utils.migrate();
    const job = (i: number) => ({ identifier: 'noop', payload: { name: `job-${i % 10}`, args: ['hello', String(i)] } });
    await utils.addJobs(Array.from({ length: N }, (_, i) => job(i)));
    let t0 = performance.now();
    for (let b = 0; b < batches; b++) await utils.addJobs(Array.from({ length: N }, (_, i) => job(b * N + i)));
    const each = (batches * N) / ((performance.now() - t0) / 1000);
    t0 = performance.now();
    await utils.addJobs(Array.from({ length: batches * N }, (_, i) => job(i)));
    const one = (batches * N) / ((performance.now() - t0) / 1000);
    await utils.release();
    return { each, one };
  } finally {
    await pool.end();
  }
}

if (process.argv.includes('--measure')) {
  const nums = process.argv.slice(2).filter((a) => /^\d+$/.test(a)).map(Number);
  const batches = nums[0] ?? 20;
  const rounds = nums[1] ?? 2;
  console.log(`command: node dist/test/e2e/measure-batch-submit.js --measure ${batches} ${rounds}  (${batches} batches of ${N}, sequential)`);
  for (let r = 1; r <= rounds; r++) {
    const s = await drover(undefined, batches);
    const pgDb = await createTestDatabase();
    const p = await drover(pgDb.url, batches).finally(() => pgDb.drop());
    const gDb = await createTestDatabase({ migrated: false });
    const g = await graphile(gDb.url, batches).finally(() => gDb.drop());
    console.log(
      `round ${r}: batch tasks/s (1 | 4 in flight)  SQLite ${s.batch.toFixed(0)} | ${s.batch4.toFixed(0)}  PostgreSQL ${p.batch.toFixed(0)} | ${p.batch4.toFixed(0)}` +
        `  graphile-worker addJobs ${g.each.toFixed(0)} (${batches} calls of ${N}), ${g.one.toFixed(0)} (one call of ${batches * N})` +
        `  | sequential single submits/s  SQLite ${s.single.toFixed(0)}  PostgreSQL ${p.single.toFixed(0)}`,
    );
  }
}
