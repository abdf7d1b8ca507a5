/**
 * Fresh PostgreSQL databases for one measurement each (`drover_bench_<tag>_<random>`),
 * dropped afterwards WITH (FORCE), and on Ctrl-C. BENCH_PG_URL names any
 * database on the server (default postgres://postgres@127.0.0.1:5432/postgres).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { sleep } from './stats.js';

export const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const created = new Set<string>();

export function dbUrl(name: string): string {
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

export async function withDatabase<T>(tag: string, fn: (url: string) => Promise<T>): Promise<T> {
  const name = `drover_bench_${tag.replace(/[^a-z0-9]/g, '')}_${randomBytes(4).toString('hex')}`;
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
    // Connections just closed by their clients linger a moment: let them go rather than kill them.
    for (let i = 0; i < 100; i++) {
      const r = await c.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1', [name]);
      if (r.rows[0].n === 0) break;
      await sleep(20);
    }
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  });
  created.delete(name);
}

/** Ctrl-C: drop what the bench created, then exit as interrupted. */
export function dropOnInterrupt(): void {
  const bye = () => void Promise.allSettled([...created].map(dropDatabase)).finally(() => process.exit(130));
  process.once('SIGINT', bye);
  process.once('SIGTERM', bye);
}

/** One query on a short-lived client (e.g. settings to print next to a figure). */
export async function queryOne(url: string, sql: string): Promise<any> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(sql)).rows[0];
  } finally {
    await c.end();
  }
}
