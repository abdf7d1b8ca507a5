/**
 * The PostgreSQL store: the shared store contract and signal contract, each
 * test on a fresh database (a clone of a migrated template, dropped after the
 * test), plus what only a shared database has: concurrent migrations, claims
 * and ends from several pools, LISTEN/NOTIFY between instances, and failures
 * of the connection (refused, hanging, terminated).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { after, describe, it } from 'node:test';
import pg from 'pg';
import { UnavailableError } from '../../src/core/errors.js';
import { newTaskId } from '../../src/core/ids.js';
import { LATEST_SCHEMA_VERSION, MIGRATIONS } from '../../src/store/postgres/migrations.js';
import { isUniqueViolation, mapPgError } from '../../src/store/postgres/pg-errors.js';
import { openPostgresStore, type PostgresStore, type PostgresStoreOptions } from '../../src/store/postgres/postgres-store.js';
import type { Claim } from '../../src/store/store.js';
import { createTestDatabase, dropAllTestDatabases, listTestDatabases, PG_SKIP_REASON, pgTestUrl, requirePostgres, type TestDatabase } from '../support/postgres.js';
import { makeSpec, runStoreContract } from './contract.js';
import { Recorder, runSignalContract } from './contract-signals.js';

const PG = await requirePostgres();
const T0 = 1_700_000_000_000;
const LEASE = 15_000;

after(async () => {
  if (!PG) return;
  await dropAllTestDatabases();
  const mine = (await listTestDatabases()).filter((n) => n.startsWith(`drover_test_${process.pid}_`));
  assert.deepEqual(mine, [], 'test databases left behind');
});

/** A store on a fresh migrated database; closing it drops the database. */
async function openFresh(opts: PostgresStoreOptions = {}): Promise<PostgresStore> {
  const db = await createTestDatabase();
  const store = openPostgresStore(db.url, { poolSize: 4, ...opts });
  const close = store.close.bind(store);
  store.close = async () => {
    try {
      await close();
    } finally {
      await db.drop();
    }
  };
  return store;
}

/** Opens `n` stores (separate pools, as separate servers would have) on one database. */
function openMany(db: TestDatabase, n: number, opts: PostgresStoreOptions = {}): PostgresStore[] {
  return Array.from({ length: n }, (_, i) => openPostgresStore(db.url, { applicationName: `drover-test-${i}`, ...opts }));
}

async function withDb<T>(fn: (db: TestDatabase) => Promise<T>, migrated = true): Promise<T> {
  const db = await createTestDatabase({ migrated });
  try {
    return await fn(db);
  } finally {
    await db.drop();
  }
}

async function sql<R extends pg.QueryResultRow = pg.QueryResultRow>(url: string, text: string, params: unknown[] = []): Promise<R[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query<R>(text, params)).rows;
  } finally {
    await c.end();
  }
}


