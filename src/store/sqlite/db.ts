/**
 * The SQLite connection and what every concern file shares: opening the file
 * (modes, pragmas, the one-server lock), prepared statements, reads, group
 * commit writes, and the signals a write emits after its commit.
 *
 * Concurrency model. SQLite has one writer at a time, and better-sqlite3 is
 * synchronous, so inside this process no other JavaScript runs while a
 * transaction is open. Every write runs as one `BEGIN IMMEDIATE` transaction:
 * it takes the write lock before its first read, so what it read cannot change
 * before it writes, even if another process opened the same file (such a
 * writer waits up to busy_timeout, then gets SQLITE_BUSY -> UnavailableError).
 * IMMEDIATE rather than DEFERRED also avoids the WAL failure where a read
 * transaction cannot be upgraded to a write one (SQLITE_BUSY_SNAPSHOT).
 * The concern files therefore check a guard with a SELECT and then write: the
 * transaction makes the pair atomic.
 *
 * Methods are async although the work is synchronous, because the Store
 * interface is shared with the PostgreSQL store.
 */
import Database from 'better-sqlite3';
import type { StoreSignal } from '../signals.js';
import { createPrivateFile } from './files.js';
import { holdServerLock, type ServerLock } from './server-lock.js';
import { mapSqliteError } from './sqlite-errors.js';

export interface OpenSqliteOptions {
  /**
   * Refuse to open a file another process holds with `lock: true`, and hold
   * it until close (one server per file; open-store.ts passes it). Tests that
   * open one file from several connections leave it off.
   */
  lock?: boolean;
}

type Stmt = Database.Statement<unknown[], unknown>;
type Pending = { fn: () => unknown; resolve: (v: unknown) => void; reject: (e: unknown) => void };

export class SqliteDb {
  private readonly statements = new Map<string, Stmt>();
  /** Statements in raw mode (rows as arrays), apart from `statements`: a statement's mode is its own state. */
  private readonly rawStatements = new Map<string, Stmt>();
  private readonly pending: Pending[] = [];
  private readonly listeners = new Set<(s: StoreSignal) => void>();
  /** Signals of the write running now; kept only if it commits. */
  private opSignals: StoreSignal[] = [];

  constructor(
    /** The connection; exposed for diagnostics and tests, not for callers to write through. */
    readonly db: Database.Database,
    private readonly lock: ServerLock | null,
  ) {}

  /** A cached prepared statement. Prepared lazily: the tables exist only after migrate(). */
  q(sql: string): Stmt {
    let s = this.statements.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      this.statements.set(sql, s);
    }
    return s;
  }

  /**
   * A cached prepared statement whose rows are arrays in column order
   * (better-sqlite3 raw mode): no object per row, for the hot list reads whose
   * rows are mapped field by field anyway.
   */
  qRaw(sql: string): Stmt {
    let s = this.rawStatements.get(sql);
    if (!s) {
      s = this.db.prepare(sql).raw(true);
      this.rawStatements.set(sql, s);
    }
    return s;
  }

  /** Runs `fn`, turning environment failures into UnavailableError and any throw into a rejection. */
  async read<T>(fn: () => T): Promise<T> {
    try {
      return fn();
    } catch (e) {
      throw mapSqliteError(e);
    }
  }

  /**
   * Runs `fn` atomically and resolves once it is durable (committed and fsynced).
   *
   * Group commit: writes requested in the same turn of the event loop run in one
   * IMMEDIATE transaction, each inside its own savepoint (a nested
   * better-sqlite3 transaction), so one write's failure rolls back only that
   * write. With synchronous=FULL every commit costs an fsync (about 1-2 ms
   * here); sharing it between all the submits, claims and exits that arrived
   * together is what lets throughput grow with load instead of being capped
   * at one fsync per change. Writes run in the order they were requested, and
   * no caller hears of success before the commit that made it durable.
   *
   * Tried and dropped (issue 9, 2026-12-05, three pairs alternating, one hour):
   *  - waiting 1 ms for more writes before the commit (a timer instead of
   *    setImmediate): 2,000 `/bin/true` through one 8-slot agent 846, 802 and
   *    776/s as is against 777, 701 and 719/s. A commit of one end and its
   *    refill writes about 40 WAL pages (strace: 24,164 pwrite64 for 556
   *    fsyncs), but the delay lengthens every slot's round trip by more than
   *    the shared pages save;
   *  - no automatic WAL checkpoints on this connection (wal_autocheckpoint 0,
   *    to keep their writes off the event loop): a 20,000-task no-op drain
   *    4,137, 3,557 and 3,997/s as is against 3,315, 3,601 and 3,476/s.
   */
  write<T>(fn: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.pending.push({ fn, resolve: resolve as (v: unknown) => void, reject });
      if (this.pending.length === 1) setImmediate(() => this.flush());
    });
  }

  private flush(): void {
    const batch = this.pending.splice(0);
    if (batch.length === 0) return;
    const results: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = [];
    const signals: StoreSignal[] = [];
    try {
      if (!this.db.open) throw new Error('the store is closed');
      this.db
        .transaction(() => {
          for (const op of batch) {
            this.opSignals = [];
            try {
              results.push({ ok: true, value: this.db.transaction(op.fn)() });
              signals.push(...this.opSignals);
            } catch (error) {
              results.push({ ok: false, error });
            }
          }
        })
        .immediate();
    } catch (e) {
      // The commit itself failed (disk full, I/O error): nothing of the batch is durable.
      const err = mapSqliteError(e);
      for (const op of batch) op.reject(err);
      return;
    }
    batch.forEach((op, i) => {
      const r = results[i]!;
      if (r.ok) op.resolve(r.value);
      else op.reject(mapSqliteError(r.error));
    });
    this.emit(signals);
  }

  /** Called inside a write: the signals go out after its commit, or never. */
  signal(...s: StoreSignal[]): void {
    this.opSignals.push(...s);
  }

  private emit(signals: StoreSignal[]): void {
    if (signals.length === 0 || this.listeners.size === 0) return;
    // Coalesce the batch: one wake, and one `task` per task, are enough for a listener.
    const seen = new Set<string>();
    for (const sig of signals) {
      const key = sig.kind === 'wake' ? 'wake' : sig.kind === 'task' ? `t:${sig.taskId}` : sig.kind === 'cancel' ? `c:${sig.attemptId}` : `d:${sig.workerId}`;
      if (seen.has(key)) continue;
      seen.add(key);
      for (const l of this.listeners) {
        try {
          l(sig);
        } catch {
          // A listener's failure must not undo or block a committed write's other listeners.
        }
      }
    }
  }

  onSignal(listener: (signal: StoreSignal) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Runs the writes already requested, then closes the connection and releases the lock. */
  async close(): Promise<void> {
    this.flush();
    this.statements.clear();
    this.rawStatements.clear();
    try {
      if (this.db.open) this.db.close();
    } finally {
      this.lock?.release();
    }
  }
}

