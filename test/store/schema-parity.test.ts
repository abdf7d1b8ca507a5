/**
 * The two stores' schemas hold the same tables and the same columns (names,
 * and whether NULL is allowed) after migrate(): src/store/rows.ts maps one
 * row shape for both, and version N of the migrations means the same schema
 * in each. Types differ on purpose (INTEGER vs BIGINT, BLOB vs BYTEA) and so
 * do indexes (each backend's planner wants its own), so neither is compared.
 * Needs PostgreSQL, like the other PostgreSQL suites (DROVER_TEST_SKIP_POSTGRES=1 skips it).
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import pg from 'pg';
import { LATEST_SCHEMA_VERSION as PG_VERSION } from '../../src/store/postgres/migrations.js';
import { openPostgresStore } from '../../src/store/postgres/postgres-store.js';
import { LATEST_SCHEMA_VERSION as SQLITE_VERSION } from '../../src/store/sqlite/migrations.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { createTestDatabase, dropAllTestDatabases, PG_SKIP_REASON, requirePostgres } from '../support/postgres.js';

const PG = await requirePostgres();

after(async () => {
  if (PG) await dropAllTestDatabases();
});

/** table → column → 'null' | 'not null', with tables and columns in name order. */
type Schema = Record<string, Record<string, 'null' | 'not null'>>;

function normalize(rows: Array<{ table: string; column: string; notNull: boolean }>): Schema {
  const out: Schema = {};
  for (const r of [...rows].sort((a, b) => (a.table === b.table ? (a.column < b.column ? -1 : 1) : a.table < b.table ? -1 : 1))) {
    (out[r.table] ??= {})[r.column] = r.notNull ? 'not null' : 'null';
  }
  return out;
}

async function sqliteSchema(): Promise<Schema> {
  const s = openSqliteStore(':memory:');
  try {
    await s.migrate();
    const rows = s.db
      .prepare(
        // sqlite_sequence is SQLite's own bookkeeping for AUTOINCREMENT. A PRIMARY KEY column is
        // NOT NULL in effect (INTEGER: the rowid; TEXT: never inserted as NULL) though SQLite reports notnull = 0.
        `SELECT m.name AS tbl, c.name AS col, (c."notnull" OR c.pk > 0) AS nn
         FROM sqlite_schema m, pragma_table_info(m.name) c
         WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite\\_%' ESCAPE '\\'`,
      )
      .all() as Array<{ tbl: string; col: string; nn: number }>;
    return normalize(rows.map((r) => ({ table: r.tbl, column: r.col, notNull: r.nn !== 0 })));
  } finally {
    await s.close();
  }
}

async function postgresSchema(): Promise<Schema> {
  // An empty database migrated by the store itself (not the tests' template), so the path servers take is the one compared.
  const db = await createTestDatabase({ migrated: false });
  try {
    const store = openPostgresStore(db.url, { poolSize: 1, applicationName: 'drover-test-parity' });
    try {
      await store.migrate();
    } finally {
      await store.close();
    }
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      const { rows } = await c.query<{ tbl: string; col: string; nullable: string }>(
        `SELECT c.table_name AS tbl, c.column_name AS col, c.is_nullable AS nullable
         FROM information_schema.columns c
         JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
         WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE'`,
      );
      return normalize(rows.map((r) => ({ table: r.tbl, column: r.col, notNull: r.nullable === 'NO' })));
    } finally {
      await c.end();
    }
  } finally {
    await db.drop();
  }
}

describe('schema parity: SQLite and PostgreSQL', { skip: PG ? false : PG_SKIP_REASON }, () => {
  it('both migrate to the same schema version', () => {
    assert.equal(SQLITE_VERSION, PG_VERSION);
  });

  it('hold the same tables with the same columns, NULL allowed in the same ones', async () => {
    const [lite, post] = await Promise.all([sqliteSchema(), postgresSchema()]);
    // Tables first, for a readable failure; then every table's columns.
    assert.deepEqual(Object.keys(post), Object.keys(lite), 'tables');
    for (const table of Object.keys(lite)) {
      assert.deepEqual(Object.keys(post[table]!), Object.keys(lite[table]!), `columns of ${table}`);
      assert.deepEqual(post[table], lite[table], `nullability of the columns of ${table}`);
    }
    // The comparison has something to compare: the tables the store is made of, with this columns.
    for (const [table, column] of [
      ['tasks', 'requires'],
      ['tasks', 'idempotency_key'],
      ['tasks', 'request_hash'],
      ['attempts', 'fencing_token'],
      ['attempts', 'stop_reason'],
      ['workers', 'token_id'],
      ['tokens', 'last_used_at'],
      ['log_chunks', 'data'],
      ['leaders', 'expires_at'],
      ['workers', 'draining_at'],
      ['web_sessions', 'token_id'],
      ['login_codes', 'code_hash'],
      ['changes', 'xid'],
      ['feed_meta', 'pruned_id'],
      ['task_counts', 'shard'],
      ['task_minutes', 'latency_max_ms'],
      ['schema_migrations', 'version'],
      ['schedules', 'template'],
      ['schedules', 'next_fire_at'],
      ['schedule_runs', 'reason'],
      ['tasks', 'schedule_id'],
      ['tasks', 'scheduled_at'],
      ['leaders', 'epoch'],
    ] as const) {
      assert.ok(lite[table]?.[column], `${table}.${column}`);
    }
  });
});
