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
 * Run on every new pooled connection: a named statement is then planned for
 * its parameters at each execution, like an unnamed one. PostgreSQL's default
 * may switch a named statement to one generic plan after five executions,
 * and for the task list that plan is bad (measured: `state = $1` walks the
 * primary key and filters, so a rare or absent state scans the table).
 */
const CUSTOM_PLANS_SQL = 'SET plan_cache_mode = force_custom_plan';
/** Most distinct texts given a statement name (Db.prepared); beyond it they run unnamed. */
const PREPARED_MAX = 500;

export class Db {
  /** A dead pooled client is discarded and the work retried; at most this many times in a row. */
  private readonly connectionRetries: number;

  /** Statement names by SQL text (Db.prepared). */
  private readonly names = new Map<string, string>();
  /** False once a connection refused CUSTOM_PLANS_SQL (before PostgreSQL 12): no named statements then. */
  private customPlans = true;

  constructor(
    readonly pool: pg.Pool,
    private readonly hub: SignalHub,
    poolSize: number,
  ) {
    this.connectionRetries = poolSize + 1;
    // Queued before anything a caller sends on the new connection, so it is in effect for it.
    pool.on('connect', (client) => {
      client.query(CUSTOM_PLANS_SQL).catch((e: unknown) => {
        // 42704: no such setting (PostgreSQL < 12). Any other failure is the connection's, which the pool discards.
        if ((e as { code?: string }).code === '42704') this.customPlans = false;
      });
    });
  }

  /**
   * `sql` as a named prepared statement, for the hot reads (the task list and
   * the counts): each pooled connection parses it once instead of at every
   * call (measured on a 50-row page: about 60 µs of a 420 µs query). The name
   * is derived from the text, so one name never means two statements. Plans
   * stay per execution (CUSTOM_PLANS_SQL).
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

  private hints = new Set<string>();
  private hintsScheduled = false;

  /**
   * Hints of the writes that committed in this turn of the event loop go out
   * together, in one statement, off the writers' path: a write does not wait
   * for its hint, and a burst of submits costs one NOTIFY statement, not one
   * each. That statement is its own implicit transaction, which writes nothing
   * durable, so it does not wait for a WAL flush either.
   */
  private sendHints(signals: StoreSignal[]): void {
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
      try {
        return await fn(client);
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
      const signals: StoreSignal[] = [];
      const result = await fn({ query: (sql, params) => client.query(sql, params), signal: (...s) => signals.push(...s) });
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
        await client.query('BEGIN');
        const signals: StoreSignal[] = [];
        const tx: Tx = {
          query: (sql, params) => client.query(sql, params),
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