/**
 * SQLite's page cache for the connection, in KiB (`cache_size = -N`). better-sqlite3 builds SQLite
 * with a 16,000 KiB default, which a server fills within its first 20,000 tasks and then keeps (16 MB
 * of the 125 MB RSS the bench measured after 100,000 tasks). Measured (issue 9; 3 × 20,000 no-op tasks submitted in batches
 * and drained by a 10-slot noop agent, the bench's memory method; alternating
 * runs): RSS after 60,000 tasks 121.9-124.2 MB with the default, 106.2-110.6 MB with 4,000 KiB and
 * 109.5 MB with 2,000 KiB; drain 2,646-2,736/s with the default, 2,654-3,337/s with 4,000 KiB. Pages
 * that fall out of this cache are still in the kernel's page cache, so a miss is a pread(2), not a
 * disk read, and the hot pages (the queue's index, the newest rows) stay in.
 */
export const PAGE_CACHE_KIB = 4_000;

/**
 * Opens (creating if needed) the database at `path`, or an in-memory one for
 * ":memory:". With `lock`, takes the one-server lock first (server-lock.ts).
 */
export function openSqliteDb(path: string, opts: OpenSqliteOptions = {}): SqliteDb {
  const memory = path === ':memory:';
  if (!memory) createPrivateFile(path);
  const lock = opts.lock && !memory ? holdServerLock(path) : null;
  let db: Database.Database;
  try {
    db = new Database(path);
  } catch (e) {
    lock?.release();
    throw mapSqliteError(e);
  }
  try {
    // Before the others: switching to WAL needs a lock another process may hold briefly.
    db.pragma('busy_timeout = 5000');
    db.pragma('journal_mode = WAL');
    // FULL: the WAL is fsynced at every commit, so a task the API acknowledged survives power loss.
    // Measured (issue 9, SQLite drain of 20,000 no-ops, --cpu-prof): COMMIT was 26 % of the server's busy
    // time; NORMAL would gain about a sixth of the drain at most, by acknowledging writes a power loss can
    // take back. Not taken: durability is the contract, and group commit already shares each fsync.
    db.pragma('synchronous = FULL');
    db.pragma('foreign_keys = ON');
    // Statement journals and the temporary b-trees of triggers and RETURNING in memory, not in temp files:
    // measured (issue 9), a task insert with its triggers took 55-95 µs with the default and 22-24 µs with
    // this. Only transient scratch space moves; the WAL and its fsync are untouched.
    db.pragma('temp_store = MEMORY');
    db.pragma(`cache_size = -${PAGE_CACHE_KIB}`);
  } catch (e) {
    db.close();
    lock?.release();
    throw mapSqliteError(e);
  }
  return new SqliteDb(db, lock);
}
