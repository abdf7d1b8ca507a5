/**
 * The pool and the two ways the PostgreSQL store talks to it: `read` (one or
 * more statements, no transaction) and `write` (one transaction; its `cancel`
 * signals NOTIFYed just before COMMIT, its other signals right after it).
 *
 * Failure handling:
 *   - connecting fails (server down, refused, too many connections, timeout):
 *     UnavailableError at once, no retry; the caller retries (HTTP 503).
 *   - a pooled connection turns out to be dead (PostgreSQL restarted, the
 *     backend was terminated): the client is discarded and the work runs again
 *     on a fresh connection, if that is safe: always for a read; for a write
 *     only if COMMIT had not been sent yet (an uncommitted transaction dies with
 *     its connection, so nothing was applied). A connection lost during COMMIT
 *     is reported as UnavailableError saying the outcome is unknown.
 *   - deadlock / serialization failure: rolled back by PostgreSQL; run again.
 */
import { createHash } from 'node:crypto';
import pg from 'pg';
import type { StoreSignal } from '../store.js';
import { isConnectionError, isTransientConflict, mapPgError } from './pg-errors.js';
import { SIGNAL_CHANNEL, type SignalHub } from './signals.js';

/** What a read or write function is given: a query on the connection it runs on. */
export interface Queryable {
  /** `sql` may be a query config (Db.prepared: a named statement); every implementation hands it to pg's client.query as is. */
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(sql: string | pg.QueryConfig, params?: unknown[]): Promise<pg.QueryResult<R>>;
}

export interface Tx extends Queryable {
  /** Queues signals; they go out only if the transaction commits (see write()). */
  signal(...signals: StoreSignal[]): void;
}

/** BIGINT (int8, oid 20) as a JS number: every Drover value (ms times, ids, counts) is far below 2^53. */
function parseInt8(value: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n)) throw new RangeError(`BIGINT ${value} does not fit a JavaScript number`);
  return n;
}

/**
 * Type parsers of this store's connections only: `pg.types.setTypeParser` would
 * change them for every pg user in the process.
 */
export const STORE_TYPES: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === 20 && format !== 'binary' ? parseInt8 : pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
};

const CONFLICT_RETRIES = 5;

const NOTIFY_SQL = 'SELECT pg_notify($1, s) FROM unnest($2::text[]) WITH ORDINALITY AS u(s, n) ORDER BY n';
/** The same NOTIFYs in an implicit transaction that need not wait for a WAL flush (it writes no data). */
const HINT_SQL = `SELECT set_config('synchronous_commit', 'off', true) AS sc,
  (SELECT count(pg_notify($1, s)) FROM unnest($2::text[]) AS u(s)) AS n`;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * How PostgreSQL plans a named statement, per connection and switched by
 * need (Db.planMode), because the right answer differs by statement kind:
 * - Reads through Db.prepared (the task list, the counts) are planned for
 *   their parameters at every execution (`force_custom_plan`). PostgreSQL's
 *   default may switch a named statement to one generic plan after five
 *   executions, and for the task list that plan is bad (measured: `state = $1`
 *   walks the primary key and filters, so a rare or absent state scans the
 *   table).
 * - Writes (Db.write, Db.single) run with PostgreSQL's default, `auto`: their
 *   statements find rows by key or by the queue's index, and re-planning them
 *   at each call cost them more than it gained. Measured (issue 9; 10,000
 *   waiting no-op tasks drained by one 10-slot noop agent, one server; the
 *   builds before and after, alternating, 2 shared cores): 602, 724, 657
 *   tasks/s with every named statement custom-planned, 756, 838, 916/s with
 *   writes on `auto`. A chain of 100 DAG steps showed no difference beyond
 *   its run-to-run spread (10.4-14.2 ms a step either way).
 * A connection is switched with a SET outside any transaction (a SET inside
 * one would be undone by its rollback), only when its last use was of the
 * other kind.
 */
const PLAN_MODE_SQL = { custom: 'SET plan_cache_mode = force_custom_plan', auto: 'SET plan_cache_mode = auto' } as const;
type PlanMode = keyof typeof PLAN_MODE_SQL;
/** Most distinct texts given a statement name (Db.prepared); beyond it they run unnamed. */
const PREPARED_MAX = 500;

export class Db {
  /** A dead pooled client is discarded and the work retried; at most this many times in a row. */
  private readonly connectionRetries: number;

  /** Statement names by SQL text (Db.prepared). */
  private readonly names = new Map<string, string>();
  /** False once a connection refused PLAN_MODE_SQL (before PostgreSQL 12): no named statements then. */
  private customPlans = true;
  /** Each pooled connection's plan_cache_mode as last set (PLAN_MODE_SQL); none yet: unknown, SET before its first named statement. */
  private readonly planModes = new WeakMap<pg.PoolClient, PlanMode>();

