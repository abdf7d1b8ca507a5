/**
 * The PostgreSQL store: several Drover servers share one database (design.md:
 * the datastore is also the queue). Same behaviour as the SQLite store (one
 * contract suite, test/store/contract.ts); what differs is concurrency.
 *
 * Concurrency model. Every write is one READ COMMITTED transaction (db.ts).
 * Where SQLite relies on its single writer, this store takes row locks, always
 * in the same order so that writers cannot deadlock:
 *   - a task row is locked (FOR NO KEY UPDATE) before anything that depends on
 *     its state or its current attempt is read: claimNext, endAttempt,
 *     cancelTask, retryTask, promoteDue. Every change to a task, and to the
 *     state of its attempts, happens under that lock, so a check made after
 *     taking it stays true until COMMIT;
 *   - appendLogs locks the attempt row instead (it changes no task), which also
 *     serializes the appends of one attempt so log ids are committed in order;
 *   - NO KEY UPDATE rather than UPDATE: the foreign-key checks of inserts that
 *     reference the row (events, attempts, log chunks) take KEY SHARE locks,
 *     which NO KEY UPDATE does not block.
 * Signals: `cancel` is NOTIFYed inside the changing transaction, the hints right after its COMMIT (db.ts).
 */
import pg from 'pg';
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
import { Db, STORE_TYPES, type Queryable } from './db.js';
import { LATEST_SCHEMA_VERSION, MIGRATION_LOCK, MIGRATIONS } from './migrations.js';
import { isUniqueViolation } from './pg-errors.js';
import {
  attemptFromRow,
  eventFromRow,
  logChunkFromRow,
  taskFromRow,
  TASK_SPEC_COLUMNS,
  taskSpecValues,
  tokenFromRow,
  workerFromRow,
  type AttemptRow,
  type EventRow,
  type LogChunkRow,
  type TaskRow,
  type TokenRow,
  type WorkerRow,
} from './rows.js';
import { SignalHub } from './signals.js';

/** Actor of the transitions the scheduler makes on its own (claim, backoff). */
const SCHEDULER_ACTOR = 'scheduler';

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
    client: { ...client, query_timeout: 10_000 },
    pingMs: opts.listenPingMs ?? 30_000,
    onError: (err) => opts.onError?.(err, 'listen'),
  });
  return new PostgresStore(pool, hub, poolSize);
}

export class PostgresStore implements Store {
  readonly capabilities = { multiServer: true, groupCommit: false } as const;
  private readonly db: Db;
  private closing: Promise<void> | null = null;

  constructor(
    /** Exposed for diagnostics and tests, not for callers to write through. */
    readonly pool: pg.Pool,
    private readonly hub: SignalHub,
    poolSize: number,
  ) {
    this.db = new Db(pool, hub, poolSize);
  }

  // ---- signals and leadership -----------------------------------------------

  onSignal(listener: (signal: StoreSignal) => void): () => void {
    return this.hub.subscribe(listener);
  }

  /** Resolves once this store is LISTENing (starts the LISTEN connection if needed). For tests and readiness checks. */
  whenListening(): Promise<void> {
    return this.hub.whenListening();
  }

  /** One statement: the row lock of INSERT ... ON CONFLICT makes contenders queue, and the WHERE admits one. */
  async acquireLeadership(name: string, holder: string, now: number, ttlMs: number): Promise<boolean> {
    return this.db.write(async (tx) => {
      const r = await tx.query(
        `INSERT INTO leaders (name, holder, expires_at) VALUES ($1, $2, $3)
         ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
         WHERE leaders.holder = EXCLUDED.holder OR leaders.expires_at < $4
         RETURNING holder`,
        [name, holder, now + ttlMs, now],
      );
      return r.rowCount === 1;
    });
  }

  // ---- plumbing -------------------------------------------------------------

