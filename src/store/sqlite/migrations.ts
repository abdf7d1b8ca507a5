/**
 * Schema history of the SQLite store. Append only: a released migration is
 * never edited, a change is a new entry with the next version. `migrate()`
 * applies the entries newer than the database's version, in order, in one
 * transaction, and refuses a database whose version is newer than the last
 * entry here (it was written by a newer Drover; running old code on it could
 * corrupt it).
 *
 * Times are epoch milliseconds (INTEGER). JSON columns hold TEXT written by
 * JSON.stringify. Task ids are ULIDs, so `ORDER BY id` is creation order.
 */
import type { SqliteDb } from './db.js';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'initial schema',
    sql: `
CREATE TABLE tokens (
  id            TEXT PRIMARY KEY,
  name          TEXT NOT NULL,
  user          TEXT NOT NULL,
  role          TEXT NOT NULL CHECK (role IN ('admin', 'user', 'worker')),
  secret_hash   TEXT NOT NULL UNIQUE,
  created_at    INTEGER NOT NULL,
  revoked_at    INTEGER,
  last_used_at  INTEGER
);

CREATE TABLE tasks (
  id                   TEXT PRIMARY KEY,
  owner                TEXT NOT NULL,
  name                 TEXT NOT NULL,
  kind                 TEXT NOT NULL,
  state                TEXT NOT NULL CHECK (state IN ('ready', 'waiting', 'running', 'retrying', 'succeeded', 'failed', 'cancelled')),
  command              TEXT,
  args                 TEXT NOT NULL,
  script               TEXT,
  interpreter          TEXT NOT NULL,
  env                  TEXT NOT NULL,
  timeout_ms           INTEGER,
  max_retries          INTEGER NOT NULL,
  retry_base_delay_ms  INTEGER NOT NULL,
  retry_factor         REAL NOT NULL,
  retry_max_delay_ms   INTEGER NOT NULL,
  priority             INTEGER NOT NULL,
  labels               TEXT NOT NULL,
  attempts             INTEGER NOT NULL DEFAULT 0,
  retries_used         INTEGER NOT NULL DEFAULT 0,
  lost_count           INTEGER NOT NULL DEFAULT 0,
  run_after            INTEGER,
  current_attempt_id   INTEGER REFERENCES attempts(id),
  result               TEXT,
  created_at           INTEGER NOT NULL,
  updated_at           INTEGER NOT NULL
);
-- Listing (newest first = id DESC) with each filter.
CREATE INDEX tasks_state_id ON tasks (state, id);
CREATE INDEX tasks_owner_id ON tasks (owner, id);
CREATE INDEX tasks_name ON tasks (name);
CREATE INDEX tasks_created_at ON tasks (created_at);
-- The queue: claimNext reads the head of the 'waiting' range, no sort. Not a partial
-- index: without ANALYZE statistics the planner prefers tasks_state_id plus a sort of
-- every waiting task over a partial index; with state as the first column it cannot.
CREATE INDEX tasks_queue ON tasks (state, priority DESC, id ASC);
-- promoteDue / nextDueAt: the 'retrying' range in run_after order.
CREATE INDEX tasks_due ON tasks (state, run_after, id);

-- AUTOINCREMENT: an id is never reused, even after a delete, because the id is
-- also the attempt's fencing token and a newer attempt must have a larger one.
CREATE TABLE attempts (
  id                INTEGER PRIMARY KEY AUTOINCREMENT,
  task_id           TEXT NOT NULL REFERENCES tasks(id),
  number            INTEGER NOT NULL,
  worker_id         TEXT NOT NULL,
  state             TEXT NOT NULL CHECK (state IN ('running', 'succeeded', 'failed', 'timed_out', 'cancelled', 'lost')),
  started_at        INTEGER NOT NULL,
  ended_at          INTEGER,
  lease_expires_at  INTEGER NOT NULL,
  exit_code         INTEGER,
  signal            TEXT,
  error             TEXT,
  duration_ms       INTEGER,
  UNIQUE (task_id, number)
);
-- The lease sweeper (expiredAttempts); only running attempts have a live lease.
CREATE INDEX attempts_running_lease ON attempts (lease_expires_at) WHERE state = 'running';

CREATE TABLE task_events (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  task_id     TEXT NOT NULL REFERENCES tasks(id),
  from_state  TEXT,
  to_state    TEXT NOT NULL,
  reason      TEXT NOT NULL,
  actor       TEXT NOT NULL,
  at          INTEGER NOT NULL,
  detail      TEXT
);
CREATE INDEX task_events_task_id ON task_events (task_id, id);

-- id is the follow cursor of a task's log across attempts.
CREATE TABLE log_chunks (
  id       INTEGER PRIMARY KEY AUTOINCREMENT,
  task_id  TEXT NOT NULL REFERENCES tasks(id),
  attempt  INTEGER NOT NULL,
  seq      INTEGER NOT NULL,
  stream   TEXT NOT NULL CHECK (stream IN ('stdout', 'stderr')),
  at       INTEGER NOT NULL,
  data     BLOB NOT NULL
);
CREATE INDEX log_chunks_task_id ON log_chunks (task_id, id);
-- An agent re-sends unacknowledged chunks after a reconnect; this makes the resend a no-op.
CREATE UNIQUE INDEX log_chunks_task_attempt_seq ON log_chunks (task_id, attempt, seq);

CREATE TABLE workers (
  id            TEXT PRIMARY KEY,
  hostname      TEXT NOT NULL,
  slots         INTEGER NOT NULL,
  labels        TEXT NOT NULL,
  connected_at  INTEGER NOT NULL,
  last_seen_at  INTEGER NOT NULL,
  state         TEXT NOT NULL CHECK (state IN ('connected', 'disconnected'))
);
`,
  },
  {
    version: 2,
    name: 'leaders: leases for singleton duties',
    sql: `
CREATE TABLE leaders (
  name        TEXT PRIMARY KEY,
  holder      TEXT NOT NULL,
  expires_at  INTEGER NOT NULL
);
`,
  },
  {
    version: 3,
    name: 'fencing tokens, stop orders, placement, idempotent submit, worker token binding',
    sql: `
-- The fencing token is now random per attempt (core/ids.ts newFencingToken), no
-- longer the attempt id. Attempts from before get '' and can never be matched by
-- a worker's report (presented tokens must be 32 hex digits).
ALTER TABLE attempts ADD COLUMN fencing_token TEXT NOT NULL DEFAULT '';
-- A stored stop order (cancel, superseding retry): repeated to the worker until the attempt ends.
ALTER TABLE attempts ADD COLUMN stop_reason TEXT;

-- Placement: K=V pairs a worker's labels must hold (JSON object text, like labels).
ALTER TABLE tasks ADD COLUMN requires TEXT NOT NULL DEFAULT '{}';
ALTER TABLE tasks ADD COLUMN idempotency_key TEXT;
ALTER TABLE tasks ADD COLUMN request_hash TEXT;
-- One task per (owner, Idempotency-Key); tasks without a key are not in it.
CREATE UNIQUE INDEX tasks_owner_idempotency_key ON tasks (owner, idempotency_key) WHERE idempotency_key IS NOT NULL;

-- The token that registered the worker id (null for workers registered before).
ALTER TABLE workers ADD COLUMN token_id TEXT;
`,
  },
];

/** The schema version this code writes. */
export const LATEST_SCHEMA_VERSION: number = MIGRATIONS.reduce((v, m) => Math.max(v, m.version), 0);

/**
 * Applies the migrations newer than the database's version, in order, in one
 * transaction; refuses a database written by a newer Drover.
 */
export async function migrate(d: SqliteDb): Promise<void> {
  await d.write(() => {
    const db = d.db;
    db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)');
    const current = (db.prepare('SELECT coalesce(max(version), 0) AS v FROM schema_migrations').get() as { v: number }).v;
    if (current > LATEST_SCHEMA_VERSION) {
      throw new Error(
        `database ${db.name} has schema version ${current}, newer than the ${LATEST_SCHEMA_VERSION} this Drover knows; ` +
          'it was written by a newer Drover, upgrade Drover to open it',
      );
    }
    const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
    for (const m of [...MIGRATIONS].sort((a, b) => a.version - b.version)) {
      if (m.version <= current) continue;
      db.exec(m.sql);
      record.run(m.version, m.name, Date.now());
    }
  });
}
