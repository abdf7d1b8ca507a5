/**
 * BullMQ 6 on the machine's Redis (BENCH_REDIS_URL, default redis://127.0.0.1:6379),
 * configured as its documentation recommends:
 *  - ioredis connections with `maxRetriesPerRequest: null` (required for
 *    Workers: docs.bullmq.io/guide/going-to-production, "Automatic reconnections");
 *  - `removeOnComplete: { count: 1000 }, removeOnFail: { count: 5000 }` as
 *    default job options (docs.bullmq.io/guide/queues/auto-removal-of-jobs:
 *    keep a handful of completed jobs, more failed ones, so Redis does not fill up);
 *  - one Worker with `concurrency` (docs.bullmq.io/guide/workers/concurrency);
 *  - bulk enqueue with `Queue.addBulk` (docs.bullmq.io/guide/queues/adding-bulks).
 * Each measurement uses a fresh queue name, obliterated afterwards.
 */
import { randomBytes } from 'node:crypto';
import { Queue, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { afterWarmUp, chunks, until, wallMs, type WarmedSpan } from '../lib/stats.js';

const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const JOB_OPTS = { removeOnComplete: { count: 1000 }, removeOnFail: { count: 5000 } };

export const BULLMQ_CONFIG = `BullMQ 6.7 on ${REDIS_URL}: ioredis maxRetriesPerRequest null, default job options removeOnComplete {count: 1000} / removeOnFail {count: 5000}`;

const connect = () => new Redis(REDIS_URL, { maxRetriesPerRequest: null });

/** Redis's persistence settings, printed next to BullMQ's figures (an acknowledged add is on disk only with appendfsync always). */
export async function redisDurability(): Promise<string> {
  const r = connect();
  try {
    const aof = (await r.config('GET', 'appendonly')) as string[];
    const fsync = (await r.config('GET', 'appendfsync')) as string[];
    return `Redis appendonly ${aof[1]}, appendfsync ${fsync[1]}`;
  } finally {
    r.disconnect();
  }
}

async function withQueue<T>(fn: (q: Queue, name: string) => Promise<T>): Promise<T> {
  const conn = connect();
  const name = `drover-bench-${randomBytes(4).toString('hex')}`;
  const q = new Queue(name, { connection: conn, defaultJobOptions: JOB_OPTS });
  try {
    return await fn(q, name);
  } finally {
    await q.obliterate({ force: true }).catch(() => {});
    await q.close();
    conn.disconnect();
  }
}

async function addBulk(q: Queue, n: number, size: number): Promise<void> {
  let i = 0;
  for (const k of chunks(n, size)) await q.addBulk(Array.from({ length: k }, () => ({ name: 'noop', data: { i: i++ } })));
}

/** A Worker on `name` with `concurrency`; `onJob` is the handler. */
function worker(name: string, concurrency: number, onJob: (job: Job) => void): { w: Worker; conn: Redis } {
  const conn = connect();
  const w = new Worker(name, async (job) => onJob(job), { connection: conn, concurrency });
  w.on('error', (err) => console.error('bullmq worker error:', err));
  return { w, conn };
}

/**
 * Drain: n jobs waiting (addBulk, 1,000 a call), then one Worker with
 * `concurrency` starts. Span: just before `new Worker` → the n-th 'completed'
 * event (emitted after the job's move to completed returned from Redis).
 */
export async function bullmqDrain(n: number, concurrency: number): Promise<{ totalS: number }> {
  return withQueue(async (q, name) => {
    await addBulk(q, n, 1000);
    let done = 0;
    const t0 = performance.now();
    const { w, conn } = worker(name, concurrency, () => {});
    w.on('completed', () => void done++);
    try {
      await until('BullMQ to complete every job', () => done >= n, 900_000, 2);
      return { totalS: (performance.now() - t0) / 1000 };
    } finally {
      await w.close();
      conn.disconnect();
    }
  });
}

/** n sequential awaited `Queue.add` from one client, after `warm` untimed ones on the same queue (sizes.warmUp). Span: first timed call → last resolved. */
export async function bullmqAddSequential(n: number, warm: number): Promise<WarmedSpan> {
  return withQueue((q) => {
    const adds = async (k: number) => {
      for (let i = 0; i < k; i++) await q.add('noop', { i });
    };
    return afterWarmUp(() => adds(warm), () => adds(n));
  });
}

/** n jobs by `Queue.addBulk`, `size` per call, calls sequential, after `warm` untimed jobs the same way (sizes.warmUp). Span: first timed call → last resolved. */
export async function bullmqAddBulk(n: number, size: number, warm: number): Promise<WarmedSpan> {
  return withQueue((q) => afterWarmUp(() => addBulk(q, warm, size), () => addBulk(q, n, size)));
}

/**
 * Latency on an idle Worker (concurrency `concurrency`): first `warm` jobs
 * are added one by one and run, untimed (sizes.warmUp); then `schedule`
 * fires the adds (open loop); each add is stamped with wallMs() just before
 * `Queue.add`, the handler stamps wallMs() on entry. Returns add → handler start, ms.
 */
export async function bullmqLatency(concurrency: number, warm: number, schedule: (fire: (i: number, stampMs: number) => Promise<void>) => Promise<void>): Promise<number[]> {
  return withQueue(async (q, name) => {
    const started = new Map<number, number>();
    let warmed = 0;
    const { w, conn } = worker(name, concurrency, (job) => {
      if (job.name === 'warm') warmed++;
      else started.set(job.data.i, wallMs());
    });
    try {
      await w.waitUntilReady();
      for (let i = 0; i < warm; i++) await q.add('warm', { i });
      await until('BullMQ to run the warm-up jobs', () => warmed >= warm, 300_000, 2);
      const sent = new Map<number, number>();
      await schedule(async (i, stamp) => {
        sent.set(i, stamp);
        await q.add('lat', { i });
      });
      await until('BullMQ to start every job', () => started.size >= sent.size, 60_000, 2);
      return [...sent].map(([i, at]) => started.get(i)! - at);
    } finally {
      await w.close();
      conn.disconnect();
    }
  });
}
