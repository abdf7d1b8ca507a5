/**
 * The PostgreSQL store: several Drover servers share one database (design.md:
 * the datastore is also the queue). Same behaviour as the SQLite store (one
 * contract suite, test/store/contract.ts); what differs is concurrency and the
 * lease clock. One file per concern (tokens.ts, tasks.ts, attempts.ts,
 * logs.ts, workers.ts, leadership.ts, web-sessions.ts, feed.ts, task-views.ts, schedules.ts), composed here; db.ts holds the pool and
 * transactions, signals.ts LISTEN/NOTIFY, migrations.ts the schema.
 *
 * Concurrency model. Every write is one READ COMMITTED transaction (db.ts), or
 * a single statement in autocommit where an unknown outcome after a lost
 * connection is harmless (the claim, touches, leadership). Where SQLite relies
 * on its single writer, this store takes row locks, always in the same order
 * so that writers cannot deadlock:
 *   - a task row is locked (FOR NO KEY UPDATE) before anything that depends on
 *     its state or its current attempt is read: claimNext, endAttempt (task
 *     and attempt together), cancelTask, retryTask, promoteDue. Every change to
 *     a task, and to the state of its attempts, happens under that lock, so a
 *     check made after taking it stays true until COMMIT;
 *   - appendLogs locks the attempt row instead (it changes no task), which also
 *     serializes the appends of one attempt so log ids are committed in order;
 *     renewLeases locks attempt rows only, in id order (it changes no state);
 *   - NO KEY UPDATE rather than UPDATE: the foreign-key checks of inserts that
 *     reference the row take KEY SHARE locks, which NO KEY UPDATE does not
 *     block (log chunks since schema v15; events and attempts had them before).
 * Leases use the database's clock, never the caller's `now` (sql.ts DB_NOW_MS).
 * Signals: `cancel` and `drain` are NOTIFYed inside the changing transaction,
 * the hints right after its COMMIT (db.ts).
 */
import type { FeedStore } from '../feed.js';
import type { TaskViewStore } from '../task-views.js';
import type { WebSessionStore } from '../web-sessions.js';
import pg from 'pg';
import type { AttemptStore } from '../attempts.js';
import type { LeadershipStore } from '../leadership.js';
import type { LogStore } from '../logs.js';
import type { Store, StoreCapabilities, StoreSignal } from '../store.js';
import type { ScheduleStore } from '../schedules.js';
import type { DagStore } from '../dags.js';
import type { TaskStore } from '../tasks.js';
import type { TokenStore } from '../tokens.js';
import type { WorkerStore } from '../workers.js';
import { postgresAttempts } from './attempts.js';
import { postgresDags } from './dags.js';
import { Db, STORE_TYPES } from './db.js';
import { postgresFeed } from './feed.js';
import { postgresLeadership } from './leadership.js';
import { postgresLogs } from './logs.js';
import { applyMigrations } from './migrations.js';
import { SignalHub } from './signals.js';
import { postgresSchedules } from './schedules.js';
import { postgresTasks } from './tasks.js';
import { postgresTaskViews } from './task-views.js';
import { postgresTokens } from './tokens.js';
import { postgresWebSessions } from './web-sessions.js';
import { postgresWorkers } from './workers.js';

export interface PostgresStoreOptions {
  /** Pooled connections (default 10); the LISTEN connection comes on top. */
  poolSize?: number;
  /** Shown in pg_stat_activity (default "drover"). */
  applicationName?: string;
  /** How long to wait for a new connection before failing with UnavailableError (default 5000 ms). */
  connectTimeoutMs?: number;
  /** Server-side limit of one statement (default 30000 ms). */
  statementTimeoutMs?: number;
  /** How often the idle LISTEN connection is checked, to notice one that died silently (default 30000 ms). */
  listenPingMs?: number;
  /**
   * How long a query on the LISTEN connection (the ping, a hint, a presence)
   * may go unanswered before the connection counts as dead and is replaced
   * (default 10000 ms; its queries are a bare NOTIFY or SELECT 1).
   */
  listenTimeoutMs?: number;
  /** How often this store NOTIFYs its presence and how long a silent peer counts (signal-peers.ts; defaults 5 s and 20 s; tests shorten them). */
  presenceMs?: number;
  peerTtlMs?: number;
  /** Errors of idle or LISTEN connections, which no call is waiting for (e.g. to log them). */
  onError?: (err: unknown, where: 'pool' | 'listen') => void;
}

