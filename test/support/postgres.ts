/**
 * PostgreSQL for tests: where it is, whether the suites run, and a fresh,
 * migrated database per test that is dropped afterwards.
 *
 *   DROVER_TEST_PG_URL         maintenance database (default postgres://postgres@127.0.0.1:5432/test);
 *                              the role must be allowed to create databases.
 *   DROVER_TEST_SKIP_POSTGRES  "1" skips the PostgreSQL suites, visibly. Without it an
 *                              unreachable server fails the run: a silent skip would hide
 *                              a broken setup behind a green run.
 *
 * Fresh databases are clones of a template that holds the migrated schema:
 * `CREATE DATABASE drover_test_<random> TEMPLATE drover_template_v<N>_<hash>`
 * takes ~50 ms, instead of running the migrations each time. The template's
 * name carries the schema version and a hash of the migration SQL, so a
 * template built by other code is never used; it is built once, under an
 * advisory lock on the maintenance database so that test processes running in
 * parallel do not race, and it is marked as a template (and closed to
 * connections) only when complete. Templates of older schema versions are
 * dropped then.
 */
import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';
import { LATEST_SCHEMA_VERSION, MIGRATIONS } from '../../src/store/postgres/migrations.js';
import { errMessage } from '../../src/store/postgres/pg-errors.js';
import { openPostgresStore } from '../../src/store/postgres/postgres-store.js';

export const PG_SKIP_REASON = 'DROVER_TEST_SKIP_POSTGRES=1';
const DEFAULT_URL = 'postgres://postgres@127.0.0.1:5432/test';
/** pg_advisory_lock(int, int) key on the maintenance database: "DROV", 2 = test templates. */
const TEMPLATE_LOCK = [0x44524f56, 2] as const;
const TEST_DB_PREFIX = 'drover_test_';
const TEMPLATE_PREFIX = 'drover_template_';

export function pgTestUrl(): string {
  return process.env.DROVER_TEST_PG_URL || DEFAULT_URL;
}

/** The URL with the password hidden, for messages. */
function shown(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return url;
  }
}

/** `url` with its database replaced by `db`. */
export function pgUrlFor(db: string, url = pgTestUrl()): string {
  const u = new URL(url);
  u.pathname = `/${db}`;
  return u.toString();
}

async function withAdmin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: pgTestUrl(), connectionTimeoutMillis: 5000, application_name: 'drover-test-admin' });
  c.on('error', () => {}); // reported through the failing query instead
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end().catch(() => {});
  }
}

/**
 * True when the PostgreSQL suites should run. Throws if the server cannot be
 * reached, unless DROVER_TEST_SKIP_POSTGRES=1 (then false: skip the suites
 * with `{ skip: PG_SKIP_REASON }`).
 */
export async function requirePostgres(): Promise<boolean> {
  if (process.env.DROVER_TEST_SKIP_POSTGRES === '1') return false;
  const url = pgTestUrl();
  try {
    await withAdmin((c) => c.query('SELECT 1'));
  } catch (e) {
    throw new Error(
      `PostgreSQL is not reachable at URL: ${shown(url)} (${errMessage(e)}); ` +
        `start it, or set DROVER_TEST_SKIP_POSTGRES=1 to skip the PostgreSQL suites explicitly`,
      { cause: e },
    );
  }
  return true;
}

const ident = (name: string) => {
  if (!/^[a-z0-9_]+$/.test(name)) throw new Error(`unexpected database name ${name}`);
  return `"${name}"`;
};

export function templateName(): string {
  const hash = createHash('sha256')
    .update(JSON.stringify(MIGRATIONS))
    .digest('hex')
    .slice(0, 12);
  return `${TEMPLATE_PREFIX}v${LATEST_SCHEMA_VERSION}_${hash}`;
}

const templateExists = async (c: pg.Client, name: string) =>
  ((await c.query('SELECT 1 FROM pg_database WHERE datname = $1 AND datistemplate', [name])).rowCount ?? 0) > 0;

