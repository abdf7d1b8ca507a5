import { runSignalContract } from './contract-signals.js';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { Worker } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { UnavailableError } from '../../src/core/errors.js';
import { newTaskId } from '../../src/core/ids.js';
import { LATEST_SCHEMA_VERSION, MIGRATIONS } from '../../src/store/sqlite/migrations.js';
import { mapSqliteError } from '../../src/store/sqlite/sqlite-errors.js';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { makeSpec, runStoreContract } from './contract.js';

const T0 = 1_700_000_000_000;
const dir = mkdtempSync(join(tmpdir(), 'drover-sqlite-test-'));
let fileNo = 0;
const freshPath = () => join(dir, `db-${++fileNo}`, 'drover.db');

after(() => rmSync(dir, { recursive: true, force: true }));

runStoreContract('sqlite :memory:', async () => openSqliteStore(':memory:'));
runStoreContract('sqlite file', async () => openSqliteStore(freshPath()));

async function openMigrated(path: string): Promise<SqliteStore> {
  const s = openSqliteStore(path);
  await s.migrate();
  return s;
}

describe('SqliteStore specifics', () => {
  it('creates the parent directory and sets the durability pragmas', async () => {
    const path = freshPath();
    const s = await openMigrated(path);
    try {
      assert.ok(existsSync(path));
      assert.equal(s.db.pragma('journal_mode', { simple: true }), 'wal');
      assert.equal(s.db.pragma('synchronous', { simple: true }), 2); // FULL
      assert.equal(s.db.pragma('foreign_keys', { simple: true }), 1);
      assert.equal(s.db.pragma('busy_timeout', { simple: true }), 5000);
    } finally {
      await s.close();
    }
  });

  it('records each migration once in schema_migrations', async () => {
    const s = await openMigrated(':memory:');
    try {
      await s.migrate();
      const rows = s.db.prepare('SELECT version, name FROM schema_migrations ORDER BY version').all();
      assert.deepEqual(
        rows,
        MIGRATIONS.map((m) => ({ version: m.version, name: m.name })),
      );
    } finally {
      await s.close();
    }
  });

  it('keeps tasks, attempts, events, logs and tokens across close and reopen', async () => {
    const path = freshPath();
    const s1 = await openMigrated(path);
    const task = await s1.createTask(newTaskId(T0), 'alice', makeSpec({ name: 'durable' }), 'user:alice', T0);
    const claim = await s1.claimNext('w1', T0 + 1, 15_000);
    assert.ok(claim);
    await s1.appendLogs(claim.attempt.id, claim.attempt.id, [{ seq: 0, stream: 'stdout', data: Buffer.from('persisted\n') }], T0 + 2);
    await s1.createToken({ id: 'tok', name: 'n', user: 'alice', role: 'user', secretHash: 'f'.repeat(64), createdAt: T0 });
    const before = {
      task: await s1.getTask(task.id),
      attempts: await s1.listAttempts(task.id),
      events: await s1.listEvents(task.id),
      logs: await s1.readLogs(task.id, 0, 100),
    };
    await s1.close();

    const s2 = await openMigrated(path);
    try {
      assert.deepEqual(
        {
          task: await s2.getTask(task.id),
          attempts: await s2.listAttempts(task.id),
          events: await s2.listEvents(task.id),
          logs: await s2.readLogs(task.id, 0, 100),
        },
        before,
      );
      assert.equal(await s2.countTokens(), 1);
      // The reopened store continues the sequence: the running attempt can still be ended with its token.
      const r = await s2.endAttempt(claim.attempt.id, claim.attempt.id, { outcome: 'succeeded', exitCode: 0, signal: null, error: null, durationMs: 3 }, 'worker:w1', T0 + 3);
      assert.equal(r?.task.state, 'succeeded');
    } finally {
      await s2.close();
    }
  });

  it('refuses a database whose schema is newer than the code', async () => {
    const path = freshPath();
    const s1 = await openMigrated(path);
    s1.db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(LATEST_SCHEMA_VERSION + 1, 'from the future', T0);
    await s1.close();

    const s2 = openSqliteStore(path);
    try {
      await assert.rejects(s2.migrate(), (e: unknown) => {
        assert.ok(e instanceof Error);
        assert.match(e.message, new RegExp(`schema version ${LATEST_SCHEMA_VERSION + 1}`));
        assert.match(e.message, /newer/);
        return true;
      });
      const max = s2.db.prepare('SELECT max(version) AS v FROM schema_migrations').get() as { v: number };
      assert.equal(max.v, LATEST_SCHEMA_VERSION + 1);
    } finally {
      await s2.close();
    }
  });

  it('connections in several threads racing on one file claim each task exactly once', async () => {
    const path = freshPath();
    const s = await openMigrated(path);
    const ids = new Set<string>();
    for (let i = 0; i < 200; i++) ids.add((await s.createTask(newTaskId(T0 + i), 'alice', makeSpec({ priority: i % 5 }), 'user:alice', T0 + i)).id);
    const threads = Array.from({ length: 4 }, (_, i) => new Worker(new URL('./claim-race-worker.js', import.meta.url), { workerData: { path, workerId: `w${i}`, now: T0 + 1000 } }));
    try {
      const results = threads.map(
        (w) =>
          new Promise<{ claimed?: string[]; error?: string }>((resolve, reject) => {
            w.on('message', (m: unknown) => {
              if (m !== 'ready') resolve(m as { claimed?: string[]; error?: string });
            });
            w.once('error', reject);
          }),
      );
      const ready = threads.map((w) => new Promise<void>((resolve) => w.once('message', () => resolve())));
      await Promise.all(ready);
      for (const w of threads) w.postMessage('go');
      const outs = await Promise.all(results);
      const claimed: string[] = [];
      for (const o of outs) {
        assert.equal(o.error, undefined);
        claimed.push(...(o.claimed ?? []));
      }
      assert.equal(claimed.length, 200);
      assert.deepEqual(new Set(claimed), ids);
      for (const id of ids) {
        assert.equal((await s.listAttempts(id)).length, 1);
        assert.equal((await s.getTask(id))?.state, 'succeeded');
      }
    } finally {
      await Promise.all(threads.map((w) => w.terminate()));
      await s.close();
    }
  });

  it('the scheduler queries use their indexes', async () => {
    const s = await openMigrated(':memory:');
    try {
      const plan = (sql: string) => (s.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all() as Array<{ detail: string }>).map((p) => p.detail).join('\n');
      const claim = plan("SELECT id FROM tasks WHERE state = 'waiting' ORDER BY priority DESC, id ASC LIMIT 1");
      assert.match(claim, /tasks_queue/);
      assert.doesNotMatch(claim, /TEMP B-TREE/);
      const due = plan("SELECT id FROM tasks WHERE state = 'retrying' AND run_after <= 5 ORDER BY run_after, id");
      assert.match(due, /tasks_due/);
      const leases = plan("SELECT * FROM attempts WHERE state = 'running' AND lease_expires_at < 5 ORDER BY lease_expires_at, id");
      assert.match(leases, /attempts_running_lease/);
      const listing = plan("SELECT * FROM tasks WHERE state = 'waiting' ORDER BY id DESC LIMIT 51");
      assert.doesNotMatch(listing, /TEMP B-TREE/);
    } finally {
      await s.close();
    }
  });

  it('a full disk surfaces as UnavailableError and leaves no partial task', async () => {
    const s = await openMigrated(':memory:');
    try {
      const pages = s.db.pragma('page_count', { simple: true }) as number;
      s.db.pragma(`max_page_count = ${pages}`);
      const big = makeSpec({ name: 'big', script: 'x'.repeat(200_000), command: null, interpreter: ['sh'] });
      const id = newTaskId(T0);
      await assert.rejects(s.createTask(id, 'alice', big, 'user:alice', T0), (e: unknown) => {
        assert.ok(e instanceof UnavailableError);
        assert.equal(e.retryable, true);
        assert.match(e.message, /disk is full/);
        return true;
      });
      assert.equal(await s.getTask(id), null);
      assert.deepEqual(await s.listEvents(id), []);
      s.db.pragma('max_page_count = 1073741823');
      assert.equal((await s.createTask(id, 'alice', big, 'user:alice', T0)).id, id);
    } finally {
      await s.close();
    }
  });

  it('another writer holding the lock past busy_timeout surfaces as UnavailableError', async () => {
    const path = freshPath();
    const s = await openMigrated(path);
    const other = new Database(path);
    try {
      s.db.pragma('busy_timeout = 20');
      other.exec('BEGIN IMMEDIATE');
      await assert.rejects(s.createTask(newTaskId(T0), 'alice', makeSpec(), 'user:alice', T0), UnavailableError);
      other.exec('ROLLBACK');
      assert.equal((await s.createTask(newTaskId(T0), 'alice', makeSpec(), 'user:alice', T0)).state, 'waiting');
    } finally {
      other.close();
      await s.close();
    }
  });

  it('mapSqliteError maps environment failures and passes the rest through', () => {
    for (const code of ['SQLITE_FULL', 'SQLITE_IOERR', 'SQLITE_IOERR_WRITE', 'SQLITE_IOERR_FSYNC', 'SQLITE_READONLY', 'SQLITE_READONLY_DBMOVED', 'SQLITE_BUSY', 'SQLITE_BUSY_SNAPSHOT']) {
      const e = Object.assign(new Error('boom'), { code });
      const mapped = mapSqliteError(e);
      assert.ok(mapped instanceof UnavailableError, code);
      assert.match(mapped.message, new RegExp(code));
      assert.equal((mapped as { cause?: unknown }).cause, e);
    }
    for (const e of [Object.assign(new Error('c'), { code: 'SQLITE_CONSTRAINT_UNIQUE' }), Object.assign(new Error('c'), { code: 'SQLITE_FULLNESS' }), new Error('plain'), 'text', null]) {
      assert.equal(mapSqliteError(e), e);
    }
  });
});

runSignalContract('sqlite :memory:', async () => openSqliteStore(':memory:'));