  private async taskRow(q: Queryable, id: string, lock = false): Promise<TaskRow | undefined> {
    const r = await q.query<TaskRow>(`SELECT * FROM tasks WHERE id = $1${lock ? ' FOR NO KEY UPDATE' : ''}`, [id]);
    return r.rows[0];
  }

  private async attemptRow(q: Queryable, id: number): Promise<AttemptRow | undefined> {
    if (!Number.isSafeInteger(id)) return undefined;
    const r = await q.query<AttemptRow>('SELECT * FROM attempts WHERE id = $1', [id]);
    return r.rows[0];
  }

  private async addEvent(
    q: Queryable,
    taskId: string,
    from: TaskState | null,
    to: TaskState,
    reason: TransitionReason | 'fenced_report',
    actor: string,
    at: number,
    detail: Record<string, unknown> | null,
  ): Promise<void> {
    await q.query('INSERT INTO task_events (task_id, from_state, to_state, reason, actor, at, detail) VALUES ($1, $2, $3, $4, $5, $6, $7)', [
      taskId,
      from,
      to,
      reason,
      actor,
      at,
      detail === null ? null : JSON.stringify(detail),
    ]);
  }

  /**
   * The fence every report passes: the attempt exists, the token is its id, it
   * is still running, and it is its task's current attempt. `lockAttempt` takes
   * the attempt row's lock first (appendLogs); the task checks are read after
   * it, so they see every change committed before the lock was granted.
   */
  private async check(
    q: Queryable,
    attemptId: number,
    fencingToken: number,
    lockAttempt = false,
  ): Promise<{ ok: true; attempt: AttemptRow } | { ok: false; reason: string }> {
    if (!Number.isSafeInteger(attemptId)) return { ok: false, reason: 'unknown_attempt' };
    const a = (await q.query<AttemptRow>(`SELECT * FROM attempts WHERE id = $1${lockAttempt ? ' FOR NO KEY UPDATE' : ''}`, [attemptId])).rows[0];
    if (!a) return { ok: false, reason: 'unknown_attempt' };
    if (fencingToken !== a.id) return { ok: false, reason: 'stale_token' };
    if (a.state !== 'running') return { ok: false, reason: 'attempt_ended' };
    const t = (await q.query<Pick<TaskRow, 'current_attempt_id'>>('SELECT current_attempt_id FROM tasks WHERE id = $1', [a.task_id])).rows[0];
    if (!t || t.current_attempt_id !== a.id) return { ok: false, reason: 'not_current' };
    return { ok: true, attempt: a };
  }

  // ---- lifecycle ------------------------------------------------------------

