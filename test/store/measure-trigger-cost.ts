/**
 * Measures what the store's write path costs per task: submit → claim → end
 * (succeeded) for N tasks, on SQLite (a file, synchronous=FULL) and on
 * PostgreSQL (a fresh test database). Run it on two builds (e.g. with and
 * without the change-feed and counter triggers) to see what the triggers add:
 *
 *   npx tsc -p tsconfig.json && node dist/test/store/measure-trigger-cost.js --measure [N] [rounds]
 *
 * Two shapes: `serial` (one task at a time: the latency of each write) and
 * `concurrent` (16 tasks in flight: throughput, with SQLite's group commit).
 * Each round prints tasks/s; the best round of each is the figure to compare
 * (the machine is shared, so the best is the least disturbed). Does nothing
 * without --measure (the test runner loads every file under test/).
 * `--no-triggers` drops the change-feed, counter and minute triggers after
 * migrating (schema v4 only), to tell their cost from the new indexes'.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newTaskId } from '../../src/core/ids.js';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Store } from '../../src/store/store.js';
import { createTestDatabase } from '../support/postgres.js';
import { endInput, makeSpec } from './contract-harness.js';

const T0 = 1_700_000_000_000;
const LEASE = 60_000;

async function oneTask(store: Store, i: number, now: number): Promise<void> {
  await store.createTask(newTaskId(now), `owner${i % 4}`, makeSpec({ name: `job-${i % 10}` }), 'user:bench', now);
  // With several in flight, a claim can find nothing waiting: the waiting tasks are being
  // claimed by the others (PostgreSQL skips locked rows). Every submit is followed by one
  // claim, so one comes: try again.
  let c = await store.claimNext({ id: `w${i % 8}`, labels: {} }, now + 1, LEASE);
  for (let tries = 0; !c; tries++) {
    if (tries > 10_000) throw new Error('nothing to claim');
    await new Promise((r) => setImmediate(r));
    c = await store.claimNext({ id: `w${i % 8}`, labels: {} }, now + 1, LEASE);
  }
  const ended = await store.endAttempt(c.attempt.id, c.attempt.fencingToken, endInput('succeeded'), `worker:${c.attempt.workerId}`, now + 2, { workerId: c.attempt.workerId });
  if (!ended) throw new Error('end refused');
}

/** tasks/s for n tasks, `inFlight` at a time. */
async function run(store: Store, n: number, inFlight: number, base: number): Promise<number> {
  let next = 0;
  const start = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < n) {
        const i = next++;
        await oneTask(store, i, base + i * 3);
      }
    }),
  );
  const s = Number(process.hrtime.bigint() - start) / 1e9;
  return n / s;
}

/** Schema v4's triggers, dropped: what is left is the schema's other costs (its indexes). */
async function dropTriggers(store: Store): Promise<void> {
  if (!('pool' in store)) {
    const db = (store as SqliteStore).db;
    for (const t of ['tasks_feed_insert', 'tasks_feed_update', 'workers_feed_insert', 'workers_feed_update', 'tasks_count_insert', 'tasks_count_update', 'tasks_count_delete', 'attempts_minute_insert', 'tasks_minute_end']) {
      db.exec(`DROP TRIGGER ${t}`);
    }
  } else {
    const pool = (store as PostgresStore).pool;
    await pool.query('DROP TRIGGER tasks_written ON tasks; DROP TRIGGER tasks_deleted ON tasks; DROP TRIGGER attempts_started ON attempts; DROP TRIGGER workers_inserted ON workers; DROP TRIGGER workers_updated ON workers');
  }
}

async function measure(label: string, open: () => Promise<{ store: Store; done: () => Promise<void> }>, n: number, rounds: number): Promise<void> {
  for (const [shape, inFlight] of [
    ['serial', 1],
    ['concurrent', 16],
  ] as const) {
    const results: number[] = [];
    for (let r = 0; r < rounds; r++) {
      const { store, done } = await open();
      try {
        await store.migrate();
        if (process.argv.includes('--no-triggers')) await dropTriggers(store);
        await run(store, Math.min(100, n), inFlight, T0); // warm-up: statements prepared, pool connected
        results.push(await run(store, n, inFlight, T0 + 1_000_000));
      } finally {
        await done();
      }
    }
    console.log(`${label} ${shape.padEnd(10)} n=${n}: best ${Math.max(...results).toFixed(0)} tasks/s (rounds: ${results.map((x) => x.toFixed(0)).join(', ')})`);
  }
}

if (process.argv.includes('--measure')) {
  const [n = 1000, rounds = 3] = process.argv
    .slice(2)
    .filter((a) => /^\d+$/.test(a))
    .map(Number);
  const dir = mkdtempSync(join(tmpdir(), 'drover-measure-'));
  let k = 0;
  try {
    await measure(
      'sqlite  ',
      async () => {
        const path = join(dir, `m${++k}.db`);
        const store = openSqliteStore(path);
        return { store, done: () => store.close() };
      },
      n,
      rounds,
    );
    await measure(
      'postgres',
      async () => {
        const db = await createTestDatabase();
        const store = openPostgresStore(db.url, { poolSize: 16, applicationName: 'drover-measure' });
        return {
          store,
          done: async () => {
            await store.close();
            await db.drop();
          },
        };
      },
      n,
      rounds,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