/**
 * Opens a pool on `url` (postgres://USER@HOST:PORT/DB). Nothing connects until
 * the first call; call `migrate()` before anything else.
 */
export function openPostgresStore(url: string, opts: PostgresStoreOptions = {}): PostgresStore {
  const statementTimeout = opts.statementTimeoutMs ?? 30_000;
  const client: pg.ClientConfig = {
    connectionString: url,
    application_name: opts.applicationName ?? 'drover',
    // A dead or unreachable database gives a 503 after this, not a hang.
    connectionTimeoutMillis: opts.connectTimeoutMs ?? 5_000,
    statement_timeout: statementTimeout,
    // A client that stalls inside a transaction must not hold its row locks for long.
    idle_in_transaction_session_timeout: 60_000,
    // Client side: bounds a query whose connection died silently (no FIN); the server's limit comes first.
    query_timeout: statementTimeout + 10_000,
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    types: STORE_TYPES,
  };
  const poolSize = opts.poolSize ?? 10;
  const pool = new pg.Pool({ ...client, max: poolSize, idleTimeoutMillis: 30_000 });
  // An idle client's error (PostgreSQL restarted, backend terminated): the pool has
  // already dropped the client and will connect a new one; without a listener the
  // 'error' event would crash the process.
  pool.on('error', (err) => opts.onError?.(err, 'pool'));
  const hub = new SignalHub({
    client: { ...client, query_timeout: opts.listenTimeoutMs ?? 10_000 },
    pingMs: opts.listenPingMs ?? 30_000,
    ...(opts.presenceMs !== undefined ? { presenceMs: opts.presenceMs } : {}),
    ...(opts.peerTtlMs !== undefined ? { peerTtlMs: opts.peerTtlMs } : {}),
    onError: (err) => opts.onError?.(err, 'listen'),
  });
  return new PostgresStore(pool, hub, poolSize);
}

/** The concern stores' methods, assigned onto each instance by the constructor. */
export interface PostgresStore extends TokenStore, TaskStore, AttemptStore, LogStore, WorkerStore, LeadershipStore, FeedStore, TaskViewStore, WebSessionStore, ScheduleStore, DagStore {}

export class PostgresStore implements Store {
  readonly capabilities: StoreCapabilities = { multiServer: true, groupCommit: false, leaseClock: 'database' };
  private readonly db: Db;
  private closing: Promise<void> | null = null;

  constructor(
    /** Exposed for diagnostics and tests, not for callers to write through. */
    readonly pool: pg.Pool,
    private readonly hub: SignalHub,
    poolSize: number,
  ) {
    this.db = new Db(pool, hub, poolSize);
    Object.assign(
      this,
      postgresTokens(this.db),
      postgresTasks(this.db),
      postgresAttempts(this.db),
      postgresLogs(this.db),
      postgresWorkers(this.db),
      postgresLeadership(this.db),
      postgresWebSessions(this.db),
      postgresFeed(this.db),
      postgresTaskViews(this.db),
      postgresSchedules(this.db),
      postgresDags(this.db),
    );
  }

  onSignal(listener: (signal: StoreSignal) => void): () => void {
    return this.hub.subscribe(listener);
  }

  /** Resolves once this store is LISTENing (starts the LISTEN connection if needed). For tests and readiness checks. */
  whenListening(): Promise<void> {
    return this.hub.whenListening();
  }

  /** How many other stores this one has heard LISTENing lately (signal-peers.ts); 0 also while it does not listen. */
  signalPeers(): number {
    return this.hub.peerCount();
  }

  /** See migrations.ts applyMigrations: once, under an advisory lock, however many servers start together. */
  async migrate(): Promise<void> {
    await applyMigrations(this.db);
  }

  /** Stops the LISTEN connection and ends the pool (after the calls in flight). Idempotent. */
  async close(): Promise<void> {
    this.closing ??= (async () => {
      await this.hub.close();
      await this.pool.end();
    })();
    return this.closing;
  }
}
