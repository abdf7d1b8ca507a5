/**
 * The SQLite store: the shared contract suites (in memory and on a file),
 * plus what only SQLite has: files and their modes, the one-server lock,
 * reopening, schema upgrades of old files, several connections to one file,
 * query plans, and environment failures (disk full, a foreign lock holder).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { ConflictError, CursorExpiredError, UnavailableError } from '../../src/core/errors.js';
import { newTaskId } from '../../src/core/ids.js';
import { CLAIM_SQL } from '../../src/store/sqlite/attempts.js';
import { DUE_SQL } from '../../src/store/sqlite/tasks.js';
import { PAGE_CACHE_KIB } from '../../src/store/sqlite/db.js';
import { LATEST_SCHEMA_VERSION, MIGRATIONS } from '../../src/store/sqlite/migrations.js';
import { mapSqliteError } from '../../src/store/sqlite/sqlite-errors.js';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { makeSpec, runStoreContract } from './contract.js';
import { runSignalContract } from './contract-signals.js';

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
  it('creates the parent directory and sets the durability pragmas and the page cache size', async () => {
    const path = freshPath();
    const s = await openMigrated(path);
    try {
      assert.ok(existsSync(path));
      assert.equal(s.db.pragma('journal_mode', { simple: true }), 'wal');
      assert.equal(s.db.pragma('synchronous', { simple: true }), 2); // FULL
      assert.equal(s.db.pragma('foreign_keys', { simple: true }), 1);
      assert.equal(s.db.pragma('busy_timeout', { simple: true }), 5000);
      assert.equal(s.db.pragma('cache_size', { simple: true }), -PAGE_CACHE_KIB, 'the page cache is bounded in KiB, not left at 16 MB');
    } finally {
      await s.close();
    }
  });

  it('creates the database, its -wal and -shm files 0600 and the directories it makes 0700', async () => {
    const top = join(dir, `modes-${++fileNo}`);
    const path = join(top, 'nested', 'drover.db');
    const s = openSqliteStore(path, { lock: true });
    try {
      await s.migrate();
      await s.createTask(newTaskId(T0), 'alice', makeSpec({ env: { SECRET: 'x' } }), 'user:alice', T0);
      const mode = (p: string) => statSync(p).mode & 0o777;
      for (const f of [path, `${path}-wal`, `${path}-shm`, `${path}.lock`]) {
        assert.ok(existsSync(f), f);
        assert.equal(mode(f).toString(8), '600', f);
      }
      assert.equal(mode(top).toString(8), '700');
      assert.equal(mode(join(top, 'nested')).toString(8), '700');
    } finally {
      await s.close();
    }
  });

  describe('lock: one server per file', () => {
    const locked = (path: string) => (e: unknown) => {
      assert.ok(e instanceof ConflictError);
      assert.equal(
        e.message,
        `another Drover server is using ${path}; one SQLite file serves one server: to run several servers use PostgreSQL (--db postgres://...)`,
      );
      return true;
    };

    it('a second open with lock: true is refused while the first holds the file, and succeeds after it closes', async () => {
      const path = freshPath();
      const first = openSqliteStore(path, { lock: true });
      await first.migrate();
      assert.throws(() => openSqliteStore(path, { lock: true }), locked(path));
      assert.throws(() => openSqliteStore(path, { lock: true }), locked(path), 'refused again: a refusal leaves nothing held');
      // Without the lock (tests, tools) the file still opens.
      const unlocked = openSqliteStore(path);
      await unlocked.close();
      await first.close();
      const second = openSqliteStore(path, { lock: true });
      try {
        await second.migrate();
        assert.equal((await second.listTasks({ limit: 1 })).tasks.length, 0);
      } finally {
        await second.close();
      }
    });

    it('another process holding the file is refused; the lock dies with that process (kill -9)', async () => {
      const path = freshPath();
      const storeModule = fileURLToPath(new URL('../../src/store/sqlite/sqlite-store.js', import.meta.url));
      const holder = spawn(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          `const { openSqliteStore } = await import(${JSON.stringify(storeModule)});
           openSqliteStore(process.argv[1], { lock: true });
           process.stdout.write('locked\\n');
           process.stdin.resume();`,
          path,
        ],
        { stdio: ['pipe', 'pipe', 'inherit'] },
      );
      try {
        const [line] = (await once(holder.stdout!, 'data')) as [Buffer];
        assert.equal(line.toString().trim(), 'locked');
        assert.throws(() => openSqliteStore(path, { lock: true }), locked(path));
      } finally {
        holder.kill('SIGKILL');
        if (holder.exitCode === null && holder.signalCode === null) await once(holder, 'exit');
      }
      const s = openSqliteStore(path, { lock: true });
      await s.close();
    });

    it(':memory: has no file to lock', async () => {
      const a = openSqliteStore(':memory:', { lock: true });
      const b = openSqliteStore(':memory:', { lock: true });
      await a.close();
      await b.close();
    });
  });

  it('upgrades a schema v2 file: old attempts get an empty token no worker can present, the sweeper can still end them', async () => {
    const path = freshPath();
    const s0 = openSqliteStore(path);
    // Build the database as Drover with schema v2 left it, with a task running on an attempt.
    s0.db.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)');
    for (const m of MIGRATIONS.filter((x) => x.version <= 2)) {
      s0.db.exec(m.sql);
      s0.db.prepare('INSERT INTO schema_migrations VALUES (?, ?, ?)').run(m.version, m.name, T0);
    }
    const id = newTaskId(T0);
    s0.db
      .prepare(
        `INSERT INTO tasks (id, owner, name, kind, state, command, args, script, interpreter, env, timeout_ms, max_retries, retry_base_delay_ms,
           retry_factor, retry_max_delay_ms, priority, labels, attempts, created_at, updated_at)
         VALUES (?, 'alice', 'old', 'batch', 'running', 'true', '[]', NULL, '[]', '{}', NULL, 3, 1000, 2, 60000, 0, '{}', 1, ?, ?)`,
      )
      .run(id, T0, T0);
    const attemptId = Number(
      s0.db.prepare("INSERT INTO attempts (task_id, number, worker_id, state, started_at, lease_expires_at) VALUES (?, 1, 'w1', 'running', ?, ?)").run(id, T0, T0 + 15_000)
        .lastInsertRowid,
    );
    s0.db.prepare('UPDATE tasks SET current_attempt_id = ? WHERE id = ?').run(attemptId, id);
    s0.db.prepare("INSERT INTO workers VALUES ('w1', 'h', 1, '{}', ?, ?, 'connected')").run(T0, T0);
    await s0.close();

    const s = await openMigrated(path);
    try {
      assert.equal((s.db.prepare('SELECT max(version) AS v FROM schema_migrations').get() as { v: number }).v, LATEST_SCHEMA_VERSION);
      const task = await s.getTask(id);
      assert.deepEqual([task?.state, task?.requires], ['running', {}]);
      const attempt = await s.getAttempt(attemptId);
      assert.deepEqual([attempt?.fencingToken, attempt?.stopReason], ['', null]);
      assert.equal((await s.listWorkers())[0]?.id, 'w1');
      // The old token (the attempt id) and the stored empty one are refused from a worker.
      assert.deepEqual(await s.checkReport(attemptId, '', 'w1'), { ok: false, reason: 'stale_token' });
      assert.deepEqual(await s.checkReport(attemptId, String(attemptId), 'w1'), { ok: false, reason: 'stale_token' });
      const end = { outcome: 'succeeded' as const, exitCode: 0, signal: null, error: null, durationMs: 1 };
      assert.equal(await s.endAttempt(attemptId, '', end, 'worker:w1', T0 + 1, { workerId: 'w1' }), null);
      assert.equal(await s.appendLogs(attemptId, '', 'w1', [{ seq: 0, stream: 'stdout', data: Buffer.from('x') }], T0 + 1), false);
      // Any registering token may take a worker id recorded before tokens were.
      await s.createToken({ id: 'tok', name: 'n', user: 'ops', role: 'worker', secretHash: 'a'.repeat(64), createdAt: T0 });
      assert.equal(await s.registerWorker({ id: 'w1', hostname: 'h', slots: 1, labels: {}, connectedAt: T0 + 2, lastSeenAt: T0 + 2 }, 'tok'), true);
      // The server's own end (its copy of the token, no worker guard) still ends it when the lease expires.
      assert.deepEqual((await s.expiredAttempts(T0 + 20_000, 10)).map((a) => a.id), [attemptId]);
      const lost = { outcome: 'lost' as const, exitCode: null, signal: null, error: 'lease expired', durationMs: null };
      const r = await s.endAttempt(attemptId, '', lost, 'scheduler', T0 + 20_000, { leaseExpired: true });
      assert.deepEqual([r?.attempt.state, r?.task.state], ['lost', 'waiting']);
      const c = await s.claimNext({ id: 'w1', labels: {} }, T0 + 20_001, 15_000);
      assert.equal(c?.task.id, id);
      assert.match(c?.attempt.fencingToken ?? '', /^[0-9a-f]{32}$/);
    } finally {
      await s.close();
    }
  });

  it('upgrades a schema v3 file: the counters are backfilled from the tasks, then kept by the triggers', async () => {
    const path = freshPath();
    const s0 = openSqliteStore(path);
    s0.db.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)');
    for (const m of MIGRATIONS.filter((x) => x.version <= 3)) {
      s0.db.exec(m.sql);
      s0.db.prepare('INSERT INTO schema_migrations VALUES (?, ?, ?)').run(m.version, m.name, T0);
    }
    const insert = s0.db.prepare(
      `INSERT INTO tasks (id, owner, name, kind, state, command, args, script, interpreter, env, timeout_ms, max_retries, retry_base_delay_ms,
         retry_factor, retry_max_delay_ms, priority, labels, created_at, updated_at)
       VALUES (?, ?, 'old', 'batch', ?, 'true', '[]', NULL, '[]', '{}', NULL, 3, 1000, 2, 60000, 0, '{}', ?, ?)`,
    );
    const old: Array<[string, string]> = [['alice', 'succeeded'], ['alice', 'succeeded'], ['alice', 'waiting'], ['bob', 'failed'], ['bob', 'waiting']];
    old.forEach(([owner, state], i) => insert.run(newTaskId(T0 + i), owner, state, T0 + i, T0 + i));
    await s0.close();

    const s = await openMigrated(path);
    try {
      const zero = { ready: 0, waiting: 0, running: 0, retrying: 0, succeeded: 0, failed: 0, cancelled: 0, skipped: 0 };
      assert.deepEqual(await s.countTasksByState(), { ...zero, succeeded: 2, waiting: 2, failed: 1 });
      assert.deepEqual(await s.countTasksByState('alice'), { ...zero, succeeded: 2, waiting: 1 });
      const c = await s.claimNext({ id: 'w1', labels: {} }, T0 + 10, 15_000);
      assert.ok(c);
      assert.deepEqual(await s.countTasksByState(), { ...zero, succeeded: 2, waiting: 1, running: 1, failed: 1 });
      // The feed starts with the upgrade: the claim is its first change.
      assert.deepEqual((await s.readChanges('0', 10)).changes.map((x) => [x.ref, x.state]), [[c.task.id, 'running']]);
    } finally {
      await s.close();
    }
  });

  it('limits are checked: promoteDue, expiredAttempts and listTasks name the field', async () => {
    const s = await openMigrated(':memory:');
    try {
      for (const bad of [0, -1, 1.5, Number.NaN]) {
        await assert.rejects(s.promoteDue(T0, bad), /limit: must be an integer >= 1/);
        await assert.rejects(s.expiredAttempts(T0, bad), /limit: must be an integer >= 1/);
        await assert.rejects(s.listTasks({ limit: bad }), /limit: must be an integer >= 1/);
      }
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
    const { task } = await s1.createTask(newTaskId(T0), 'alice', makeSpec({ name: 'durable' }), 'user:alice', T0);
    const claim = await s1.claimNext({ id: 'w1', labels: {} }, T0 + 1, 15_000);
    assert.ok(claim);
    await s1.appendLogs(claim.attempt.id, claim.attempt.fencingToken, 'w1', [{ seq: 0, stream: 'stdout', data: Buffer.from('persisted\n') }], T0 + 2);
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
      // The running attempt can still be ended by its worker with its token.
      const r = await s2.endAttempt(claim.attempt.id, claim.attempt.fencingToken, { outcome: 'succeeded', exitCode: 0, signal: null, error: null, durationMs: 3 }, 'worker:w1', T0 + 3, {
        workerId: 'w1',
      });
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
    for (let i = 0; i < 200; i++) ids.add((await s.createTask(newTaskId(T0 + i), 'alice', makeSpec({ priority: i % 5 }), 'user:alice', T0 + i)).task.id);
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

  it('change feed: the cursor is the change id; one beyond the last id given out (another database’s) is expired', async () => {
    const s = await openMigrated(':memory:');
    try {
      assert.equal(await s.feedHead(), '0');
      await s.createTask(newTaskId(T0), 'alice', makeSpec(), 'user:alice', T0);
      assert.deepEqual((await s.readChanges('0', 10)).changes.map((c) => c.cursor), ['1']);
      assert.equal(await s.feedHead(), '1');
      await assert.rejects(s.readChanges('2', 10), CursorExpiredError);
      // Pruned rows leave the head where it was (AUTOINCREMENT never reuses an id).
      assert.equal(await s.pruneFeed(T0 + 1, 10), 1);
      assert.equal(await s.feedHead(), '1');
      assert.deepEqual(await s.readChanges('1', 10), { changes: [], cursor: '1' });
      await assert.rejects(s.readChanges('0', 10), CursorExpiredError);
    } finally {
      await s.close();
    }
  });

  it('the scheduler queries use their indexes', async () => {
    const s = await openMigrated(':memory:');
    try {
      const plan = (sql: string) => (s.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all() as Array<{ detail: string }>).map((p) => p.detail).join('\n');
      // The claim statement itself (placement and the running-attempt check included) walks the queue index in order.
      const claim = (s.db.prepare(`EXPLAIN QUERY PLAN ${CLAIM_SQL}`).all({ labels: '{"os":"linux"}', max: 1 }) as Array<{ detail: string }>).map((p) => p.detail).join('\n');
      assert.match(claim, /tasks_queue/);
      assert.doesNotMatch(claim, /TEMP B-TREE/);
      const due = (s.db.prepare(`EXPLAIN QUERY PLAN ${DUE_SQL.due('retrying')}`).all(5, 100) as Array<{ detail: string }>).map((p) => p.detail).join('\n');
      assert.match(due, /tasks_due/);
      assert.doesNotMatch(due, /TEMP B-TREE/);
      const leases = plan("SELECT * FROM attempts WHERE state = 'running' AND lease_expires_at < 5 ORDER BY lease_expires_at, id LIMIT 100");
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
      assert.equal((await s.createTask(id, 'alice', big, 'user:alice', T0)).task.id, id);
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
      assert.equal((await s.createTask(newTaskId(T0), 'alice', makeSpec(), 'user:alice', T0)).task.state, 'waiting');
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
