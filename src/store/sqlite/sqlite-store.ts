/**
 * The embedded store: SQLite through better-sqlite3 (design.md: the datastore
 * is also the queue).
 *
 * Concurrency model. SQLite has one writer at a time, and better-sqlite3 is
 * synchronous, so inside this process no other JavaScript runs while a
 * transaction is open. Every write runs as one `BEGIN IMMEDIATE` transaction:
 * it takes the write lock before its first read, so what it read cannot change
 * before it writes, even if another process opened the same file (such a
 * writer waits up to busy_timeout, then gets SQLITE_BUSY -> UnavailableError).
 * IMMEDIATE rather than DEFERRED also avoids the WAL failure where a read
 * transaction cannot be upgraded to a write one (SQLITE_BUSY_SNAPSHOT).
 *
 * Methods are async although the work is synchronous, because the Store
 * interface is shared with the PostgreSQL store.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { planAttemptEnd, type AttemptEndInput } from '../../core/attempt-end.js';
import { ConflictError, InvalidInputError, NotFoundError } from '../../core/errors.js';
import type { Attempt, LogChunk, Task, TaskEvent, TaskSpec } from '../../core/task.js';
import { assertTransition, isTerminal, type TaskState, type TransitionReason } from '../../core/task-state.js';
import type {
  AttemptEndResult,
  CancelResult,
  Claim,
  NewLogChunk,
  ReportCheck,
  Store,
  StoreSignal,
  TaskFilter,
  TaskPage,
  TokenRecord,
  WorkerRecord,
} from '../store.js';
import { LATEST_SCHEMA_VERSION, MIGRATIONS } from './migrations.js';
import {
  attemptFromRow,
  eventFromRow,
  logChunkFromRow,
  taskFromRow,
  taskSpecParams,
  tokenFromRow,
  workerFromRow,
  type AttemptRow,
  type EventRow,
  type LogChunkRow,
  type TaskRow,
  type TokenRow,
  type WorkerRow,
} from './rows.js';
import { isUniqueViolation, mapSqliteError } from './sqlite-errors.js';

/** Actor of the transitions the scheduler makes on its own (claim, backoff). */
const SCHEDULER_ACTOR = 'scheduler';

/**
 * Opens (creating if needed) the database at `path`, or an in-memory one for
 * ":memory:". Call `migrate()` before anything else.
 */
export function openSqliteStore(path: string): SqliteStore {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  try {
    // Before the others: switching to WAL needs a lock another process may hold briefly.
    db.pragma('busy_timeout = 5000');
    db.pragma('journal_mode = WAL');
    // FULL: the WAL is fsynced at every commit, so a task the API acknowledged survives power loss.
    db.pragma('synchronous = FULL');
    db.pragma('foreign_keys = ON');
  } catch (e) {
    db.close();
    throw mapSqliteError(e);
  }
  return new SqliteStore(db);
}

type Stmt = Database.Statement<unknown[], unknown>;

export class SqliteStore implements Store {
  private readonly statements = new Map<string, Stmt>();
  private readonly pending: Array<{ fn: () => unknown; resolve: (v: unknown) => void; reject: (e: unknown) => void }> = [];
  private readonly listeners = new Set<(s: StoreSignal) => void>();
  /** Signals of the write running now; kept only if it commits. */
  private opSignals: StoreSignal[] = [];
  readonly capabilities = { multiServer: false, groupCommit: true } as const;

  /** The connection; exposed for diagnostics and tests, not for callers to write through. */
  constructor(readonly db: Database.Database) {}

  // ---- plumbing -------------------------------------------------------------

