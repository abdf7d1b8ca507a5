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
import { ConflictError, CursorExpiredError, InvalidInputError, UnavailableError } from '../../src/core/errors.js';
import { newTaskId } from '../../src/core/ids.js';
import { LATEST_SCHEMA_VERSION, MIGRATIONS } from '../../src/store/postgres/migrations.js';
import { isUniqueViolation, mapPgError } from '../../src/store/postgres/pg-errors.js';
import { DB_NOW_MS } from '../../src/store/postgres/sql.js';
import { openPostgresStore, type PostgresStore, type PostgresStoreOptions } from '../../src/store/postgres/postgres-store.js';
import type { Claim, Store } from '../../src/store/store.js';
import { assertNoDanglingRows, danglingRows } from '../support/pg-integrity.js';
import { createTestDatabase, dropAllTestDatabases, listTestDatabases, PG_SKIP_REASON, pgTestUrl, requirePostgres, type TestDatabase } from '../support/postgres.js';
import { makeSpec, runStoreContract } from './contract.js';
import { Recorder, runSignalContract } from './contract-signals.js';

const PG = await requirePostgres();
const T0 = 1_700_000_000_000;
const LEASE = 15_000;
const W1 = { id: 'w1', labels: {} };
/** A lease that ended before it started: expired at once on the database's clock. */
const EXPIRED = -1_000;

after(async () => {
  if (!PG) return;
  await dropAllTestDatabases();
  const mine = (await listTestDatabases()).filter((n) => n.startsWith(`drover_test_${process.pid}_`));
  assert.deepEqual(mine, [], 'test databases left behind');
});

/** The database URL of each store openFresh made (for ContractHooks.sibling). */
const urls = new WeakMap<Store, string>();

/**
 * A store on a fresh migrated database; closing it checks the references the
 * schema does not enforce (pg-integrity.ts: migration 15 dropped their foreign
 * keys), then drops the database. So every test that opens its store here,
 * the whole contract among them, fails if its writes left an attempt or an
 * event without its task, or a task's current attempt not its own.
 */
