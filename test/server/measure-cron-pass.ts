/**
 * Measures one cron pass that fires N schedules due at the same second: N
 * schedules `* * * * *` whose next fire time is T (a minute boundary), then
 * one CronService.tick() with the clock running from T + 1 ms, on SQLite (a file,
 * synchronous=FULL) and on PostgreSQL (a fresh test database, pool of 10).
 * Prints the pass's wall time, the tasks it created and the wall time spent
 * in each store method. Run it on two builds
 * (e.g. before and after a change to the firing path):
 *
 *   npx tsc -p tsconfig.json && node dist/test/server/measure-cron-pass.js --measure [N] [rounds] [sqlite|postgres|both]
 *
 * Each round uses a fresh store; the best round is the figure to compare
 * (the machine is shared). Does nothing without --measure (the test runner
 * loads every file under test/).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseSchedule } from '../../src/core/cron/schedule.js';
import { newTaskId } from '../../src/core/ids.js';
import { CronService } from '../../src/server/cron-service.js';
import { openPostgresStore } from '../../src/store/postgres/postgres-store.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { ScheduleSpec, Store } from '../../src/store/store.js';
import { createTestDatabase, dropAllTestDatabases } from '../support/postgres.js';
import { makeSpec } from '../store/contract-harness.js';

const MIN = 60_000;
const quiet = { info() {}, warn() {}, error() {} };

async function fill(store: Store, n: number, slot: number): Promise<void> {
  const s = parseSchedule({ expr: '* * * * *' });
  const created = slot - 30_000;
  const CHUNK = 500;
  for (let i = 0; i < n; i += CHUNK) {
    const k = Math.min(CHUNK, n - i);
    await Promise.all(
      Array.from({ length: k }, (_, j) => {
        const spec: ScheduleSpec = { name: `s${i + j}`, expr: s.expr, tz: s.tz, overlap: 'allow', catchup: 'latest', maxCatchup: 10, template: makeSpec({ name: `s${i + j}` }) };
        return store.createSchedule(newTaskId(created), `u${(i + j) % 10}`, spec, created, slot);
      }),
    );
  }
}

/** The store, with the wall time spent in each method it is asked for (awaited calls; concurrent ones overlap). */
function timed(store: Store, spent: Map<string, number>): Store {
  return new Proxy(store, {
    get(target, key, receiver) {
      const v = Reflect.get(target, key, receiver);
      if (typeof v !== 'function' || typeof key !== 'string') return v;
      return (...args: unknown[]) => {
        const t0 = performance.now();
        const out = v.apply(target, args);
        if (out instanceof Promise) return out.finally(() => spent.set(key, (spent.get(key) ?? 0) + performance.now() - t0));
        return out;
      };
    },
  });
}

async function onePass(bare: Store, n: number): Promise<{ ms: number; fired: number; spent: string }> {
  await bare.migrate();
  const slot = Math.floor(Date.now() / MIN) * MIN;
  await fill(bare, n, slot);
  const spent = new Map<string, number>();
  const store = timed(bare, spent);
  // Real time from 1 ms after the slot: the pass renews its lease as a server's would.
  const t0 = performance.now();
  const clock = { now: () => slot + 1 + Math.floor(performance.now() - t0) };
  const cron = new CronService(store, clock, quiet, { holder: 'measure' });
  await cron.tick();
  const ms = performance.now() - t0;
  cron.stop();
  return { ms, fired: cron.stats.fired, spent: [...spent].map(([k, v]) => `${k} ${v.toFixed(0)} ms`).join(', ') };
}

async function main(): Promise<void> {
  const args = process.argv.slice(2).filter((a) => a !== '--measure');
  const n = Number(args[0] ?? 10_000);
  const rounds = Number(args[1] ?? 3);
  const which = args[2] ?? 'both';
  const dir = mkdtempSync(join(tmpdir(), 'drover-measure-cron-'));
  try {
    for (let r = 0; r < rounds; r++) {
      if (which !== 'postgres') {
        const store = openSqliteStore(join(dir, `r${r}.db`));
        try {
          const { ms, fired, spent } = await onePass(store, n);
          console.log(`sqlite   round ${r + 1}: ${fired} fired in ${ms.toFixed(0)} ms (${((ms * 1000) / Math.max(1, fired)).toFixed(0)} µs per schedule; store calls: ${spent})`);
        } finally {
          await store.close();
        }
      }
      if (which !== 'sqlite') {
        const db = await createTestDatabase();
        const store = openPostgresStore(db.url, { poolSize: 10 });
        try {
          const { ms, fired, spent } = await onePass(store, n);
          console.log(`postgres round ${r + 1}: ${fired} fired in ${ms.toFixed(0)} ms (${((ms * 1000) / Math.max(1, fired)).toFixed(0)} µs per schedule; store calls: ${spent})`);
        } finally {
          await store.close();
          await db.drop();
        }
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await dropAllTestDatabases();
  }
}

if (process.argv.includes('--measure')) await main();