/** Builds the template unless a complete one exists. */
async function ensureTemplate(name: string): Promise<void> {
  await withAdmin(async (c) => {
    if (await templateExists(c, name)) return;
    await c.query('SELECT pg_advisory_lock($1::int, $2::int)', [...TEMPLATE_LOCK]);
    try {
      if (await templateExists(c, name)) return; // another process built it while we waited
      // Left half-built by a process that died (it is marked a template only when complete).
      await c.query(`DROP DATABASE IF EXISTS ${ident(name)} WITH (FORCE)`);
      await c.query(`CREATE DATABASE ${ident(name)}`);
      const store = openPostgresStore(pgUrlFor(name), { poolSize: 1, applicationName: 'drover-test-template' });
      try {
        await store.migrate();
      } finally {
        await store.close();
      }
      await c.query(`ALTER DATABASE ${ident(name)} WITH IS_TEMPLATE true ALLOW_CONNECTIONS false`);
      // Templates of older schema versions are stale now; nobody clones them while we hold
      // the lock exclusively (clones take it shared). Other templates of this version (the
      // migration SQL was edited) are left alone: another checkout may be testing with one.
      const others = await c.query<{ datname: string }>("SELECT datname FROM pg_database WHERE datname LIKE 'drover\\_template\\_v%'");
      for (const { datname } of others.rows) {
        const v = Number(/^drover_template_v(\d+)_/.exec(datname)?.[1] ?? NaN);
        if (!(v < LATEST_SCHEMA_VERSION)) continue;
        await c.query(`ALTER DATABASE ${ident(datname)} WITH IS_TEMPLATE false`);
        await c.query(`DROP DATABASE IF EXISTS ${ident(datname)} WITH (FORCE)`);
      }
    } finally {
      await c.query('SELECT pg_advisory_unlock($1::int, $2::int)', [...TEMPLATE_LOCK]).catch(() => {});
    }
  });
}

export interface TestDatabase {
  /** postgres:// URL of the new database. */
  url: string;
  name: string;
  /** Drops the database, closing any connection still open to it. Idempotent. */
  drop(): Promise<void>;
}

const live = new Set<string>();

async function dropDatabase(name: string): Promise<void> {
  await withAdmin((c) => c.query(`DROP DATABASE IF EXISTS ${ident(name)} WITH (FORCE)`));
  live.delete(name);
}

/**
 * A new database with the current schema, migrated (a clone of the template),
 * or empty with `{ migrated: false }`. The caller drops it with `drop()`;
 * `dropAllTestDatabases()` drops whatever this process has not.
 */
export async function createTestDatabase(opts: { migrated?: boolean } = {}): Promise<TestDatabase> {
  const name = `${TEST_DB_PREFIX}${process.pid}_${randomBytes(6).toString('hex')}`;
  if (opts.migrated === false) {
    await withAdmin((c) => c.query(`CREATE DATABASE ${ident(name)}`));
  } else {
    const template = templateName();
    for (let i = 0; ; i++) {
      await ensureTemplate(template);
      const created = await withAdmin(async (c) => {
        // Shared: many clones at once, but never while a template is being built or dropped.
        await c.query('SELECT pg_advisory_lock_shared($1::int, $2::int)', [...TEMPLATE_LOCK]);
        try {
          if (!(await templateExists(c, template))) return false; // dropped by a test run of other code
          await c.query(`CREATE DATABASE ${ident(name)} TEMPLATE ${ident(template)}`);
          return true;
        } finally {
          await c.query('SELECT pg_advisory_unlock_shared($1::int, $2::int)', [...TEMPLATE_LOCK]).catch(() => {});
        }
      });
      if (created) break;
      if (i >= 2) throw new Error(`the test template ${template} keeps disappearing (another test run with other migrations?)`);
    }
  }
  live.add(name);
  let dropped: Promise<void> | null = null;
  return {
    url: pgUrlFor(name),
    name,
    drop: () => (dropped ??= dropDatabase(name)),
  };
}

/** Drops every database this process created and has not dropped yet (for an `after` hook). */
export async function dropAllTestDatabases(): Promise<void> {
  for (const name of [...live]) await dropDatabase(name);
}

/** Names of the drover_test_* databases that exist now (any process). */
export async function listTestDatabases(): Promise<string[]> {
  return withAdmin(async (c) => (await c.query<{ datname: string }>("SELECT datname FROM pg_database WHERE datname LIKE 'drover\\_test\\_%' ORDER BY 1")).rows.map((r) => r.datname));
}