  /**
   * One transaction under a transaction-level advisory lock: servers starting
   * together queue here, the first applies the migrations, the others then see
   * them applied and do nothing. DDL is transactional, so a failed migration
   * leaves the previous version intact.
   */
  async migrate(): Promise<void> {
    await this.db.write(async (tx) => {
      // Migrations may be long on a big database, and waiting for another server's is expected.
      await tx.query('SET LOCAL statement_timeout = 0');
      await tx.query('SELECT pg_advisory_xact_lock($1::int, $2::int)', [...MIGRATION_LOCK]);
      await tx.query('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)');
      const current = (await tx.query<{ v: number }>('SELECT coalesce(max(version), 0) AS v FROM schema_migrations')).rows[0]!.v;
      if (current > LATEST_SCHEMA_VERSION) {
        throw new Error(
          `database schema version ${current} is newer than this Drover understands (${LATEST_SCHEMA_VERSION}); upgrade Drover ` +
            '(the database was migrated by a newer Drover; running older code on it could corrupt it)',
        );
      }
      for (const m of [...MIGRATIONS].sort((a, b) => a.version - b.version)) {
        if (m.version <= current) continue;
        await tx.query(m.sql);
        await tx.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [m.version, m.name, Date.now()]);
      }
    });
  }

  /** Stops the LISTEN connection and ends the pool (after the calls in flight). Idempotent. */
  async close(): Promise<void> {
    this.closing ??= (async () => {
      await this.hub.close();
      await this.pool.end();
    })();
    return this.closing;
  }

  // ---- tokens ---------------------------------------------------------------

  async createToken(t: Omit<TokenRecord, 'revokedAt' | 'lastUsedAt'>): Promise<TokenRecord> {
    return this.db.write(async (tx) => {
      try {
        const r = await tx.query<TokenRow>('INSERT INTO tokens (id, name, "user", role, secret_hash, created_at) VALUES ($1, $2, $3, $4, $5, $6) RETURNING *', [
          t.id,
          t.name,
          t.user,
          t.role,
          t.secretHash,
          t.createdAt,
        ]);
        return tokenFromRow(r.rows[0]!);
      } catch (e) {
        if (isUniqueViolation(e)) throw new ConflictError(`token ${t.id} (or its secret) already exists`);
        throw e;
      }
    });
  }

  async getToken(id: string): Promise<TokenRecord | null> {
    return this.db.read(async (q) => {
      const row = (await q.query<TokenRow>('SELECT * FROM tokens WHERE id = $1', [id])).rows[0];
      return row ? tokenFromRow(row) : null;
    });
  }

  async listTokens(): Promise<TokenRecord[]> {
    return this.db.read(async (q) => (await q.query<TokenRow>('SELECT * FROM tokens ORDER BY created_at, id')).rows.map(tokenFromRow));
  }

  async revokeToken(id: string, now: number): Promise<boolean> {
    return this.db.write(async (tx) => (await tx.query('UPDATE tokens SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL', [now, id])).rowCount === 1);
  }

  /** All tokens ever created, revoked ones included. */
  async countTokens(): Promise<number> {
    return this.db.read(async (q) => (await q.query<{ n: number }>('SELECT count(*) AS n FROM tokens')).rows[0]!.n);
  }

  // ---- tasks ----------------------------------------------------------------

  async createTask(id: string, owner: string, spec: TaskSpec, actor: string, now: number): Promise<Task> {
    return this.db.write(async (tx) => {
      assertTransition('ready', 'waiting', 'released');
      const values = taskSpecValues(spec);
      let row: TaskRow;
      try {
        // One statement: the task and its two events (submitted, released), in that order.
        const placeholders = values.map((_, i) => `$${i + 5}`).join(', ');
        row = (
          await tx.query<TaskRow>(
            `WITH t AS (
               INSERT INTO tasks (id, owner, created_at, updated_at, state, ${TASK_SPEC_COLUMNS.join(', ')})
               VALUES ($1, $2, $3, $3, 'waiting', ${placeholders}) RETURNING *
             ), e AS (
               INSERT INTO task_events (task_id, from_state, to_state, reason, actor, at, detail)
               SELECT t.id, v.f, v.s, v.r, $4::text, $3::bigint, NULL
               FROM t, (VALUES (1, NULL::text, 'ready', 'submitted'), (2, 'ready', 'waiting', 'released')) AS v(o, f, s, r)
               ORDER BY v.o
             )
             SELECT * FROM t`,
            [id, owner, now, actor, ...values],
          )
        ).rows[0]!;
      } catch (e) {
        if (isUniqueViolation(e)) throw new ConflictError(`task ${id} already exists`);
        throw e;
      }
      tx.signal({ kind: 'wake' }, { kind: 'task', taskId: id });
      return taskFromRow(row);
    });
  }

  async getTask(id: string): Promise<Task | null> {
    return this.db.read(async (q) => {
      const row = await this.taskRow(q, id);
      return row ? taskFromRow(row) : null;
    });
  }

  /**
   * Newest first (id DESC; ids are ULIDs, compared byte-wise in the "C"
   * collation). Keyset pagination: a page is the first `limit` rows with
   * id < cursor; one more row is fetched to know whether another page exists.
   */
  async listTasks(filter: TaskFilter): Promise<TaskPage> {
    const { limit } = filter;
    if (!Number.isInteger(limit) || limit < 1) throw new InvalidInputError('limit', `must be an integer >= 1, got ${limit}`);
    const where: string[] = [];
    const params: unknown[] = [];
    const add = (sql: (p: string) => string, value: unknown) => {
      params.push(value);
      where.push(sql(`$${params.length}`));
    };
    if (filter.state !== undefined) add((p) => `state = ${p}`, filter.state);
    if (filter.owner !== undefined) add((p) => `owner = ${p}`, filter.owner);
    if (filter.namePrefix !== undefined && filter.namePrefix !== '') {
      // LIKE is case-sensitive; its wildcards (and the escape character) in the prefix are taken literally.
      add((p) => `name LIKE ${p} ESCAPE '\\'`, `${filter.namePrefix.replace(/[\\%_]/g, '\\$&')}%`);
    }
    if (filter.createdAfter !== undefined) add((p) => `created_at >= ${p}`, filter.createdAfter);
    if (filter.createdBefore !== undefined) add((p) => `created_at < ${p}`, filter.createdBefore);
    if (filter.cursor !== undefined) add((p) => `id < ${p}`, filter.cursor);
    params.push(limit + 1);
    const sql = `SELECT * FROM tasks${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY id DESC LIMIT $${params.length}`;
    return this.db.read(async (q) => {
      const rows = (await q.query<TaskRow>(sql, params)).rows;
      const more = rows.length > limit;
      const tasks = rows.slice(0, limit).map(taskFromRow);
      return { tasks, nextCursor: more ? tasks[tasks.length - 1]!.id : null };
    });
  }

  async listAttempts(taskId: string): Promise<Attempt[]> {
    return this.db.read(async (q) => (await q.query<AttemptRow>('SELECT * FROM attempts WHERE task_id = $1 ORDER BY number', [taskId])).rows.map(attemptFromRow));
  }

  async getAttempt(attemptId: number): Promise<Attempt | null> {
    return this.db.read(async (q) => {
      const row = await this.attemptRow(q, attemptId);
      return row ? attemptFromRow(row) : null;
    });
  }

  async listEvents(taskId: string): Promise<TaskEvent[]> {
    return this.db.read(async (q) => (await q.query<EventRow>('SELECT * FROM task_events WHERE task_id = $1 ORDER BY id', [taskId])).rows.map(eventFromRow));
  }

  // ---- scheduling -----------------------------------------------------------

  /**
   * One statement picks the task, marks it running, creates the attempt and
   * writes the event (data-modifying CTEs; the attempt id is drawn from its
   * sequence up front so the task row is updated only once).
   *
   * Race-free across any number of servers: `next` takes the row lock of the
   * task it picks (FOR NO KEY UPDATE) and holds it until COMMIT. A concurrent
   * claimer SKIPs rows locked by another claimer instead of waiting; if it
   * reaches a row that another claimer has already committed, PostgreSQL
   * re-evaluates `state = 'waiting'` on the newest version of the row once
   * the lock is granted (READ COMMITTED re-check), finds it running and moves
   * on to the next row. A task is therefore updated from waiting to running by
   * exactly one transaction: two servers can never claim the same task, and
   * each claimer gets a different task, or null when every waiting task is
   * taken.
   */
  async claimNext(workerId: string, now: number, leaseMs: number): Promise<Claim | null> {
    // One statement, so no explicit transaction (Db.single explains the trade-off).
    return this.db.single(async (tx) => {
      assertTransition('waiting', 'running', 'claimed');
      const r = await tx.query<{ task: TaskRow; attempt: AttemptRow }>(
        `WITH next AS (
           SELECT id FROM tasks
           WHERE state = 'waiting'
           ORDER BY priority DESC, id ASC
           LIMIT 1
           FOR NO KEY UPDATE SKIP LOCKED
         ), claimed AS (
           UPDATE tasks t
           SET state = 'running', attempts = t.attempts + 1, current_attempt_id = nextval('attempts_id_seq'), updated_at = $1::bigint
           FROM next
           WHERE t.id = next.id AND t.state = 'waiting'
           RETURNING t.*
         ), attempt AS (
           INSERT INTO attempts (id, task_id, number, worker_id, state, started_at, lease_expires_at)
           SELECT current_attempt_id, id, attempts, $2::text, 'running', $1::bigint, $1::bigint + $3::bigint FROM claimed
           RETURNING *
         ), event AS (
           INSERT INTO task_events (task_id, from_state, to_state, reason, actor, at, detail)
           SELECT id, 'waiting', 'running', 'claimed', $4::text, $1::bigint,
                  json_build_object('attemptId', current_attempt_id, 'attempt', attempts, 'workerId', $2::text)::text
           FROM claimed
         )
         SELECT to_json(c) AS task, to_json(a) AS attempt FROM claimed c JOIN attempt a ON a.id = c.current_attempt_id`,
        [now, workerId, leaseMs, SCHEDULER_ACTOR],
      );
      const row = r.rows[0];
      if (!row) return null;
      tx.signal({ kind: 'task', taskId: row.task.id });
      return { task: taskFromRow(row.task), attempt: attemptFromRow(row.attempt) };
    });
  }

  async checkReport(attemptId: number, fencingToken: number): Promise<ReportCheck> {
    return this.db.read(async (q) => {
      const c = await this.check(q, attemptId, fencingToken);
      return c.ok ? { ok: true, attempt: attemptFromRow(c.attempt) } : c;
    });
  }

  /**
   * Fenced: the task row is locked first, then the attempt is checked (current,
   * running, token) and the plan of core/attempt-end.ts applied, all in one
   * transaction. Two servers ending the same attempt queue on the lock; the
   * second finds it ended and returns null.
   */
  async endAttempt(
    attemptId: number,
    fencingToken: number,
    end: Omit<AttemptEndInput, 'attempt'>,
    actor: string,
    now: number,
  ): Promise<AttemptEndResult | null> {
    if (!Number.isSafeInteger(attemptId)) return null;
    return this.db.write(async (tx) => {
      // 1. Lock the task and the attempt and read both: the fence is checked under the
      //    locks. Both rows are locked so that, after waiting for a concurrent end,
      //    PostgreSQL re-reads both (READ COMMITTED re-check), not only the task.
      const cur = (
        await tx.query<{ task: TaskRow; attempt: AttemptRow }>(
          `SELECT to_json(t) AS task, to_json(a) AS attempt FROM attempts a JOIN tasks t ON t.id = a.task_id
           WHERE a.id = $1 FOR NO KEY UPDATE OF t, a`,
          [attemptId],
        )
      ).rows[0];
      if (!cur) return null;
      const { task: taskRow, attempt: attemptRow } = cur;
      if (fencingToken !== attemptRow.id || attemptRow.state !== 'running' || taskRow.current_attempt_id !== attemptRow.id) return null;
      // Planned before any write: if the rules reject the end, nothing has changed.
      const plan = planAttemptEnd(taskFromRow(taskRow), { ...end, attempt: attemptRow.number }, now);
      const detail = plan.event ? JSON.stringify({ attemptId, ...plan.event.detail }) : null;
      // 2. One statement applies the attempt's end, the task's plan and its event.
      //    coalesce: a null plan.result keeps the stored one, so a result is recorded exactly once.
      const r = (
        await tx.query<{ task: TaskRow; attempt: AttemptRow }>(
          `WITH a AS (
             UPDATE attempts SET state = $2, ended_at = $3, exit_code = $4, signal = $5, error = $6, duration_ms = $7
             WHERE id = $1 AND state = 'running' RETURNING *
           ), t AS (
             UPDATE tasks SET state = $9, retries_used = $10, lost_count = $11, run_after = $12, result = coalesce($13, result), updated_at = $3
             WHERE id = $8 RETURNING *
           ), e AS (
             INSERT INTO task_events (task_id, from_state, to_state, reason, actor, at, detail)
             SELECT $8, $14::text, $9, $15::text, $16::text, $3, $17::text WHERE $15::text IS NOT NULL
           )
           SELECT to_json(t) AS task, to_json(a) AS attempt FROM a, t`,
          [
            attemptId,
            end.outcome,
            now,
            end.exitCode,
            end.signal,
            end.error,
            end.durationMs,
            taskRow.id,
            plan.state,
            plan.retriesUsed,
            plan.lostCount,
            plan.runAfter,
            plan.result === null ? null : JSON.stringify(plan.result),
            plan.event?.from ?? null,
            plan.event?.reason ?? null,
            actor,
            detail,
          ],
        )
      ).rows[0]!;
      tx.signal({ kind: 'task', taskId: taskRow.id });
      if (plan.state === 'waiting') tx.signal({ kind: 'wake' });
      return { task: taskFromRow(r.task), attempt: attemptFromRow(r.attempt) };
    });
  }

  /**
   * An event (from = to = the task's state) that says a report was refused.
   * An attempt id that never existed has no task to record it on: nothing is written.
   */
  async recordFencedReport(attemptId: number, kind: string, actor: string, now: number): Promise<void> {
    if (!Number.isSafeInteger(attemptId)) return;
    await this.db.write(async (tx) => {
      await tx.query(
        `INSERT INTO task_events (task_id, from_state, to_state, reason, actor, at, detail)
         SELECT t.id, t.state, t.state, 'fenced_report', $2, $3, $4 FROM attempts a JOIN tasks t ON t.id = a.task_id WHERE a.id = $1`,
        [attemptId, actor, now, JSON.stringify({ attemptId, kind })],
      );
    });
  }

  async renewLeases(workerId: string, attemptIds: number[], now: number, leaseMs: number): Promise<number> {
    // Sorted: concurrent renewals lock the rows in the same order.
    const ids = [...new Set(attemptIds.filter((id) => Number.isSafeInteger(id)))].sort((a, b) => a - b);
    if (ids.length === 0) return 0;
    return this.db.write(
      async (tx) =>
        (
          await tx.query(`UPDATE attempts SET lease_expires_at = $1 WHERE worker_id = $2 AND state = 'running' AND id = ANY($3::bigint[])`, [
            now + leaseMs,
            workerId,
            ids,
          ])
        ).rowCount ?? 0,
    );
  }

  async expiredAttempts(now: number): Promise<Attempt[]> {
    return this.db.read(async (q) =>
      (await q.query<AttemptRow>("SELECT * FROM attempts WHERE state = 'running' AND lease_expires_at < $1 ORDER BY lease_expires_at, id", [now])).rows.map(
        attemptFromRow,
      ),
    );
  }

  /**
   * Locks the due tasks (skipping those another transaction holds: another
   * server is promoting or cancelling them) and moves them in one statement;
   * the events follow in due order.
   */
  async promoteDue(now: number): Promise<string[]> {
    return this.db.write(async (tx) => {
      assertTransition('retrying', 'waiting', 'backoff_elapsed');
      const promoted = (
        await tx.query<{ id: string; run_after: number }>(
          `WITH due AS (
             SELECT id, run_after FROM tasks
             WHERE state = 'retrying' AND run_after <= $1
             ORDER BY run_after, id
             FOR NO KEY UPDATE SKIP LOCKED
           )
           UPDATE tasks t SET state = 'waiting', run_after = NULL, updated_at = $1
           FROM due WHERE t.id = due.id AND t.state = 'retrying'
           RETURNING t.id, due.run_after`,
          [now],
        )
      ).rows.sort((a, b) => a.run_after - b.run_after || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      if (promoted.length === 0) return [];
      await tx.query(
        `INSERT INTO task_events (task_id, from_state, to_state, reason, actor, at, detail)
         SELECT u.id, 'retrying', 'waiting', 'backoff_elapsed', $1, $2, u.detail
         FROM unnest($3::text[], $4::text[]) WITH ORDINALITY AS u(id, detail, n) ORDER BY u.n`,
        [SCHEDULER_ACTOR, now, promoted.map((p) => p.id), promoted.map((p) => JSON.stringify({ runAfter: p.run_after }))],
      );
      for (const p of promoted) tx.signal({ kind: 'wake' }, { kind: 'task', taskId: p.id });
      return promoted.map((p) => p.id);
    });
  }

  async nextDueAt(): Promise<number | null> {
    return this.db.read(async (q) => (await q.query<{ t: number | null }>("SELECT min(run_after) AS t FROM tasks WHERE state = 'retrying'")).rows[0]!.t);
  }

  /**
   * A running task becomes cancelled at once; its attempt stays running until
   * the worker reports the end (endAttempt then records the result without a
   * second transition), or its lease expires.
   */
  async cancelTask(id: string, actor: string, now: number): Promise<CancelResult> {
    return this.db.write(async (tx) => {
      const row = await this.taskRow(tx, id, true);
      if (!row) throw new NotFoundError('task', id);
      const from = row.state as TaskState;
      if (isTerminal(from)) throw new ConflictError(`task ${id} is ${from}; only a task that has not ended can be cancelled`);
      assertTransition(from, 'cancelled', 'cancel_requested');
      const running =
        from === 'running' && row.current_attempt_id !== null
          ? (await tx.query<AttemptRow>("SELECT * FROM attempts WHERE id = $1 AND state = 'running'", [row.current_attempt_id])).rows[0]
          : undefined;
      const task = (await tx.query<TaskRow>("UPDATE tasks SET state = 'cancelled', run_after = NULL, updated_at = $1 WHERE id = $2 RETURNING *", [now, id])).rows[0]!;
      await this.addEvent(tx, id, from, 'cancelled', 'cancel_requested', actor, now, running ? { attemptId: running.id } : null);
      tx.signal({ kind: 'task', taskId: id });
      if (running) tx.signal({ kind: 'cancel', taskId: id, attemptId: running.id });
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
    return this.db.write(async (tx) => {
      const row = await this.taskRow(tx, id, true);
      if (!row) throw new NotFoundError('task', id);
      const from = row.state as TaskState;
      if (from !== 'failed' && from !== 'cancelled') throw new ConflictError(`task ${id} is ${from}; only a failed or cancelled task can be retried`);
      assertTransition(from, 'waiting', 'manual_retry');
      let superseded: number | null = null;
      if (row.current_attempt_id !== null) {
        const r = await tx.query(
          "UPDATE attempts SET state = 'cancelled', ended_at = $1, error = 'superseded by a manual retry before its worker reported' WHERE id = $2 AND state = 'running'",
          [now, row.current_attempt_id],
        );
        if (r.rowCount === 1) superseded = row.current_attempt_id;
      }
      const task = (
        await tx.query<TaskRow>(
          "UPDATE tasks SET state = 'waiting', retries_used = 0, lost_count = 0, result = NULL, run_after = NULL, updated_at = $1 WHERE id = $2 RETURNING *",
          [now, id],
        )
      ).rows[0]!;
      // The previous result is cleared on the task; the event keeps it in the history.
      const detail: Record<string, unknown> = { previousResult: row.result === null ? null : (JSON.parse(row.result) as unknown) };
      if (superseded !== null) detail.supersededAttemptId = superseded;
      await this.addEvent(tx, id, from, 'waiting', 'manual_retry', actor, now, detail);
      tx.signal({ kind: 'wake' }, { kind: 'task', taskId: id });
      return taskFromRow(task);
    });
  }

  // ---- logs -----------------------------------------------------------------

  /**
   * A chunk whose (attempt, seq) is already stored is skipped, so an agent's
   * re-send after a reconnect is harmless. The attempt row is locked first:
   * appends of one attempt (from any server) run one after another, so their
   * log ids are committed in increasing order and a follower reading "id >
   * cursor" never skips a chunk committed late; and an attempt ended
   * concurrently is seen as ended.
   */
  async appendLogs(attemptId: number, fencingToken: number, chunks: NewLogChunk[], now: number): Promise<boolean> {
    return this.db.write(async (tx) => {
      const c = await this.check(tx, attemptId, fencingToken, true);
      if (!c.ok) return false;
      if (chunks.length > 0) {
        await tx.query(
          `INSERT INTO log_chunks (task_id, attempt, seq, stream, at, data)
           SELECT $1, $2, u.seq, u.stream, $3, u.data
           FROM unnest($4::int[], $5::text[], $6::bytea[]) WITH ORDINALITY AS u(seq, stream, data, n)
           ORDER BY u.n
           ON CONFLICT (task_id, attempt, seq) DO NOTHING`,
          [c.attempt.task_id, c.attempt.number, now, chunks.map((ch) => ch.seq), chunks.map((ch) => ch.stream), chunks.map((ch) => ch.data)],
        );
      }
      tx.signal({ kind: 'task', taskId: c.attempt.task_id });
      return true;
    });
  }

  async readLogs(taskId: string, afterId: number, limit: number, attempt?: number): Promise<LogChunk[]> {
    return this.db.read(async (q) => {
      const r =
        attempt === undefined
          ? await q.query<LogChunkRow>('SELECT * FROM log_chunks WHERE task_id = $1 AND id > $2 ORDER BY id LIMIT $3', [taskId, afterId, limit])
          : await q.query<LogChunkRow>('SELECT * FROM log_chunks WHERE task_id = $1 AND id > $2 AND attempt = $3 ORDER BY id LIMIT $4', [taskId, afterId, attempt, limit]);
      return r.rows.map(logChunkFromRow);
    });
  }

  // ---- workers --------------------------------------------------------------

  async upsertWorker(w: Omit<WorkerRecord, 'state'>): Promise<void> {
    await this.db.write(async (tx) => {
      await tx.query(
        `INSERT INTO workers (id, hostname, slots, labels, connected_at, last_seen_at, state)
         VALUES ($1, $2, $3, $4, $5, $6, 'connected')
         ON CONFLICT (id) DO UPDATE SET hostname = EXCLUDED.hostname, slots = EXCLUDED.slots, labels = EXCLUDED.labels,
           connected_at = EXCLUDED.connected_at, last_seen_at = EXCLUDED.last_seen_at, state = 'connected'`,
        [w.id, w.hostname, w.slots, JSON.stringify(w.labels), w.connectedAt, w.lastSeenAt],
      );
    });
  }

  async markWorkerDisconnected(id: string, now: number): Promise<void> {
    await this.db.write(async (tx) => {
      await tx.query("UPDATE workers SET state = 'disconnected', last_seen_at = $1 WHERE id = $2", [now, id]);
    });
  }

  async requestDrain(workerId: string, reason: string): Promise<boolean> {
    return this.db.write(async (tx) => {
      if ((await tx.query('SELECT 1 FROM workers WHERE id = $1', [workerId])).rowCount === 0) return false;
      tx.signal({ kind: 'drain', workerId, reason });
      return true;
    });
  }

  async listWorkers(): Promise<WorkerRecord[]> {
    return this.db.read(async (q) => (await q.query<WorkerRow>('SELECT * FROM workers ORDER BY id')).rows.map(workerFromRow));
  }
}