async function openFresh(opts: PostgresStoreOptions = {}): Promise<PostgresStore> {
  const db = await createTestDatabase();
  const store = openPostgresStore(db.url, { poolSize: 4, ...opts });
  urls.set(store, db.url);
  const close = store.close.bind(store);
  store.close = async () => {
    try {
      await close();
      await assertNoDanglingRows(db.url);
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


/**
 * Resolves once every transaction that had an xid when it was called has
 * finished (the snapshot's xmin passed the xmax seen at the call): the feed
 * then shows every change committed before the call. Other test processes
 * share the cluster and hold the horizon for as long as their transactions
 * run, hence the poll (with a deadline). The deadline is generous: in one CI
 * run a single INSERT of query-plans.test.ts's seed data, in another database
 * of the cluster, was still running after 90 s on the loaded machine.
 */
const HORIZON_DEADLINE_MS = 240_000;

async function feedSettled(store: Store): Promise<void> {
  const pool = (store as PostgresStore).pool;
  const { x } = (await pool.query<{ x: string }>('SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS x')).rows[0]!;
  const deadline = Date.now() + HORIZON_DEADLINE_MS;
  while (!(await pool.query<{ ok: boolean }>('SELECT pg_snapshot_xmin(pg_current_snapshot()) >= $1::xid8 AS ok', [x])).rows[0]!.ok) {
    if (Date.now() > deadline) {
      const { rows } = await pool.query<{ who: string }>(
        `SELECT coalesce(application_name, '') || ' ' || datname || ' ' || state || ' for ' || (now() - xact_start)::text || ': ' || left(query, 200) AS who
           FROM pg_stat_activity WHERE backend_xid IS NOT NULL ORDER BY xact_start LIMIT 1`,
      );
      throw new Error(`the feed horizon did not pass xid ${x} within ${HORIZON_DEADLINE_MS / 1000} s; oldest writing transaction: ${rows[0]?.who ?? 'none'}`);
    }
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('PostgreSQL store', { skip: PG ? false : PG_SKIP_REASON }, () => {
  runStoreContract('postgres', () => openFresh(), {
    settled: feedSettled,
    // Another server's pool on the same database (closed by the test; the database is dropped with the first).
    sibling: async (store) => {
      const other = openPostgresStore(urls.get(store)!, { poolSize: 4, applicationName: 'drover-test-sibling' });
      await other.migrate();
      return other;
    },
  });
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
          const { task: t } = await stores[0]!.createTask(newTaskId(T0), 'alice', makeSpec(), 'user:alice', T0);
          for (const s of stores) assert.equal((await s.getTask(t.id))?.id, t.id);
          await Promise.all(stores.map((s) => s.migrate()));
          assert.equal((await sql(db.url, 'SELECT * FROM schema_migrations')).length, MIGRATIONS.length);
        } finally {
          await Promise.all(stores.map((s) => s.close()));
        }
      }, false);
    });

    it('has no foreign keys from attempts and events to tasks or from a task to its attempt (migration 15); the integrity check finds each kind of dangling row', async () => {
      await withDb(async (db) => {
        const keys = await sql<{ conname: string }>(db.url, "SELECT conname FROM pg_constraint WHERE contype = 'f' AND conrelid IN ('tasks'::regclass, 'attempts'::regclass, 'task_events'::regclass, 'log_chunks'::regclass) ORDER BY conname");
        assert.deepEqual(keys.map((k) => k.conname), ['log_chunks_task_id_fkey']);
        const store = openPostgresStore(db.url, { poolSize: 2 });
        try {
          const a = (await store.createTask(newTaskId(T0), 'alice', makeSpec(), 'user:alice', T0)).task;
          const b = (await store.createTask(newTaskId(T0 + 1), 'alice', makeSpec(), 'user:alice', T0 + 1)).task;
          const claimA = await store.claimNext(W1, T0 + 2, LEASE);
          const claimB = await store.claimNext(W1, T0 + 3, LEASE);
          assert.deepEqual([claimA?.task.id, claimB?.task.id], [a.id, b.id]);
          assert.deepEqual(await danglingRows(db.url), { attempts: 0, events: 0, currentAttempts: 0 });
          await assertNoDanglingRows(db.url);

          await sql(db.url, "INSERT INTO task_events (task_id, from_state, to_state, reason, actor, at) VALUES ('no-such-task', 'waiting', 'running', 'claimed', 'test', 0)");
          assert.deepEqual(await danglingRows(db.url), { attempts: 0, events: 1, currentAttempts: 0 });
          await sql(db.url, "INSERT INTO attempts (task_id, number, worker_id, fencing_token, state, started_at, lease_expires_at) VALUES ('no-such-task', 1, 'w1', $1, 'running', 0, 0)", [randomBytes(16).toString('hex')]);
          assert.deepEqual(await danglingRows(db.url), { attempts: 1, events: 1, currentAttempts: 0 });
          // A current attempt that exists but is another task's: the dropped key would not have caught it; the check does.
          await sql(db.url, 'UPDATE tasks SET current_attempt_id = $1 WHERE id = $2', [claimB!.attempt.id, a.id]);
          assert.deepEqual(await danglingRows(db.url), { attempts: 1, events: 1, currentAttempts: 1 });
          await assert.rejects(assertNoDanglingRows(db.url), /dangling references left in the database: \{"attempts":1,"events":1,"currentAttempts":1\}/);
        } finally {
          await store.close();
        }
      });
    });

    it('plans named reads per execution (no generic plan for the task list) and lets named writes keep a generic plan, on one connection', async () => {
      const store = await openFresh({ poolSize: 1 });
      /** On the store's one connection, while nothing else holds it. */
      const onConnection = async <T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> => {
        const c = await store.pool.connect();
        try {
          return await fn(c);
        } finally {
          c.release();
        }
      };
      const mode = () => onConnection(async (c) => (await c.query<{ plan_cache_mode: string }>('SHOW plan_cache_mode')).rows[0]!.plan_cache_mode);
      const statements = () =>
        onConnection(async (c) => (await c.query<{ statement: string; generic_plans: number; custom_plans: number }>('SELECT statement, generic_plans::int, custom_plans::int FROM pg_prepared_statements')).rows);
      try {
        await store.migrate();
        assert.equal(await mode(), 'auto', 'after a write');
        await store.listTaskSummaries({ state: 'failed', limit: 10 });
        assert.equal(await mode(), 'force_custom_plan', 'after a named read');
        // Interleaved, past the 5 executions after which PostgreSQL may switch a statement to its generic plan.
        const ids: string[] = [];
        for (let i = 0; i < 8; i++) {
          ids.unshift((await store.createTask(newTaskId(T0 + i), 'alice', makeSpec(), 'user:alice', T0 + i)).task.id);
          assert.deepEqual((await store.listTaskSummaries({ state: 'waiting', limit: 10 })).tasks.map((x) => x.id), ids);
          assert.deepEqual((await store.listTaskSummaries({ state: 'failed', limit: 10 })).tasks, []);
          assert.equal((await store.countTasksByState('alice')).waiting, i + 1);
        }
        const rows = await statements();
        const reads = rows.filter((r) => /FROM tasks/i.test(r.statement) && /^\s*(WITH|SELECT)/i.test(r.statement));
        assert.ok(reads.length > 0, 'the list and counts ran as named statements');
        for (const r of reads) assert.equal(r.generic_plans, 0, `a read was given a generic plan: ${r.statement.slice(0, 120)}`);
        assert.ok(
          rows.some((r) => /^\s*(WITH|INSERT|UPDATE)/i.test(r.statement) && !/^\s*SELECT/i.test(r.statement) && r.generic_plans > 0),
          `some write kept its generic plan: ${JSON.stringify(rows.map((r) => [r.statement.slice(0, 60), r.generic_plans, r.custom_plans]))}`,
        );
      } finally {
        await store.close();
      }
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
          for (let i = 0; i < 100; i++) ids.add((await stores[i % 4]!.createTask(newTaskId(T0 + i), 'alice', makeSpec({ priority: i % 5 }), 'user:alice', T0 + i)).task.id);
          const results = await Promise.all(stores.flatMap((s, si) => Array.from({ length: 50 }, (_, i) => s.claimNext({ id: `w${si}-${i % 5}`, labels: {} }, T0 + 1000, LEASE))));
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
                s.endAttempt(
                  c.attempt.id,
                  c.attempt.fencingToken,
                  { outcome: k === 0 ? 'succeeded' : 'failed', exitCode: k, signal: null, error: null, durationMs: 1 },
                  `worker:${c.attempt.workerId}`,
                  T0 + 2000,
                  { workerId: c.attempt.workerId },
                ),
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

    it('leadership across stores: one of several servers wins; another takes over only once the lease expired', async () => {
      await withDb(async (db) => {
        const stores = openMany(db, 4, { poolSize: 2 });
        try {
          const wins = await Promise.all(stores.map((s, i) => s.acquireLeadership('lease-sweeper', `server-${i}`, T0, 10_000)));
          assert.equal(wins.filter(Boolean).length, 1);
          const leader = wins.indexOf(true);
          const next = (leader + 1) % 4;
          // A later `now` does not matter (the database's clock does): the lease is still live.
          assert.equal(await stores[next]!.acquireLeadership('lease-sweeper', `server-${next}`, T0 + 10_001, 10_000), false);
          // The leader's last renewal ended before it started: expired on the database's clock.
          assert.equal(await stores[leader]!.acquireLeadership('lease-sweeper', `server-${leader}`, T0, EXPIRED), true);
          assert.equal(await stores[next]!.acquireLeadership('lease-sweeper', `server-${next}`, T0, 10_000), true);
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
          const { task: t } = await a!.createTask(newTaskId(T0), 'alice', makeSpec(), 'user:alice', T0);
          await rec.waitFor((s) => s.kind === 'wake', 'wake');
          await rec.waitFor((s) => s.kind === 'task' && s.taskId === t.id, 'task');
          const c = (await a!.claimNext(W1, T0 + 1, LEASE))!;
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
          const { task: t1 } = await store.createTask(newTaskId(T0), 'alice', makeSpec(), 'user:alice', T0);
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
          const c = await store.claimNext(W1, T0 + 1, LEASE);
          assert.equal(c?.task.id, t1.id);
          assert.equal((await Promise.all(Array.from({ length: 8 }, () => store.listTasks({ limit: 10 })))).length, 8);

          // The LISTEN connection comes back and says so with a wake; then signals flow again.
          await rec.waitFor((s) => s.kind === 'wake', 'wake after the LISTEN reconnect', mark);
          await store.whenListening();
          const { task: t2 } = await store.createTask(newTaskId(T0 + 5), 'alice', makeSpec(), 'user:alice', T0 + 5);
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
        // A hint in flight on the LISTEN connection at the break gets no answer, not a reset: it
        // ends with the client's timeout (shortened here), which drops the connection at once.
        const store = openPostgresStore(url.toString(), { poolSize: 3, listenPingMs: 100, listenTimeoutMs: 1_000 });
        try {
          const rec = new Recorder(store);
          await store.whenListening();
          const { task: t } = await store.createTask(newTaskId(T0), 'alice', makeSpec(), 'user:alice', T0);
          await rec.waitFor((s) => s.kind === 'task' && s.taskId === t.id, 'task before the break');
          await Promise.all(Array.from({ length: 6 }, () => store.getTask(t.id)));
          const opened = proxy.connections();
          assert.ok(opened >= 3, `connections: ${opened}`);

          // Every open connection now answers its next request with a reset, as a
          // restarted server whose FIN never arrived would: the clients do not know yet.
          proxy.breakAll();
          const mark = rec.seen.length;
          assert.equal((await store.getTask(t.id))?.id, t.id); // a read on a dead client: rerun
          const c = await store.claimNext(W1, T0 + 1, LEASE); // a write whose BEGIN failed: rerun
          assert.equal(c?.task.id, t.id);
          assert.equal(await store.appendLogs(c.attempt.id, c.attempt.fencingToken, 'w1', [{ seq: 0, stream: 'stdout', data: Buffer.from('x') }], T0 + 2), true);
          assert.ok(proxy.connections() > opened, 'new connections were opened');
          assert.equal((await store.listEvents(t.id)).filter((e) => e.reason === 'claimed').length, 1);

          // The ping finds the LISTEN connection dead; it reconnects and signals resume.
          await rec.waitFor((s) => s.kind === 'wake', 'wake after the LISTEN reconnect', mark);
          await store.whenListening();
          const { task: t2 } = await store.createTask(newTaskId(T0 + 3), 'alice', makeSpec(), 'user:alice', T0 + 3);
          await rec.waitFor((s) => s.kind === 'task' && s.taskId === t2.id, 'task after the reconnect');
        } finally {
          await store.close();
          await proxy.close();
        }
      });
    });

    for (const via of ['ping', 'presence'] as const) {
      it(`a LISTEN connection that stops answering is replaced once a query on it times out (${via})`, async () => {
        await withDb(async (db) => {
          const proxy = await startProxy(new URL(db.url));
          const url = new URL(db.url);
          url.host = `127.0.0.1:${proxy.port}`;
          const errors: unknown[] = [];
          // Only the query under test runs often enough: the other waits a minute.
          const store = openPostgresStore(url.toString(), {
            poolSize: 2,
            listenTimeoutMs: 300,
            listenPingMs: via === 'ping' ? 100 : 60_000,
            presenceMs: via === 'presence' ? 100 : 60_000,
            onError: (err, where) => where === 'listen' && errors.push(err),
          });
          try {
            const rec = new Recorder(store);
            await store.whenListening();
            const mark = rec.seen.length;
            const started = Date.now();
            proxy.stallAll();
            await rec.waitFor((s) => s.kind === 'wake', 'wake after the LISTEN reconnect', mark);
            const took = Date.now() - started;
            // A query 100 ms after the stall, its 300 ms timeout, then a 100 ms backoff: well under the other
            // query's minute (and under the two timeouts in a row that a queued query would add).
            assert.ok(took < 5_000, `replaced after ${took} ms`);
            assert.ok(errors.some((e) => /Query read timeout/.test(String(e))), `errors: ${errors.map(String)}`);
            await store.whenListening();
            const { task } = await store.createTask(newTaskId(T0), 'alice', makeSpec(), 'user:alice', T0);
            await rec.waitFor((s) => s.kind === 'task' && s.taskId === task.id, 'task after the reconnect');
          } finally {
            await store.close();
            await proxy.close();
          }
        });
      });
    }

    it('the claim reads the head of its queue index with 2,000 waiting tasks and no statistics', async () => {
      await withDb(async (db) => {
        const c = new pg.Client({ connectionString: db.url });
        await c.connect();
        try {
          const plan = async (q: string) => (await c.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${q}`)).rows.map((r) => r['QUERY PLAN']).join('\n');
          // The claim's two branches (attempts.ts), with 2,000 waiting tasks and no ANALYZE yet (a
          // fresh database): tasks that run anywhere come from the head of their partial index (no
          // sort of the queue); a worker with labels also reads the tasks with requirements only.
          const store = openPostgresStore(db.url);
          await store.migrate();
          await store.createTask(newTaskId(T0), 'alice', makeSpec(), 'user:alice', T0);
          await store.close();
          await c.query(`CREATE TEMP TABLE one AS SELECT * FROM tasks LIMIT 1`);
          await c.query(
            `INSERT INTO tasks SELECT (json_populate_record(one, json_build_object('id', one.id || g, 'requires', CASE WHEN g % 2 = 0 THEN '{}' ELSE '{"gpu":"yes"}' END))).*
             FROM one, generate_series(1, 2000) g`,
          );
          const free = await plan(`SELECT id, priority FROM tasks WHERE state = 'waiting' AND requires = '{}' ORDER BY priority DESC, id ASC LIMIT 1 FOR NO KEY UPDATE SKIP LOCKED`);
          assert.match(free, /Index Scan using tasks_queue_free/);
          assert.doesNotMatch(free, /Sort|Bitmap/);
          const placed = await plan(
            `SELECT id, priority FROM tasks WHERE true AND state = 'waiting' AND requires <> '{}' AND requires::jsonb <@ '{"gpu":"yes"}'::jsonb ORDER BY priority DESC, id ASC LIMIT 1 FOR NO KEY UPDATE SKIP LOCKED`,
          );
          // Only tasks with requirements are read (the containment test filters them; the planner may sort those).
          assert.match(placed, /tasks_queue_placed/);
          assert.doesNotMatch(placed, /tasks_queue_free|Seq Scan/);
        } finally {
          await c.end();
        }
      });
    });

    it('the queue, due and name-prefix queries can use their indexes', async () => {
      await withDb(async (db) => {
        const c = new pg.Client({ connectionString: db.url });
        await c.connect();
        try {
          const plan = async (q: string) => (await c.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${q}`)).rows.map((r) => r['QUERY PLAN']).join('\n');
          await c.query('SET enable_seqscan = off');
          const due = await plan("SELECT id FROM tasks WHERE state = 'retrying' AND run_after <= 5 ORDER BY run_after, id LIMIT 100");
          assert.match(due, /tasks_due/);
          assert.doesNotMatch(due, /Sort/);
          // A name prefix is a range (store/task-list.ts), read from (name, id); query-plans.test.ts has the list's own queries.
          assert.match(await plan("SELECT * FROM tasks WHERE name >= 'build-' AND name < 'build.'"), /tasks_name_id/);
          // The sweeper's query (attempts.ts): the database clock, read once, bounds the index range.
          const expired = await plan(`SELECT * FROM attempts WHERE state = 'running' AND lease_expires_at < ${DB_NOW_MS} ORDER BY lease_expires_at, id LIMIT 100`);
          assert.match(expired, /Index Cond: \(lease_expires_at < \$\d+\)/);
          assert.match(expired, /attempts_running_lease/);
          assert.doesNotMatch(expired, /Sort/);
          assert.match(await plan("SELECT * FROM tasks WHERE owner = 'a' AND idempotency_key = 'k'"), /tasks_owner_idempotency_key/);
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

  /**
   * Servers whose clocks disagree, and races between servers, on one
   * database. Each store is a separate pool, as a separate server has; the
   * racing calls are issued together, so they really run at once on
   * PostgreSQL.
   */
  describe('change feed: transactions that commit out of order', () => {
    /** Two pool clients' transactions, each changing one task row (the trigger writes its change). */
    async function withTwoClients(fn: (store: PostgresStore, a: pg.PoolClient, b: pg.PoolClient, t1: string, t2: string) => Promise<void>): Promise<void> {
      const store = await openFresh();
      const a = await store.pool.connect();
      const b = await store.pool.connect();
      try {
        const t1 = (await store.createTask(newTaskId(T0), 'alice', makeSpec({ name: 'one' }), 'user:alice', T0)).task.id;
        const t2 = (await store.createTask(newTaskId(T0 + 1), 'bob', makeSpec({ name: 'two' }), 'user:bob', T0 + 1)).task.id;
        await fn(store, a, b, t1, t2);
      } finally {
        await a.query('ROLLBACK').catch(() => {});
        await b.query('ROLLBACK').catch(() => {});
        a.release();
        b.release();
        await store.close();
      }
    }
    const touch = (c: pg.PoolClient, id: string, at: number) => c.query('UPDATE tasks SET updated_at = $2 WHERE id = $1', [id, at]);
    const refs = async (store: PostgresStore, after: string, owner?: string) => {
      const p = await store.readChanges(after, 100, owner);
      return { refs: p.changes.map((c) => [c.ref, c.at]), cursor: p.cursor };
    };

    it('the transaction with the smaller change id commits last: a reader does not skip it, nor read anything twice', async () => {
      await withTwoClients(async (store, a, b, t1, t2) => {
        await feedSettled(store);
        const start = await store.feedHead();
        await a.query('BEGIN');
        await touch(a, t1, T0 + 10); // the smaller change id, the smaller xid
        await b.query('BEGIN');
        await touch(b, t2, T0 + 20);
        await b.query('COMMIT');
        // b committed, but a (older) still runs: nothing after it may be shown yet.
        const during = await refs(store, start);
        assert.deepEqual(during.refs, []);
        assert.deepEqual((await refs(store, start, 'bob')).refs, [], 'the owner filter waits too');
        await a.query('COMMIT');
        await feedSettled(store);
        const after = await refs(store, during.cursor);
        assert.deepEqual(after.refs, [
          [t1, T0 + 10],
          [t2, T0 + 20],
        ]);
        assert.deepEqual((await refs(store, after.cursor)).refs, []);
        assert.deepEqual((await refs(store, during.cursor, 'bob')).refs, [[t2, T0 + 20]]);
      });
    });

    it('the older transaction writes its change after the newer one: ordered by transaction, shown once both are done', async () => {
      await withTwoClients(async (store, a, b, t1, t2) => {
        await feedSettled(store);
        const start = await store.feedHead();
        await a.query('BEGIN');
        await a.query('SELECT pg_current_xact_id()'); // a's xid first
        await b.query('BEGIN');
        await touch(b, t2, T0 + 20); // the smaller change id, the larger xid
        await touch(a, t1, T0 + 10);
        await b.query('COMMIT');
        const during = await refs(store, start);
        assert.deepEqual(during.refs, []);
        await a.query('COMMIT');
        await feedSettled(store);
        const after = await refs(store, during.cursor);
        assert.deepEqual(after.refs, [
          [t1, T0 + 10],
          [t2, T0 + 20],
        ]);
        // A rolled-back transaction's change never shows, and does not stop the feed.
        await a.query('BEGIN');
        await touch(a, t1, T0 + 30);
        await a.query('ROLLBACK');
        await touch(b, t2, T0 + 40);
        await feedSettled(store);
        assert.deepEqual((await refs(store, after.cursor)).refs, [[t2, T0 + 40]]);
      });
    });

    it('a cursor beyond every transaction of this cluster (another database’s) is expired', async () => {
      const store = await openFresh();
      try {
        await assert.rejects(store.readChanges('18446744073709551615.0', 10), CursorExpiredError);
        await assert.rejects(store.readChanges('18446744073709551616.0', 10), (e: unknown) => e instanceof InvalidInputError && e.field === 'cursor');
        assert.deepEqual((await store.readChanges('0.0', 10)).changes, []);
      } finally {
        await store.close();
      }
    });
  });

  describe('counters under concurrency', () => {
    it('two servers submitting, claiming and ending 200 tasks at once: counts and minute stats match a recount, no deadlock', async () => {
      await withDb(async (db) => {
        const stores = openMany(db, 2, { poolSize: 8 });
        try {
          const n = 200;
          const owners = ['alice', 'bob'];
          await Promise.all(
            Array.from({ length: n }, async (_, i) => {
              const s = stores[i % 2]!;
              await s.createTask(newTaskId(T0), owners[i % 2]!, makeSpec({ retry: { maxRetries: 0, baseDelayMs: 1000, factor: 2, maxDelayMs: 1000 } }), 'user:x', T0);
              const c = await s.claimNext({ id: `w${i % 2}`, labels: {} }, T0 + 1000, LEASE);
              if (c) {
                const outcome = i % 3 === 0 ? 'failed' : 'succeeded';
                await s.endAttempt(c.attempt.id, c.attempt.fencingToken, { outcome, exitCode: outcome === 'failed' ? 1 : 0, signal: null, error: null, durationMs: 1 }, 'w', T0 + 2000, {
                  workerId: c.attempt.workerId,
                });
              }
            }),
          );
          const recount = await sql<{ owner: string; state: string; n: number }>(db.url, 'SELECT owner, state, count(*)::int AS n FROM tasks GROUP BY 1, 2');
          for (const owner of [undefined, ...owners]) {
            const counts = await stores[0]!.countTasksByState(owner);
            for (const r of recount) if (owner === undefined || r.owner === owner) counts[r.state as keyof typeof counts] -= r.n;
            assert.ok(Object.values(counts).every((v) => v === 0), `counts of ${owner ?? 'all'} match the tasks`);
          }
          const [claimed] = await sql<{ n: number; ended: number }>(db.url, "SELECT count(*)::int AS n, count(*) FILTER (WHERE state <> 'running')::int AS ended FROM attempts");
          const stats = await stores[1]!.minuteStats(T0 - 60_000, T0 + 60_000);
          const sum = (k: 'started' | 'succeeded' | 'failed' | 'latencyCount') => stats.reduce((x, m) => x + m[k], 0);
          assert.equal(sum('started'), claimed!.n);
          assert.equal(sum('latencyCount'), claimed!.n);
          assert.equal(sum('succeeded') + sum('failed'), claimed!.ended);
          // Every counter row is one of 16 shards.
          const [shards] = await sql<{ lo: number; hi: number }>(db.url, 'SELECT min(shard) AS lo, max(shard) AS hi FROM task_counts');
          assert.ok(shards!.lo >= 0 && shards!.hi <= 15);
        } finally {
          await Promise.all(stores.map((s) => s.close()));
        }
      });
    });
  });

  describe('several servers on one database: clock skew and races', () => {
    const HOUR = 3_600_000;
    /** The database's clock, as the store reads it for leases. */
    const dbNow = async (url: string) => Number((await sql<{ t: string }>(url, `SELECT ${DB_NOW_MS} AS t`))[0]!.t); // a raw client reads BIGINT as text
    /** Runs `fn` between two readings of the database clock; a lease it sets must lie between them plus the lease. */
    const between = async <T>(url: string, fn: () => Promise<T>): Promise<{ value: T; before: number; after: number }> => {
      const before = await dbNow(url);
      const value = await fn();
      return { value, before, after: await dbNow(url) };
    };
    const assertLeaseFrom = (what: string, lease: number, w: { before: number; after: number }, leaseMs: number) =>
      assert.ok(lease >= w.before + leaseMs && lease <= w.after + leaseMs, `${what}: ${lease} not in [${w.before + leaseMs}, ${w.after + leaseMs}]`);
    const lost = { outcome: 'lost' as const, exitCode: null, signal: null, error: 'lease expired', durationMs: null };

    for (const [how, skew] of [
      ['ahead', HOUR],
      ['behind', -HOUR],
    ] as const) {
      it(`a second server whose clock is an hour ${how} neither expires a live lease early nor keeps an expired one`, async () => {
        await withDb(async (db) => {
          const [a, b] = openMany(db, 2, { poolSize: 2 });
          // Each server passes its own clock as `now`, as a real one does; b's is off by `skew`.
          const nowA = () => Date.now();
          const nowB = () => Date.now() + skew;
          try {
            const live = (await a!.createTask(newTaskId(nowA()), 'alice', makeSpec(), 'user:alice', nowA())).task;
            const c = (await a!.claimNext(W1, nowA(), LEASE))!;
            assert.equal(c.task.id, live.id);

            // A live lease (15 s left on the database's clock) is not expired for b.
            assert.deepEqual(await b!.expiredAttempts(nowB(), 100), []);
            assert.equal(await b!.endAttempt(c.attempt.id, c.attempt.fencingToken, lost, 'scheduler', nowB(), { leaseExpired: true }), null);
            assert.equal((await a!.getAttempt(c.attempt.id))?.state, 'running');

            // b renews it: the new lease is the database's now + LEASE, whatever b's clock says,
            // so a does not find it expired (b behind) and it does not outlive LEASE (b ahead).
            const renewal = await between(db.url, () => b!.renewLeases('w1', [c.attempt.id], nowB(), LEASE));
            assert.deepEqual(renewal.value, { renewed: [c.attempt.id], stop: [] });
            assertLeaseFrom('renewed by b', (await a!.getAttempt(c.attempt.id))!.leaseExpiresAt, renewal, LEASE);
            assert.deepEqual(await a!.expiredAttempts(nowA(), 100), []);

            // b's claim gets a lease on the database's clock too; event times stay b's own.
            const other = (await b!.createTask(newTaskId(nowA()), 'alice', makeSpec(), 'user:alice', nowA())).task;
            const bNow = nowB();
            const claimed = await between(db.url, () => b!.claimNext(W1, bNow, LEASE));
            assert.equal(claimed.value?.task.id, other.id);
            assertLeaseFrom('claimed by b', claimed.value!.attempt.leaseExpiresAt, claimed, LEASE);
            assert.equal(claimed.value!.attempt.startedAt, bNow);
            assert.deepEqual(await a!.expiredAttempts(nowA(), 100), []);

            // An expired lease (ended a second ago on the database's clock) is expired for b,
            // and b's guarded end ends it: b's clock does not keep it alive.
            const gone = (await a!.createTask(newTaskId(nowA()), 'alice', makeSpec(), 'user:alice', nowA())).task;
            const e = (await a!.claimNext(W1, nowA(), EXPIRED))!;
            assert.equal(e.task.id, gone.id);
            assert.deepEqual(
              (await b!.expiredAttempts(nowB(), 100)).map((x) => x.id),
              [e.attempt.id],
            );
            const ended = await b!.endAttempt(e.attempt.id, e.attempt.fencingToken, lost, 'scheduler', nowB(), { leaseExpired: true });
            assert.equal(ended?.attempt.state, 'lost');
            assert.equal(ended?.task.state, 'waiting');

            // Leadership: b cannot take a live lease, and takes an expired one.
            const held = await between(db.url, () => a!.acquireLeadership('lease-sweeper', 'server-a', nowA(), 10_000));
            assert.equal(held.value, true);
            const [row] = await sql<{ expires_at: number }>(db.url, "SELECT expires_at FROM leaders WHERE name = 'lease-sweeper'");
            assertLeaseFrom('leadership', Number(row!.expires_at), held, 10_000);
            assert.equal(await b!.acquireLeadership('lease-sweeper', 'server-b', nowB(), 10_000), false);
            assert.equal(await a!.acquireLeadership('lease-sweeper', 'server-a', nowA(), EXPIRED), true);
            assert.equal(await b!.acquireLeadership('lease-sweeper', 'server-b', nowB(), 10_000), true);
            assert.equal(await a!.acquireLeadership('lease-sweeper', 'server-a', nowA(), 10_000), false);
          } finally {
            await Promise.all([a!.close(), b!.close()]);
          }
        });
      });
    }

    it('a heartbeat renewal racing the guarded sweeper end, 100 times at once from two servers: renewed and running, or ended lost and not renewed', async (t) => {
      await withDb(async (db) => {
        const [sweeper, heartbeats] = openMany(db, 2, { poolSize: 2 });
        try {
          // Warm both pools so the racing calls do not wait for a connection.
          await Promise.all([sweeper!.nextDueAt(), heartbeats!.nextDueAt()]);
          let renewedFirst = 0;
          let endedFirst = 0;
          for (let i = 0; i < 100; i++) {
            const { task } = await sweeper!.createTask(newTaskId(T0 + i), 'alice', makeSpec(), 'user:alice', T0 + i);
            // Expired already, so the sweeper's guard passes unless the heartbeat renews first.
            const c = (await sweeper!.claimNext(W1, T0 + i, EXPIRED))!;
            assert.equal(c.task.id, task.id);
            const [renew, end] = await Promise.all([
              heartbeats!.renewLeases('w1', [c.attempt.id], T0 + i, LEASE),
              sweeper!.endAttempt(c.attempt.id, c.attempt.fencingToken, lost, 'scheduler', T0 + i, { leaseExpired: true }),
            ]);
            const attempt = (await sweeper!.getAttempt(c.attempt.id))!;
            const now = (await sweeper!.getTask(task.id))!;
            if (renew.renewed.includes(c.attempt.id)) {
              renewedFirst++;
              assert.equal(end, null, `round ${i}: renewed, yet ended`);
              assert.deepEqual(renew.stop, []);
              assert.equal(attempt.state, 'running');
              assert.ok(attempt.leaseExpiresAt > c.attempt.leaseExpiresAt);
              assert.equal(now.state, 'running');
            } else {
              endedFirst++;
              assert.ok(end, `round ${i}: neither renewed nor ended`);
              assert.equal(end.attempt.state, 'lost');
              assert.deepEqual(renew.stop, [{ attemptId: c.attempt.id, reason: 'attempt_ended', report: false }]);
              assert.equal(attempt.state, 'lost');
              // Not renewed afterwards: the lease is the claim's, expired one.
              assert.equal(attempt.leaseExpiresAt, c.attempt.leaseExpiresAt);
              assert.equal(now.state, 'waiting');
            }
            // Out of the way of the next round's claim.
            await sweeper!.cancelTask(task.id, 'user:alice', T0 + i);
          }
          t.diagnostic(`renewal first: ${renewedFirst}, sweeper first: ${endedFirst}`);
          assert.equal(renewedFirst + endedFirst, 100);
        } finally {
          await Promise.all([sweeper!.close(), heartbeats!.close()]);
        }
      });
    });

    it('idempotent createTask racing from two servers with one key makes one task; another body with that key is a conflict', async () => {
      await withDb(async (db) => {
        const stores = openMany(db, 2, { poolSize: 2 });
        try {
          await Promise.all(stores.map((s) => s.nextDueAt()));
          for (let i = 0; i < 25; i++) {
            const idem = { key: `submit-${i}`, requestHash: 'h1' };
            const results = await Promise.all(
              [0, 1, 0, 1].map((k) => stores[k]!.createTask(newTaskId(T0 + i), 'alice', makeSpec({ name: `job-${i}` }), 'user:alice', T0 + i, idem)),
            );
            assert.equal(results.filter((r) => r.created).length, 1, `round ${i}`);
            assert.equal(new Set(results.map((r) => r.task.id)).size, 1, `round ${i}`);
          }
          const perKey = await sql<{ n: number }>(db.url, 'SELECT count(*)::int AS n FROM tasks GROUP BY idempotency_key');
          assert.equal(perKey.length, 25);
          assert.ok(perKey.every((r) => r.n === 1));
          assert.equal((await sql<{ n: number }>(db.url, 'SELECT count(*)::int AS n FROM task_events'))[0]?.n, 50);

          const settled = await Promise.allSettled(
            ['h1', 'h2'].map((requestHash, k) => stores[k]!.createTask(newTaskId(T0), 'alice', makeSpec(), 'user:alice', T0, { key: 'deploy', requestHash })),
          );
          const made = settled.filter((r) => r.status === 'fulfilled');
          const refused = settled.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
          assert.equal(made.length, 1);
          assert.equal(refused.length, 1);
          assert.ok(refused[0]!.reason instanceof ConflictError, String(refused[0]!.reason));
          assert.match((refused[0]!.reason as Error).message, /Idempotency-Key "deploy"/);
          assert.equal((await sql(db.url, "SELECT 1 FROM tasks WHERE idempotency_key = 'deploy'")).length, 1);
        } finally {
          await Promise.all(stores.map((s) => s.close()));
        }
      });
    });

    it('migration 4 on a version-3 database: the sharded counters are backfilled from the tasks', async () => {
      await withDb(async (db) => {
        await sql(db.url, 'CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)');
        for (const m of MIGRATIONS.filter((x) => x.version <= 3)) {
          await sql(db.url, m.sql);
          await sql(db.url, 'INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [m.version, m.name, T0]);
        }
        const states = ['succeeded', 'waiting', 'failed', 'cancelled'];
        await sql(
          db.url,
          `INSERT INTO tasks (id, owner, name, kind, state, command, args, script, interpreter, env, timeout_ms, max_retries, retry_base_delay_ms,
             retry_factor, retry_max_delay_ms, priority, labels, created_at, updated_at)
           SELECT u.id, CASE WHEN u.n % 3 = 0 THEN 'bob' ELSE 'alice' END, 'old', 'batch', ($2::text[])[((u.n % 4) + 1)::int], 'true', '[]', NULL, '[]', '{}', NULL, 3, 1000, 2, 60000, 0, '{}', $3, $3
           FROM unnest($1::text[]) WITH ORDINALITY AS u(id, n)`,
          [Array.from({ length: 100 }, (_, i) => newTaskId(T0 + i)), states, T0],
        );
        const [store] = openMany(db, 1);
        try {
          await store!.migrate();
          const recount = await sql<{ owner: string; state: string; n: number }>(db.url, 'SELECT owner, state, count(*)::int AS n FROM tasks GROUP BY 1, 2');
          for (const owner of [undefined, 'alice', 'bob']) {
            const want = { ready: 0, waiting: 0, running: 0, retrying: 0, succeeded: 0, failed: 0, cancelled: 0, skipped: 0 };
            for (const r of recount) if (owner === undefined || r.owner === owner) want[r.state as keyof typeof want] += r.n;
            assert.deepEqual(await store!.countTasksByState(owner), want, owner ?? 'all');
          }
          const [rows] = await sql<{ n: number }>(db.url, 'SELECT count(*)::int AS n FROM task_counts');
          assert.ok(rows!.n > 8, 'spread over shards');
        } finally {
          await store!.close();
        }
      }, false);
    });

    it('migration 3 on a version-2 database: old attempts get an empty token (the sweeper still ends them), old workers no binding', async () => {
      await withDb(async (db) => {
        await sql(db.url, 'CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)');
        for (const m of MIGRATIONS.filter((x) => x.version <= 2)) {
          await sql(db.url, m.sql);
          await sql(db.url, 'INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [m.version, m.name, T0]);
        }
        const id = newTaskId(T0);
        await sql(
          db.url,
          `INSERT INTO tasks (id, owner, name, kind, state, command, args, script, interpreter, env, timeout_ms, max_retries, retry_base_delay_ms,
             retry_factor, retry_max_delay_ms, priority, labels, attempts, current_attempt_id, created_at, updated_at)
           VALUES ($1, 'alice', 'old', 'batch', 'running', 'true', '[]', NULL, '[]', '{}', NULL, 3, 1000, 2, 60000, 0, '{}', 1, NULL, $2, $2)`,
          [id, T0],
        );
        await sql(db.url, "INSERT INTO attempts (id, task_id, number, worker_id, state, started_at, lease_expires_at) VALUES (1, $1, 1, 'w1', 'running', $2, $3)", [id, T0, T0 + LEASE]);
        await sql(db.url, 'UPDATE tasks SET current_attempt_id = 1 WHERE id = $1', [id]);
        await sql(db.url, "INSERT INTO workers (id, hostname, slots, labels, connected_at, last_seen_at, state) VALUES ('w1', 'h', 1, '{}', $1, $1, 'connected')", [T0]);
        const [store] = openMany(db, 1);
        try {
          await store!.migrate();
          const task = (await store!.getTask(id))!;
          assert.deepEqual(task.requires, {});
          const attempt = (await store!.getAttempt(1))!;
          assert.equal(attempt.fencingToken, '');
          assert.equal(attempt.stopReason, null);
          // Its lease (written by an old server's clock, years ago) has expired on the database's clock.
          assert.deepEqual((await store!.expiredAttempts(T0, 10)).map((a) => a.id), [1]);
          const ended = await store!.endAttempt(1, attempt.fencingToken, lost, 'scheduler', T0 + 1, { leaseExpired: true });
          assert.equal(ended?.task.state, 'waiting');
          // The old worker row is bound by the next registration, and then to that token only.
          assert.equal(await store!.registerWorker({ id: 'w1', hostname: 'h', slots: 1, labels: {}, connectedAt: T0, lastSeenAt: T0 }, 'tok-1'), true);
          assert.equal((await sql<{ token_id: string }>(db.url, "SELECT token_id FROM workers WHERE id = 'w1'"))[0]?.token_id, 'tok-1');
        } finally {
          await store!.close();
        }
      }, false);
    });
  });
});

/**
 * A TCP proxy to PostgreSQL whose open connections can be broken silently:
 * after breakAll(), the upstream side is closed and each client's next write
 * is answered with a reset, so the client learns only when it next uses it;
 * after stallAll(), they are answered with nothing at all, as over a network
 * partition, so a client learns only from its own timeout. Connections opened
 * afterwards work.
 */
async function startProxy(target: URL): Promise<{ port: number; connections(): number; breakAll(): void; stallAll(): void; close(): Promise<void> }> {
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
  const stalled = new Set<net.Socket>();
  /** Detaches every open connection from PostgreSQL and returns the client sides, still open. */
  const cutUpstream = (): net.Socket[] =>
    [...pairs].map((pair) => {
      pairs.delete(pair);
      const { down, up } = pair;
      down.unpipe(up);
      up.unpipe(down);
      up.removeAllListeners('close');
      down.removeAllListeners('close');
      up.destroy();
      return down;
    });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  return {
    port: (srv.address() as net.AddressInfo).port,
    connections: () => count,
    breakAll() {
      for (const down of cutUpstream()) {
        down.on('data', () => down.resetAndDestroy());
        down.resume(); // unpipe left it paused
      }
    },
    stallAll() {
      for (const down of cutUpstream()) {
        stalled.add(down);
        down.on('data', () => {}); // swallowed: no answer, no reset
        down.resume();
      }
    },
    async close() {
      for (const { down, up } of pairs) {
        down.destroy();
        up.destroy();
      }
      for (const down of stalled) down.destroy();
      await new Promise<void>((resolve) => srv.close(() => resolve()));
    },
  };
}