describe('PostgreSQL store', { skip: PG ? false : PG_SKIP_REASON }, () => {
  runStoreContract('postgres', () => openFresh());
  runSignalContract('postgres', () => openFresh());

  describe('PostgresStore specifics', () => {
    it('migrations from 4 stores starting at once are applied once', async () => {
      await withDb(async (db) => {
        const stores = openMany(db, 4, { poolSize: 2 });
        try {
          await Promise.all(stores.map((s) => s.migrate()));
          const rows = await sql<{ version: number; name: string }>(db.url, 'SELECT version, name FROM schema_migrations ORDER BY version');
          assert.deepEqual(
            rows,
            MIGRATIONS.map((m) => ({ version: m.version, name: m.name })),
          );
          // Every store works on the one schema.
          const t = await stores[0]!.createTask(newTaskId(T0), 'alice', makeSpec(), 'user:alice', T0);
          for (const s of stores) assert.equal((await s.getTask(t.id))?.id, t.id);
          await Promise.all(stores.map((s) => s.migrate()));
          assert.equal((await sql(db.url, 'SELECT * FROM schema_migrations')).length, MIGRATIONS.length);
        } finally {
          await Promise.all(stores.map((s) => s.close()));
        }
      }, false);
    });

    it('refuses a database whose schema is newer than the code, and changes nothing', async () => {
      await withDb(async (db) => {
        await sql(db.url, 'INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [LATEST_SCHEMA_VERSION + 1, 'from the future', T0]);
        const [s] = openMany(db, 1);
        try {
          await assert.rejects(s!.migrate(), (e: unknown) => {
            assert.ok(e instanceof Error);
            assert.equal(
              e.message.split(' (the database')[0],
              `database schema version ${LATEST_SCHEMA_VERSION + 1} is newer than this Drover understands (${LATEST_SCHEMA_VERSION}); upgrade Drover`,
            );
            return true;
          });
          const [max] = await sql<{ v: number }>(db.url, 'SELECT max(version) AS v FROM schema_migrations');
          assert.equal(max?.v, LATEST_SCHEMA_VERSION + 1);
        } finally {
          await s!.close();
        }
      });
    });

    it('4 stores x 50 concurrent claims over 100 tasks: each task claimed exactly once', async () => {
      await withDb(async (db) => {
        // 4 x 5 connections: every store has 50 claims in flight on its own pool (max_connections is shared with other suites).
        const stores = openMany(db, 4, { poolSize: 5 });
        try {
          const ids = new Set<string>();
          for (let i = 0; i < 100; i++) ids.add((await stores[i % 4]!.createTask(newTaskId(T0 + i), 'alice', makeSpec({ priority: i % 5 }), 'user:alice', T0 + i)).id);
          const results = await Promise.all(stores.flatMap((s, si) => Array.from({ length: 50 }, (_, i) => s.claimNext(`w${si}-${i % 5}`, T0 + 1000, LEASE))));
          const claims = results.filter((c): c is Claim => c !== null);
          assert.equal(claims.length, 100);
          assert.deepEqual(new Set(claims.map((c) => c.task.id)), ids);
          assert.equal(new Set(claims.map((c) => c.attempt.id)).size, 100);
          const rows = await sql<{ task_id: string; n: number }>(db.url, 'SELECT task_id, count(*)::int AS n FROM attempts GROUP BY task_id');
          assert.equal(rows.length, 100);
          assert.ok(rows.every((r) => r.n === 1));
          const claimed = await sql<{ n: number }>(db.url, "SELECT count(*)::int AS n FROM task_events WHERE reason = 'claimed'");
          assert.equal(claimed[0]?.n, 100);
          const states = await sql<{ state: string; n: number }>(db.url, 'SELECT state, count(*)::int AS n FROM tasks GROUP BY state');
          assert.deepEqual(states, [{ state: 'running', n: 100 }]);

          // Every attempt is ended by two servers at once: exactly one end is applied.
          const ends = await Promise.all(
            claims.flatMap((c, i) =>
              [stores[i % 4]!, stores[(i + 1) % 4]!].map((s, k) =>
                s.endAttempt(c.attempt.id, c.attempt.id, { outcome: k === 0 ? 'succeeded' : 'failed', exitCode: k, signal: null, error: null, durationMs: 1 }, `worker:${k}`, T0 + 2000),
              ),
            ),
          );
          for (let i = 0; i < claims.length; i++) assert.equal([ends[2 * i], ends[2 * i + 1]].filter((r) => r !== null).length, 1, `attempt ${claims[i]!.attempt.id}`);
          const ended = await sql<{ n: number }>(db.url, "SELECT count(*)::int AS n FROM task_events WHERE reason IN ('attempt_succeeded', 'attempt_failed')");
          assert.equal(ended[0]?.n, 100);
        } finally {
          await Promise.all(stores.map((s) => s.close()));
        }
      });
    });

    it('leadership across stores: one of several servers wins', async () => {
      await withDb(async (db) => {
        const stores = openMany(db, 4, { poolSize: 2 });
        try {
          const wins = await Promise.all(stores.map((s, i) => s.acquireLeadership('lease-sweeper', `server-${i}`, T0, 10_000)));
          assert.equal(wins.filter(Boolean).length, 1);
          const leader = wins.indexOf(true);
          assert.equal(await stores[(leader + 1) % 4]!.acquireLeadership('lease-sweeper', `server-${(leader + 1) % 4}`, T0 + 10_001, 10_000), true);
        } finally {
          await Promise.all(stores.map((s) => s.close()));
        }
      });
    });

    it("a signal from one store's write reaches a listener on another store", async () => {
      await withDb(async (db) => {
        const [a, b] = openMany(db, 2, { poolSize: 2 });
        try {
          const rec = new Recorder(b!);
          await b!.whenListening();
          const t = await a!.createTask(newTaskId(T0), 'alice', makeSpec(), 'user:alice', T0);
          await rec.waitFor((s) => s.kind === 'wake', 'wake');
          await rec.waitFor((s) => s.kind === 'task' && s.taskId === t.id, 'task');
          const c = (await a!.claimNext('w1', T0 + 1, LEASE))!;
          await a!.cancelTask(t.id, 'user:alice', T0 + 2);
          await rec.waitFor((s) => s.kind === 'cancel' && s.taskId === t.id && s.attemptId === c.attempt.id, 'cancel');
        } finally {
          await a!.close();
          await b!.close();
        }
      });
    });

    it('a closed port gives UnavailableError at once, not a hang', async () => {
      const port = await new Promise<number>((resolve) => {
        const srv = net.createServer().listen(0, '127.0.0.1', () => {
          const p = (srv.address() as net.AddressInfo).port;
          srv.close(() => resolve(p));
        });
      });
      const store = openPostgresStore(`postgres://postgres@127.0.0.1:${port}/test`);
      try {
        const started = Date.now();
        const unavailable = (e: unknown) => {
          assert.ok(e instanceof UnavailableError, String(e));
          assert.equal(e.httpStatus, 503);
          assert.equal(e.retryable, true);
          assert.match(e.message, /^database unavailable: .*ECONNREFUSED/);
          return true;
        };
        await assert.rejects(store.getTask(newTaskId(T0)), unavailable);
        await assert.rejects(store.createTask(newTaskId(T0), 'alice', makeSpec(), 'user:alice', T0), unavailable);
        await assert.rejects(store.migrate(), unavailable);
        assert.ok(Date.now() - started < 2000, `took ${Date.now() - started} ms`);
      } finally {
        await store.close();
      }
    });

    it('a server that accepts but never answers gives UnavailableError after the connect timeout', async () => {
      const sockets = new Set<net.Socket>();
      const srv = net.createServer((s) => {
        sockets.add(s);
        s.on('error', () => {});
      });
      await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
      const port = (srv.address() as net.AddressInfo).port;
      const store = openPostgresStore(`postgres://postgres@127.0.0.1:${port}/test`, { connectTimeoutMs: 300 });
      try {
        const started = Date.now();
        await assert.rejects(store.getTask(newTaskId(T0)), (e: unknown) => {
          assert.ok(e instanceof UnavailableError, String(e));
          assert.match(e.message, /^database unavailable: .*timeout/);
          return true;
        });
        const took = Date.now() - started;
        assert.ok(took >= 250 && took < 3000, `took ${took} ms`);
      } finally {
        await store.close();
        for (const s of sockets) s.destroy();
        await new Promise<void>((resolve) => srv.close(() => resolve()));
      }
    });

    it('survives the termination of all its connections (pool and LISTEN): calls succeed and signals resume', async () => {
      await withDb(async (db) => {
        const app = `drover-test-kill-${randomBytes(4).toString('hex')}`;
        const errors: Array<{ where: string; err: unknown }> = [];
        const store = openPostgresStore(db.url, { poolSize: 4, applicationName: app, onError: (err, where) => errors.push({ where, err }) });
        try {
          const rec = new Recorder(store);
          await store.whenListening();
          const t1 = await store.createTask(newTaskId(T0), 'alice', makeSpec(), 'user:alice', T0);
          await rec.waitFor((s) => s.kind === 'task' && s.taskId === t1.id, 'task before the kill');
          // Open every pooled connection.
          await Promise.all(Array.from({ length: 8 }, () => store.listTasks({ limit: 10 })));
          const pidsOf = async () =>
            (await sql<{ pid: number }>(pgTestUrl(), 'SELECT pid FROM pg_stat_activity WHERE application_name = $1', [app])).map((r) => r.pid);
          const before = await pidsOf();
          assert.ok(before.length >= 2, `connections: ${before.length}`);
          const killed = await sql<{ ok: boolean }>(pgTestUrl(), 'SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = $1', [app]);
          assert.ok(killed.length === before.length && killed.every((k) => k.ok));
          const mark = rec.seen.length;

          // The very next calls work: dead pooled clients are discarded and the work rerun on new ones.
          assert.equal((await store.getTask(t1.id))?.id, t1.id);
          const c = await store.claimNext('w1', T0 + 1, LEASE);
          assert.equal(c?.task.id, t1.id);
          assert.equal((await Promise.all(Array.from({ length: 8 }, () => store.listTasks({ limit: 10 })))).length, 8);

          // The LISTEN connection comes back and says so with a wake; then signals flow again.
          await rec.waitFor((s) => s.kind === 'wake', 'wake after the LISTEN reconnect', mark);
          await store.whenListening();
          const t2 = await store.createTask(newTaskId(T0 + 5), 'alice', makeSpec(), 'user:alice', T0 + 5);
          await rec.waitFor((s) => s.kind === 'task' && s.taskId === t2.id, 'task after the reconnect');
          const after = await pidsOf();
          assert.ok(after.length >= 2 && after.every((p) => !before.includes(p)), `new connections ${after} vs ${before}`);
          assert.ok(errors.some((e) => e.where === 'listen'), 'the LISTEN connection failure was reported');
        } finally {
          await store.close();
        }
      });
    });

    it('connections that died silently (the pool still holds them) are replaced and the work rerun', async () => {
      await withDb(async (db) => {
        const proxy = await startProxy(new URL(db.url));
        const url = new URL(db.url);
        url.host = `127.0.0.1:${proxy.port}`;
        const store = openPostgresStore(url.toString(), { poolSize: 3, listenPingMs: 100 });
        try {
          const rec = new Recorder(store);
          await store.whenListening();
          const t = await store.createTask(newTaskId(T0), 'alice', makeSpec(), 'user:alice', T0);
          await rec.waitFor((s) => s.kind === 'task' && s.taskId === t.id, 'task before the break');
          await Promise.all(Array.from({ length: 6 }, () => store.getTask(t.id)));
          const opened = proxy.connections();
          assert.ok(opened >= 3, `connections: ${opened}`);

          // Every open connection now answers its next request with a reset, as a
          // restarted server whose FIN never arrived would: the clients do not know yet.
          proxy.breakAll();
          const mark = rec.seen.length;
          assert.equal((await store.getTask(t.id))?.id, t.id); // a read on a dead client: rerun
          const c = await store.claimNext('w1', T0 + 1, LEASE); // a write whose BEGIN failed: rerun
          assert.equal(c?.task.id, t.id);
          assert.equal(await store.appendLogs(c.attempt.id, c.attempt.id, [{ seq: 0, stream: 'stdout', data: Buffer.from('x') }], T0 + 2), true);
          assert.ok(proxy.connections() > opened, 'new connections were opened');
          assert.equal((await store.listEvents(t.id)).filter((e) => e.reason === 'claimed').length, 1);

          // The ping finds the LISTEN connection dead; it reconnects and signals resume.
          await rec.waitFor((s) => s.kind === 'wake', 'wake after the LISTEN reconnect', mark);
          await store.whenListening();
          const t2 = await store.createTask(newTaskId(T0 + 3), 'alice', makeSpec(), 'user:alice', T0 + 3);
          await rec.waitFor((s) => s.kind === 'task' && s.taskId === t2.id, 'task after the reconnect');
        } finally {
          await store.close();
          await proxy.close();
        }
      });
    });

    it('the queue, due and name-prefix queries can use their indexes', async () => {
      await withDb(async (db) => {
        const c = new pg.Client({ connectionString: db.url });
        await c.connect();
        try {
          await c.query('SET enable_seqscan = off');
          const plan = async (q: string) => (await c.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${q}`)).rows.map((r) => r['QUERY PLAN']).join('\n');
          const claim = await plan("SELECT id FROM tasks WHERE state = 'waiting' ORDER BY priority DESC, id ASC LIMIT 1 FOR NO KEY UPDATE SKIP LOCKED");
          assert.match(claim, /tasks_queue/);
          assert.doesNotMatch(claim, /Sort/);
          const due = await plan("SELECT id FROM tasks WHERE state = 'retrying' AND run_after <= 5 ORDER BY run_after, id");
          assert.match(due, /tasks_due/);
          assert.doesNotMatch(due, /Sort/);
          assert.match(await plan("SELECT * FROM tasks WHERE name LIKE 'build-%' ESCAPE '\\'"), /tasks_name/);
          assert.match(await plan("SELECT * FROM attempts WHERE state = 'running' AND lease_expires_at < 5 ORDER BY lease_expires_at, id"), /attempts_running_lease/);
          assert.doesNotMatch(await plan('SELECT * FROM tasks WHERE owner = $$a$$ ORDER BY id DESC LIMIT 51'), /Sort/);
        } finally {
          await c.end();
        }
      });
    });

    it('mapPgError maps environment failures to UnavailableError and passes the rest through', () => {
      for (const code of ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', '57P01', '57P03', '08006', '08001', '53100', '53300']) {
        const e = Object.assign(new Error('boom'), { code });
        const mapped = mapPgError(e);
        assert.ok(mapped instanceof UnavailableError, code);
        assert.match(mapped.message, /^database unavailable: /);
        assert.match(mapped.message, new RegExp(code));
        assert.equal((mapped as { cause?: unknown }).cause, e);
      }
      for (const msg of ['Connection terminated unexpectedly', 'timeout exceeded when trying to connect', 'Connection terminated due to connection timeout']) {
        assert.ok(mapPgError(new Error(msg)) instanceof UnavailableError, msg);
      }
      const unique = Object.assign(new Error('duplicate key'), { code: '23505' });
      assert.equal(mapPgError(unique), unique);
      assert.equal(isUniqueViolation(unique), true);
      for (const e of [Object.assign(new Error('syntax'), { code: '42601' }), new Error('plain'), 'text', null]) assert.equal(mapPgError(e), e);
    });
  });
});

/**
 * A TCP proxy to PostgreSQL whose open connections can be broken silently:
 * after breakAll(), the upstream side is closed and each client's next write
 * is answered with a reset, so the client learns only when it next uses it.
 */
async function startProxy(target: URL): Promise<{ port: number; connections(): number; breakAll(): void; close(): Promise<void> }> {
  const pairs = new Set<{ down: net.Socket; up: net.Socket }>();
  let count = 0;
  const srv = net.createServer((down) => {
    count++;
    const up = net.connect(Number(target.port || 5432), target.hostname);
    const pair = { down, up };
    pairs.add(pair);
    down.on('error', () => {});
    up.on('error', () => {});
    down.pipe(up);
    up.pipe(down);
    const drop = () => {
      pairs.delete(pair);
      down.destroy();
      up.destroy();
    };
    down.on('close', drop);
    up.on('close', drop);
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  return {
    port: (srv.address() as net.AddressInfo).port,
    connections: () => count,
    breakAll() {
      for (const pair of [...pairs]) {
        pairs.delete(pair);
        const { down, up } = pair;
        down.unpipe(up);
        up.unpipe(down);
        up.removeAllListeners('close');
        down.removeAllListeners('close');
        up.destroy();
        down.on('data', () => down.resetAndDestroy());
        down.resume(); // unpipe left it paused
      }
    },
    async close() {
      for (const { down, up } of pairs) {
        down.destroy();
        up.destroy();
      }
      await new Promise<void>((resolve) => srv.close(() => resolve()));
    },
  };
}