  constructor(
    readonly pool: pg.Pool,
    private readonly hub: SignalHub,
    poolSize: number,
  ) {
    this.connectionRetries = poolSize + 1;
    // A new connection's mode is unknown (the server's default, or a DBA's setting) and is SET before its
    // first named statement (planMode). Not from the pool's 'connect' event: a query queued there runs while
    // the caller's first query waits behind it, which pg 8 reports as a deprecation warning on stderr.
  }

  /**
   * `sql` as a named prepared statement, for the hot reads (the task list and
   * the counts): each pooled connection parses it once instead of at every
   * call (measured on a 50-row page: about 60 µs of a 420 µs query). The name
   * is derived from the text, so one name never means two statements. Plans
   * stay per execution for reads, cached for writes (PLAN_MODE_SQL).
   */
  prepared(sql: string, params: unknown[] = []): pg.QueryConfig | string {
    if (!this.customPlans) return sql;
    let name = this.names.get(sql);
    if (name === undefined) {
      if (this.names.size >= PREPARED_MAX) return sql;
      name = `drover_${createHash('sha256').update(sql).digest('hex').slice(0, 24)}`;
      this.names.set(sql, name);
    }
    return { name, text: sql, values: params };
  }

  /**
   * A write's statement on its connection: with parameters, as a named
   * statement (prepared()), so each pooled connection parses it once. A
   * statement without parameters (BEGIN, a multi-statement migration) goes
   * as given. Measured (issue 12, a chain of 100 DAG steps on PostgreSQL,
   * log_min_duration_statement = 0): every write statement was parsed again
   * at each call, 0.13-0.27 ms each for the end, the run's progress and the
   * claim, about 1 ms of the 11 ms each step cost outside its process.
   */
  private named<R extends pg.QueryResultRow>(client: pg.PoolClient, sql: string | pg.QueryConfig, params?: unknown[]): Promise<pg.QueryResult<R>> {
    if (typeof sql !== 'string' || params === undefined) return client.query<R>(sql as string, params);
    const q = this.prepared(sql, params);
    return typeof q === 'string' ? client.query<R>(q, params) : client.query<R>(q);
  }

  /** Puts `client` in `mode` (PLAN_MODE_SQL) unless it is there; call outside a transaction. */
  private async planMode(client: pg.PoolClient, mode: PlanMode): Promise<void> {
    if (!this.customPlans || this.planModes.get(client) === mode) return;
    try {
      await client.query(PLAN_MODE_SQL[mode]);
    } catch (e) {
      // 42704: no such setting (PostgreSQL < 12): named statements are not used from then on (prepared()).
      if ((e as { code?: string }).code !== '42704') throw e;
      this.customPlans = false;
      return;
    }
    this.planModes.set(client, mode);
  }

  private hints = new Set<string>();
  private hintsScheduled = false;

  /**
   * Hints of the writes that committed in this turn of the event loop go out
   * together, in one statement, off the writers' path: a write does not wait
   * for its hint, and a burst of submits costs one NOTIFY statement, not one
   * each. That statement is its own implicit transaction, which writes nothing
   * durable, so it does not wait for a WAL flush either. None goes out while
   * no other store listens (signal-peers.ts): this server's own listeners had
   * them at commit.
   */
  private sendHints(signals: StoreSignal[]): void {
    if (!this.hub.needsHints()) return;
    for (const p of uniquePayloads(signals)) this.hints.add(p);
    if (this.hintsScheduled) return;
    this.hintsScheduled = true;
    setImmediate(() => {
      this.hintsScheduled = false;
      const payloads = [...this.hints];
      this.hints.clear();
      // A hint that cannot be sent is covered by the one-second sweeps; the writes committed.
      const params = [SIGNAL_CHANNEL, payloads];
      if (!this.hub.notifyVia(HINT_SQL, params)) this.pool.query(HINT_SQL, params).catch(() => {});
    });
  }

  private async checkout(): Promise<pg.PoolClient> {
    try {
      return await this.pool.connect();
    } catch (e) {
      throw mapPgError(e);
    }
  }