  /** A cached prepared statement. Prepared lazily: the tables exist only after migrate(). */
  private q(sql: string): Stmt {
    let s = this.statements.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      this.statements.set(sql, s);
    }
    return s;
  }

  /** Runs `fn`, turning environment failures into UnavailableError and any throw into a rejection. */
  private async read<T>(fn: () => T): Promise<T> {
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
   */
  private write<T>(fn: () => T): Promise<T> {
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
  private signal(...s: StoreSignal[]): void {
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

  /** The lease row is taken or renewed in one statement whose WHERE makes it exclusive (see Store). */
  async acquireLeadership(name: string, holder: string, now: number, ttlMs: number): Promise<boolean> {
    return this.write(() => {
      const row = this.q(
        `INSERT INTO leaders (name, holder, expires_at) VALUES (@name, @holder, @expires)
         ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
         WHERE leaders.holder = excluded.holder OR leaders.expires_at < @now
         RETURNING holder`,
      ).get({ name, holder, expires: now + ttlMs, now });
      return row !== undefined;
    });
  }

  private taskRow(id: string): TaskRow | undefined {
    return this.q('SELECT * FROM tasks WHERE id = ?').get(id) as TaskRow | undefined;
  }

  private attemptRow(id: number): AttemptRow | undefined {
    return this.q('SELECT * FROM attempts WHERE id = ?').get(id) as AttemptRow | undefined;
  }

  private addEvent(taskId: string, from: TaskState | null, to: TaskState, reason: TransitionReason | 'fenced_report', actor: string, at: number, detail: Record<string, unknown> | null): void {
    this.q('INSERT INTO task_events (task_id, from_state, to_state, reason, actor, at, detail) VALUES (?, ?, ?, ?, ?, ?, ?)').run(
      taskId,
      from,
      to,
      reason,
      actor,
      at,
      detail === null ? null : JSON.stringify(detail),
    );
  }

  /**
   * The fence every report passes: the attempt exists, the token is its id,
   * it is still running, and it is its task's current attempt.
   */
  private check(attemptId: number, fencingToken: number): { ok: true; attempt: AttemptRow } | { ok: false; reason: string } {
    const a = this.attemptRow(attemptId);
    if (!a) return { ok: false, reason: 'unknown_attempt' };
    if (fencingToken !== a.id) return { ok: false, reason: 'stale_token' };
    if (a.state !== 'running') return { ok: false, reason: 'attempt_ended' };
    const t = this.q('SELECT current_attempt_id FROM tasks WHERE id = ?').get(a.task_id) as Pick<TaskRow, 'current_attempt_id'> | undefined;
    if (!t || t.current_attempt_id !== a.id) return { ok: false, reason: 'not_current' };
    return { ok: true, attempt: a };
  }

  // ---- lifecycle ------------------------------------------------------------

  async migrate(): Promise<void> {
    await this.write(() => {
      this.db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)');
      const current = (this.db.prepare('SELECT coalesce(max(version), 0) AS v FROM schema_migrations').get() as { v: number }).v;
      if (current > LATEST_SCHEMA_VERSION) {
        throw new Error(
          `database ${this.db.name} has schema version ${current}, newer than the ${LATEST_SCHEMA_VERSION} this Drover knows; ` +
            'it was written by a newer Drover, upgrade Drover to open it',
        );
      }
      const record = this.db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
      for (const m of [...MIGRATIONS].sort((a, b) => a.version - b.version)) {
        if (m.version <= current) continue;
        this.db.exec(m.sql);
        record.run(m.version, m.name, Date.now());
      }
    });
  }

  async close(): Promise<void> {
    this.flush();
    this.statements.clear();
    if (this.db.open) this.db.close();
  }

  // ---- tokens ---------------------------------------------------------------

  async createToken(t: Omit<TokenRecord, 'revokedAt' | 'lastUsedAt'>): Promise<TokenRecord> {
    return this.write(() => {
      try {
        const row = this.q(
          'INSERT INTO tokens (id, name, user, role, secret_hash, created_at) VALUES (?, ?, ?, ?, ?, ?) RETURNING *',
        ).get(t.id, t.name, t.user, t.role, t.secretHash, t.createdAt) as TokenRow;
        return tokenFromRow(row);
      } catch (e) {
        if (isUniqueViolation(e)) throw new ConflictError(`token ${t.id} (or its secret) already exists`);
        throw e;
      }
    });
  }

  async getToken(id: string): Promise<TokenRecord | null> {
    return this.read(() => {
      const row = this.q('SELECT * FROM tokens WHERE id = ?').get(id) as TokenRow | undefined;
      return row ? tokenFromRow(row) : null;
    });
  }

  async listTokens(): Promise<TokenRecord[]> {
    return this.read(() => (this.q('SELECT * FROM tokens ORDER BY created_at, id').all() as TokenRow[]).map(tokenFromRow));
  }

  async revokeToken(id: string, now: number): Promise<boolean> {
    return this.write(() => this.q('UPDATE tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL').run(now, id).changes === 1);
  }

  /** All tokens ever created, revoked ones included. */
  async countTokens(): Promise<number> {
    return this.read(() => (this.q('SELECT count(*) AS n FROM tokens').get() as { n: number }).n);
  }

  // ---- tasks ----------------------------------------------------------------

  async createTask(id: string, owner: string, spec: TaskSpec, actor: string, now: number): Promise<Task> {
    return this.write(() => {
      assertTransition('ready', 'waiting', 'released');
      let row: TaskRow;
      try {
        // Stored directly as waiting: both transitions happen in this transaction, so `ready` is never visible.
        row = this.q(
          `INSERT INTO tasks (id, owner, state, name, kind, command, args, script, interpreter, env, timeout_ms,
             max_retries, retry_base_delay_ms, retry_factor, retry_max_delay_ms, priority, labels, created_at, updated_at)
           VALUES (@id, @owner, 'waiting', @name, @kind, @command, @args, @script, @interpreter, @env, @timeout_ms,
             @max_retries, @retry_base_delay_ms, @retry_factor, @retry_max_delay_ms, @priority, @labels, @now, @now)
           RETURNING *`,
        ).get({ id, owner, now, ...taskSpecParams(spec) }) as TaskRow;
      } catch (e) {
        if (isUniqueViolation(e)) throw new ConflictError(`task ${id} already exists`);
        throw e;
      }
      this.addEvent(id, null, 'ready', 'submitted', actor, now, null);
      this.addEvent(id, 'ready', 'waiting', 'released', actor, now, null);
      this.signal({ kind: 'wake' }, { kind: 'task', taskId: id });
      return taskFromRow(row);
    });
  }

  async getTask(id: string): Promise<Task | null> {
    return this.read(() => {
      const row = this.taskRow(id);
      return row ? taskFromRow(row) : null;
    });
  }

  /**
   * Newest first (id DESC; ids are ULIDs). Keyset pagination: a page is the
   * first `limit` rows with id < cursor; one more row is fetched to know
   * whether another page exists.
   */
  async listTasks(filter: TaskFilter): Promise<TaskPage> {
    const { limit } = filter;
    if (!Number.isInteger(limit) || limit < 1) throw new InvalidInputError('limit', `must be an integer >= 1, got ${limit}`);
    return this.read(() => {
      const where: string[] = [];
      const params: Record<string, unknown> = { take: limit + 1 };
      if (filter.state !== undefined) {
        where.push('state = @state');
        params.state = filter.state;
      }
      if (filter.owner !== undefined) {
        where.push('owner = @owner');
        params.owner = filter.owner;
      }
      if (filter.namePrefix !== undefined && filter.namePrefix !== '') {
        // GLOB is case-sensitive like a prefix should be, and can use the name index; its wildcards are escaped.
        where.push('name GLOB @nameGlob');
        params.nameGlob = `${filter.namePrefix.replace(/[*?[]/g, '[$&]')}*`;
      }
      if (filter.createdAfter !== undefined) {
        where.push('created_at >= @createdAfter');
        params.createdAfter = filter.createdAfter;
      }
      if (filter.createdBefore !== undefined) {
        where.push('created_at < @createdBefore');
        params.createdBefore = filter.createdBefore;
      }
      if (filter.cursor !== undefined) {
        where.push('id < @cursor');
        params.cursor = filter.cursor;
      }
      const sql = `SELECT * FROM tasks${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY id DESC LIMIT @take`;
      const rows = this.q(sql).all(params) as TaskRow[];
      const more = rows.length > limit;
      const tasks = rows.slice(0, limit).map(taskFromRow);
      return { tasks, nextCursor: more ? tasks[tasks.length - 1]!.id : null };
    });
  }

  async listAttempts(taskId: string): Promise<Attempt[]> {
    return this.read(() => (this.q('SELECT * FROM attempts WHERE task_id = ? ORDER BY number').all(taskId) as AttemptRow[]).map(attemptFromRow));
  }

  async getAttempt(attemptId: number): Promise<Attempt | null> {
    return this.read(() => {
      const row = this.attemptRow(attemptId);
      return row ? attemptFromRow(row) : null;
    });
  }

  async listEvents(taskId: string): Promise<TaskEvent[]> {
    return this.read(() => (this.q('SELECT * FROM task_events WHERE task_id = ? ORDER BY id').all(taskId) as EventRow[]).map(eventFromRow));
  }

  // ---- scheduling -----------------------------------------------------------

  /**
   * Race-free: choosing the task and marking it running is one UPDATE whose
   * WHERE re-checks state = 'waiting', and the whole claim runs in an IMMEDIATE
   * transaction that holds SQLite's single write lock from its first
   * statement. No other writer, in this process or another, can run between
   * the choice and the update, so two callers never claim the same task; the
   * second simply gets the next one.
   */
  async claimNext(workerId: string, now: number, leaseMs: number): Promise<Claim | null> {
    return this.write(() => {
      assertTransition('waiting', 'running', 'claimed');
      const claimed = this.q(
        `UPDATE tasks SET state = 'running', updated_at = @now
         WHERE id = (SELECT id FROM tasks WHERE state = 'waiting' ORDER BY priority DESC, id ASC LIMIT 1)
           AND state = 'waiting'
         RETURNING *`,
      ).get({ now }) as TaskRow | undefined;
      if (!claimed) return null;
      const number = claimed.attempts + 1;
      const attempt = this.q(
        `INSERT INTO attempts (task_id, number, worker_id, state, started_at, lease_expires_at)
         VALUES (?, ?, ?, 'running', ?, ?) RETURNING *`,
      ).get(claimed.id, number, workerId, now, now + leaseMs) as AttemptRow;
      const task = this.q('UPDATE tasks SET attempts = ?, current_attempt_id = ? WHERE id = ? RETURNING *').get(number, attempt.id, claimed.id) as TaskRow;
      this.addEvent(task.id, 'waiting', 'running', 'claimed', SCHEDULER_ACTOR, now, { attemptId: attempt.id, attempt: number, workerId });
      this.signal({ kind: 'task', taskId: task.id });
      return { task: taskFromRow(task), attempt: attemptFromRow(attempt) };
    });
  }

  async checkReport(attemptId: number, fencingToken: number): Promise<ReportCheck> {
    return this.read(() => {
      const c = this.check(attemptId, fencingToken);
      return c.ok ? { ok: true, attempt: attemptFromRow(c.attempt) } : c;
    });
  }

  async endAttempt(
    attemptId: number,
    fencingToken: number,
    end: Omit<AttemptEndInput, 'attempt'>,
    actor: string,
    now: number,
  ): Promise<AttemptEndResult | null> {
    return this.write(() => {
      const c = this.check(attemptId, fencingToken);
      if (!c.ok) return null;
      const taskRow = this.taskRow(c.attempt.task_id)!;
      // Planned before any write: if the rules reject the end, nothing has changed.
      const plan = planAttemptEnd(taskFromRow(taskRow), { ...end, attempt: c.attempt.number }, now);
      const attempt = this.q(
        `UPDATE attempts SET state = @state, ended_at = @now, exit_code = @exitCode, signal = @signal, error = @error, duration_ms = @durationMs
         WHERE id = @id AND state = 'running' RETURNING *`,
      ).get({
        id: attemptId,
        state: end.outcome,
        now,
        exitCode: end.exitCode,
        signal: end.signal,
        error: end.error,
        durationMs: end.durationMs,
      }) as AttemptRow;
      // coalesce: a null plan.result keeps the stored one, so a result is recorded exactly once.
      const task = this.q(
        `UPDATE tasks SET state = @state, retries_used = @retriesUsed, lost_count = @lostCount, run_after = @runAfter,
           result = coalesce(@result, result), updated_at = @now
         WHERE id = @id RETURNING *`,
      ).get({
        id: taskRow.id,
        state: plan.state,
        retriesUsed: plan.retriesUsed,
        lostCount: plan.lostCount,
        runAfter: plan.runAfter,
        result: plan.result === null ? null : JSON.stringify(plan.result),
        now,
      }) as TaskRow;
      if (plan.event) {
        this.addEvent(taskRow.id, plan.event.from, plan.event.to, plan.event.reason, actor, now, { attemptId, ...plan.event.detail });
      }
      this.signal({ kind: 'task', taskId: taskRow.id });
      if (plan.state === 'waiting') this.signal({ kind: 'wake' });
      return { task: taskFromRow(task), attempt: attemptFromRow(attempt) };
    });
  }

  /**
   * An event (from = to = the task's state) that says a report was refused.
   * An attempt id that never existed has no task to record it on: nothing is written.
   */
  async recordFencedReport(attemptId: number, kind: string, actor: string, now: number): Promise<void> {
    await this.write(() => {
      const row = this.q('SELECT t.id, t.state FROM attempts a JOIN tasks t ON t.id = a.task_id WHERE a.id = ?').get(attemptId) as
        | { id: string; state: TaskState }
        | undefined;
      if (!row) return;
      this.addEvent(row.id, row.state, row.state, 'fenced_report', actor, now, { attemptId, kind });
    });
  }

  async renewLeases(workerId: string, attemptIds: number[], now: number, leaseMs: number): Promise<number> {
    if (attemptIds.length === 0) return 0;
    return this.write(
      () =>
        this.q(
          `UPDATE attempts SET lease_expires_at = ?
           WHERE worker_id = ? AND state = 'running' AND id IN (SELECT value FROM json_each(?))`,
        ).run(now + leaseMs, workerId, JSON.stringify(attemptIds)).changes,
    );
  }

  async expiredAttempts(now: number): Promise<Attempt[]> {
    return this.read(() =>
      (this.q("SELECT * FROM attempts WHERE state = 'running' AND lease_expires_at < ? ORDER BY lease_expires_at, id").all(now) as AttemptRow[]).map(
        attemptFromRow,
      ),
    );
  }

  async promoteDue(now: number): Promise<string[]> {
    return this.write(() => {
      const due = this.q("SELECT id, run_after FROM tasks WHERE state = 'retrying' AND run_after <= ? ORDER BY run_after, id").all(now) as Array<
        Pick<TaskRow, 'id' | 'run_after'>
      >;
      const promote = this.q("UPDATE tasks SET state = 'waiting', run_after = NULL, updated_at = ? WHERE id = ? AND state = 'retrying'");
      for (const t of due) {
        assertTransition('retrying', 'waiting', 'backoff_elapsed');
        promote.run(now, t.id);
        this.addEvent(t.id, 'retrying', 'waiting', 'backoff_elapsed', SCHEDULER_ACTOR, now, { runAfter: t.run_after });
        this.signal({ kind: 'wake' }, { kind: 'task', taskId: t.id });
      }
      return due.map((t) => t.id);
    });
  }

  async nextDueAt(): Promise<number | null> {
    return this.read(() => (this.q("SELECT min(run_after) AS t FROM tasks WHERE state = 'retrying'").get() as { t: number | null }).t);
  }

  /**
   * A running task becomes cancelled at once; its attempt stays running until
   * the worker reports the end (endAttempt then records the result without a
   * second transition), or its lease expires.
   */
  async cancelTask(id: string, actor: string, now: number): Promise<CancelResult> {
    return this.write(() => {
      const row = this.taskRow(id);
      if (!row) throw new NotFoundError('task', id);
      const from = row.state as TaskState;
      if (isTerminal(from)) throw new ConflictError(`task ${id} is ${from}; only a task that has not ended can be cancelled`);
      assertTransition(from, 'cancelled', 'cancel_requested');
      const running =
        from === 'running' && row.current_attempt_id !== null
          ? (this.q("SELECT * FROM attempts WHERE id = ? AND state = 'running'").get(row.current_attempt_id) as AttemptRow | undefined)
          : undefined;
      const task = this.q("UPDATE tasks SET state = 'cancelled', run_after = NULL, updated_at = ? WHERE id = ? RETURNING *").get(now, id) as TaskRow;
      this.addEvent(id, from, 'cancelled', 'cancel_requested', actor, now, running ? { attemptId: running.id } : null);
      this.signal({ kind: 'task', taskId: id });
      if (running) this.signal({ kind: 'cancel', taskId: id, attemptId: running.id });
      return { task: taskFromRow(task), runningAttempt: running ? attemptFromRow(running) : null };
    });
  }

  /**
   * A task cancelled while running may still have its attempt marked running
   * (the worker has not reported yet). That attempt is ended here as
   * `cancelled`: the new attempt will fence it anyway, and a running row nobody
   * can end would come back from expiredAttempts forever.
   */
  async retryTask(id: string, actor: string, now: number): Promise<Task> {
    return this.write(() => {
      const row = this.taskRow(id);
      if (!row) throw new NotFoundError('task', id);
      const from = row.state as TaskState;
      if (from !== 'failed' && from !== 'cancelled') throw new ConflictError(`task ${id} is ${from}; only a failed or cancelled task can be retried`);
      assertTransition(from, 'waiting', 'manual_retry');
      let superseded: number | null = null;
      if (row.current_attempt_id !== null) {
        const r = this.q(
          "UPDATE attempts SET state = 'cancelled', ended_at = ?, error = 'superseded by a manual retry before its worker reported' WHERE id = ? AND state = 'running'",
        ).run(now, row.current_attempt_id);
        if (r.changes === 1) superseded = row.current_attempt_id;
      }
      const task = this.q(
        "UPDATE tasks SET state = 'waiting', retries_used = 0, lost_count = 0, result = NULL, run_after = NULL, updated_at = ? WHERE id = ? RETURNING *",
      ).get(now, id) as TaskRow;
      // The previous result is cleared on the task; the event keeps it in the history.
      const detail: Record<string, unknown> = { previousResult: row.result === null ? null : (JSON.parse(row.result) as unknown) };
      if (superseded !== null) detail.supersededAttemptId = superseded;
      this.addEvent(id, from, 'waiting', 'manual_retry', actor, now, detail);
      this.signal({ kind: 'wake' }, { kind: 'task', taskId: id });
      return taskFromRow(task);
    });
  }

  // ---- logs -----------------------------------------------------------------

  /** A chunk whose (attempt, seq) is already stored is skipped, so an agent's re-send after a reconnect is harmless. */
  async appendLogs(attemptId: number, fencingToken: number, chunks: NewLogChunk[], now: number): Promise<boolean> {
    return this.write(() => {
      const c = this.check(attemptId, fencingToken);
      if (!c.ok) return false;
      const insert = this.q(
        `INSERT INTO log_chunks (task_id, attempt, seq, stream, at, data) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (task_id, attempt, seq) DO NOTHING`,
      );
      for (const ch of chunks) insert.run(c.attempt.task_id, c.attempt.number, ch.seq, ch.stream, now, ch.data);
      this.signal({ kind: 'task', taskId: c.attempt.task_id });
      return true;
    });
  }

  async readLogs(taskId: string, afterId: number, limit: number, attempt?: number): Promise<LogChunk[]> {
    return this.read(() => {
      const rows =
        attempt === undefined
          ? this.q('SELECT * FROM log_chunks WHERE task_id = ? AND id > ? ORDER BY id LIMIT ?').all(taskId, afterId, limit)
          : this.q('SELECT * FROM log_chunks WHERE task_id = ? AND id > ? AND attempt = ? ORDER BY id LIMIT ?').all(taskId, afterId, attempt, limit);
      return (rows as LogChunkRow[]).map(logChunkFromRow);
    });
  }

  // ---- workers --------------------------------------------------------------

  async upsertWorker(w: Omit<WorkerRecord, 'state'>): Promise<void> {
    await this.write(() => {
      this.q(
        `INSERT INTO workers (id, hostname, slots, labels, connected_at, last_seen_at, state)
         VALUES (@id, @hostname, @slots, @labels, @connectedAt, @lastSeenAt, 'connected')
         ON CONFLICT (id) DO UPDATE SET hostname = excluded.hostname, slots = excluded.slots, labels = excluded.labels,
           connected_at = excluded.connected_at, last_seen_at = excluded.last_seen_at, state = 'connected'`,
      ).run({ id: w.id, hostname: w.hostname, slots: w.slots, labels: JSON.stringify(w.labels), connectedAt: w.connectedAt, lastSeenAt: w.lastSeenAt });
    });
  }

  async markWorkerDisconnected(id: string, now: number): Promise<void> {
    await this.write(() => {
      this.q("UPDATE workers SET state = 'disconnected', last_seen_at = ? WHERE id = ?").run(now, id);
    });
  }

  async requestDrain(workerId: string, reason: string): Promise<boolean> {
    return this.write(() => {
      if (!this.q('SELECT 1 FROM workers WHERE id = ?').get(workerId)) return false;
      this.signal({ kind: 'drain', workerId, reason });
      return true;
    });
  }

  async listWorkers(): Promise<WorkerRecord[]> {
    return this.read(() => (this.q('SELECT * FROM workers ORDER BY id').all() as WorkerRow[]).map(workerFromRow));
  }
}