  /** Runs `fn` on one pooled connection, outside a transaction. `fn` must only read. */
  async read<T>(fn: (q: Queryable) => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const client = await this.checkout();
      let broken: Error | undefined;
      // The pool listens for errors only on idle clients; one on a checked-out client would be unhandled.
      const onError = (e: Error) => (broken = e);
      client.on('error', onError);
      const q: Queryable = {
        query: async (sql, params) => {
          if (typeof sql !== 'string' && sql.name !== undefined) await this.planMode(client, 'custom');
          return client.query(sql as string, params);
        },
      };
      try {
        return await fn(q);
      } catch (e) {
        if (isConnectionError(e)) {
          broken = e as Error;
          if (attempt < this.connectionRetries) continue;
        }
        throw mapPgError(e);
      } finally {
        client.removeListener('error', onError);
        client.release(broken);
      }
    }
  }

  /**
   * Runs `fn` in one transaction (READ COMMITTED) and NOTIFYs the signals it
   * queued (cancel just before COMMIT, the rest right after). `fn` may run more than once (see the header),
   * so it must not have effects outside the transaction other than through
   * its return value.
   */
  /**
   * Runs `fn`, which must issue exactly ONE statement, without BEGIN/COMMIT: a
   * single statement is atomic on its own, and this saves two round trips.
   * The catch: if the connection dies while the statement is out, whether it
   * was applied is unknown, so it is never rerun (UnavailableError). Used only
   * where such an unknown outcome is harmless: a claim that committed but whose
   * result was lost leaves a running attempt no worker has, which its lease
   * ends as lost and requeues; touchToken/touchWorker only write a time; a
   * leadership lease taken unseen is settled by the holder's next call.
   */
  async single<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    await this.hub.firstAttemptSettled();
    const client = await this.checkout();
    let broken: Error | undefined;
    const onError = (e: Error) => (broken = e);
    client.on('error', onError);
    try {
      await this.planMode(client, 'auto');
      const signals: StoreSignal[] = [];
      const result = await fn({ query: (sql, params) => this.named(client, sql, params), signal: (...s) => signals.push(...s) });
      if (signals.some((x) => x.kind !== 'wake' && x.kind !== 'task')) throw new Error('single(): only hints may be signalled outside a transaction');
      if (signals.length > 0) {
        this.sendHints(signals);
        queueMicrotask(() => this.hub.deliverLocally(signals));
      }
      return result;
    } catch (e) {
      if (isConnectionError(e)) broken = e as Error;
      throw mapPgError(e, isConnectionError(e) ? 'the connection was lost while the statement was out, so it may or may not have been applied' : undefined);
    } finally {
      client.removeListener('error', onError);
      client.release(broken);
    }
  }

  async write<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    // While the first LISTEN of this store is being set up, wait for it: a listener
    // registered just before this write then hears the write's own signals.
    await this.hub.firstAttemptSettled();
    for (let attempt = 0; ; attempt++) {
      const client = await this.checkout();
      let broken: Error | undefined;
      const onError = (e: Error) => (broken = e);
      client.on('error', onError);
      let commitSent = false;
      try {
        await this.planMode(client, 'auto');
        await client.query('BEGIN');
        const signals: StoreSignal[] = [];
        const tx: Tx = {
          query: (sql, params) => this.named(client, sql, params),
          signal: (...s) => signals.push(...s),
        };
        const result = await fn(tx);
        // `cancel` and `drain` must not be lost: they are NOTIFYed inside the transaction, so they go
        // out if and only if the cancel commits. The frequent hints (wake, task) are
        // sent right after COMMIT instead: a NOTIFY inside a transaction holds
        // PostgreSQL's global notify lock until the commit is flushed to disk, which
        // serializes every committing writer (measured: 482 vs 841 submits/s with 32
        // clients). Losing one in a crash between COMMIT and the NOTIFY costs at most
        // the scheduler's one-second sweep and the log followers' one-second poll.
        const critical = signals.filter((x) => x.kind === 'cancel' || x.kind === 'drain');
        const hints = signals.filter((x) => x.kind === 'wake' || x.kind === 'task');
        if (critical.length > 0) await client.query(NOTIFY_SQL, [SIGNAL_CHANNEL, uniquePayloads(critical)]);
        commitSent = true;
        await client.query('COMMIT');
        if (hints.length > 0) {
          this.sendHints(hints);
          // This server reacts now; the others when the NOTIFY reaches them.
          queueMicrotask(() => this.hub.deliverLocally(hints));
        }
        return result;
      } catch (e) {
        if (isConnectionError(e)) {
          broken = e as Error;
        } else if (!commitSent) {
          await client.query('ROLLBACK').catch((re: unknown) => {
            broken = re instanceof Error ? re : new Error(String(re));
          });
        }
        if (!commitSent) {
          if (isConnectionError(e) && attempt < this.connectionRetries) continue;
          if (isTransientConflict(e) && attempt < CONFLICT_RETRIES) {
            await sleep(5 + Math.random() * 20 * (attempt + 1));
            continue;
          }
        }
        throw mapPgError(e, commitSent && isConnectionError(e) ? 'the connection was lost during COMMIT, so the change may or may not have been applied' : undefined);
      } finally {
        client.removeListener('error', onError);
        client.release(broken);
      }
    }
  }
}

/** One payload per distinct signal, in first-seen order (PostgreSQL would fold the duplicates anyway). */
function uniquePayloads(signals: StoreSignal[]): string[] {
  return [...new Set(signals.map((s) => JSON.stringify(s)))];
}
