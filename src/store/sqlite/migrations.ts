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
import type Database from 'better-sqlite3';
import type { SqliteDb } from './db.js';

export interface Migration {
  version: number;
  name: string;
  sql: string;
  /** Runs after `sql`, in the same transaction: what SQL alone cannot say (a table rebuild). */
  run?: (db: Database.Database) => void;
  /**
   * Foreign keys off while it runs (a table other tables reference is rebuilt):
   * set outside the transaction, as SQLite requires, and checked with
   * foreign_key_check before the commit.
   */
  foreignKeysOff?: boolean;
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
  {
    version: 4,
    name: 'dashboard: web sessions, sign-in codes, worker drain time, change feed, task counters, minute stats, list indexes',
    sql: `
-- When an admin asked the worker to drain (workers.ts requestDrain); NULL when not
-- draining. registerWorker clears it (a worker that comes back is not draining).
ALTER TABLE workers ADD COLUMN draining_at INTEGER;

-- Dashboard sessions (store/web-sessions.ts): only sha256 (hex) of the cookie's
-- secret is stored. Bound to the token that signed in: revoking it ends them.
CREATE TABLE web_sessions (
  id_hash     TEXT PRIMARY KEY,
  token_id    TEXT NOT NULL REFERENCES tokens(id),
  created_at  INTEGER NOT NULL,
  expires_at  INTEGER NOT NULL
);
CREATE INDEX web_sessions_token_id ON web_sessions (token_id);
CREATE INDEX web_sessions_expires_at ON web_sessions (expires_at);

-- One-time sign-in codes (sha256 hex), consumed by one guarded DELETE.
CREATE TABLE login_codes (
  code_hash   TEXT PRIMARY KEY,
  token_id    TEXT NOT NULL REFERENCES tokens(id),
  expires_at  INTEGER NOT NULL
);
CREATE INDEX login_codes_expires_at ON login_codes (expires_at);

-- The change feed (store/feed.ts): one row per insert or update of a task and per
-- change of a worker other than a heartbeat, written by the triggers below in the
-- writing transaction, so no write path can forget one. One writer at a time, so
-- AUTOINCREMENT ids are commit order and the cursor is the id. xid (the writing
-- transaction, PostgreSQL's order) is always 0 here: kept so both schemas hold the
-- same columns.
CREATE TABLE changes (
  id     INTEGER PRIMARY KEY AUTOINCREMENT,
  xid    INTEGER NOT NULL DEFAULT 0,
  topic  TEXT NOT NULL CHECK (topic IN ('task', 'worker')),
  ref    TEXT NOT NULL,
  owner  TEXT,
  state  TEXT,
  at     INTEGER NOT NULL
);
-- A user's feed (readChanges with owner); the unfiltered one reads the primary key.
CREATE INDEX changes_owner_id ON changes (owner, id);
-- The newest pruned position (pruneFeed): a cursor before it has missed changes.
CREATE TABLE feed_meta (
  id          INTEGER PRIMARY KEY CHECK (id = 1),
  pruned_xid  INTEGER NOT NULL,
  pruned_id   INTEGER NOT NULL
);
INSERT INTO feed_meta (id, pruned_xid, pruned_id) VALUES (1, 0, 0);

CREATE TRIGGER tasks_feed_insert AFTER INSERT ON tasks BEGIN
  INSERT INTO changes (topic, ref, owner, state, at) VALUES ('task', NEW.id, NEW.owner, NEW.state, NEW.updated_at);
END;
CREATE TRIGGER tasks_feed_update AFTER UPDATE ON tasks BEGIN
  INSERT INTO changes (topic, ref, owner, state, at) VALUES ('task', NEW.id, NEW.owner, NEW.state, NEW.updated_at);
END;
-- at: the write's time (a registration's or disconnect's last_seen_at, a drain's draining_at).
CREATE TRIGGER workers_feed_insert AFTER INSERT ON workers BEGIN
  INSERT INTO changes (topic, ref, owner, state, at) VALUES ('worker', NEW.id, NULL, NULL, max(NEW.last_seen_at, coalesce(NEW.draining_at, 0)));
END;
-- Every column but last_seen_at (a heartbeat changes only that); a new workers column is added here.
CREATE TRIGGER workers_feed_update AFTER UPDATE ON workers
WHEN OLD.hostname IS NOT NEW.hostname OR OLD.slots IS NOT NEW.slots OR OLD.labels IS NOT NEW.labels
  OR OLD.connected_at IS NOT NEW.connected_at OR OLD.state IS NOT NEW.state OR OLD.token_id IS NOT NEW.token_id
  OR OLD.draining_at IS NOT NEW.draining_at
BEGIN
  INSERT INTO changes (topic, ref, owner, state, at) VALUES ('worker', NEW.id, NULL, NULL, max(NEW.last_seen_at, coalesce(NEW.draining_at, 0)));
END;

-- Tasks per owner and state, kept by triggers (countTasksByState sums them: no
-- scan of tasks). shard: PostgreSQL spreads one (owner, state) over 16 rows so that
-- concurrent commits rarely wait on one counter; one writer here, so always 0.
-- Every change is an upsert (+1 / -1), so a counter row appears when first needed.
CREATE TABLE task_counts (
  owner  TEXT NOT NULL,
  state  TEXT NOT NULL,
  shard  INTEGER NOT NULL,
  n      INTEGER NOT NULL,
  PRIMARY KEY (owner, state, shard)
) WITHOUT ROWID;
INSERT INTO task_counts (owner, state, shard, n) SELECT owner, state, 0, count(*) FROM tasks GROUP BY owner, state;
CREATE TRIGGER tasks_count_insert AFTER INSERT ON tasks BEGIN
  INSERT INTO task_counts (owner, state, shard, n) VALUES (NEW.owner, NEW.state, 0, 1)
    ON CONFLICT (owner, state, shard) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER tasks_count_update AFTER UPDATE OF state, owner ON tasks
WHEN OLD.state IS NOT NEW.state OR OLD.owner IS NOT NEW.owner
BEGIN
  INSERT INTO task_counts (owner, state, shard, n) VALUES (OLD.owner, OLD.state, 0, -1)
    ON CONFLICT (owner, state, shard) DO UPDATE SET n = n - 1;
  INSERT INTO task_counts (owner, state, shard, n) VALUES (NEW.owner, NEW.state, 0, 1)
    ON CONFLICT (owner, state, shard) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER tasks_count_delete AFTER DELETE ON tasks BEGIN
  INSERT INTO task_counts (owner, state, shard, n) VALUES (OLD.owner, OLD.state, 0, -1)
    ON CONFLICT (owner, state, shard) DO UPDATE SET n = n - 1;
END;

-- Activity per minute (epoch ms floored to the minute) and owner (minuteStats), kept
-- by triggers: an attempt inserted counts as started in its started_at minute (and
-- a first attempt adds its submit-to-start latency, never below 0); a task entering
-- succeeded, failed or cancelled from a non-terminal state counts in its
-- updated_at minute. Not backfilled: history starts with this version. shard as above.
CREATE TABLE task_minutes (
  minute          INTEGER NOT NULL,
  owner           TEXT NOT NULL,
  shard           INTEGER NOT NULL,
  started         INTEGER NOT NULL DEFAULT 0,
  succeeded       INTEGER NOT NULL DEFAULT 0,
  failed          INTEGER NOT NULL DEFAULT 0,
  cancelled       INTEGER NOT NULL DEFAULT 0,
  latency_count   INTEGER NOT NULL DEFAULT 0,
  latency_sum_ms  INTEGER NOT NULL DEFAULT 0,
  latency_max_ms  INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (minute, owner, shard)
) WITHOUT ROWID;
-- One owner's minutes (minuteStats with owner); all owners read the primary key.
CREATE INDEX task_minutes_owner ON task_minutes (owner, minute);
CREATE TRIGGER attempts_minute_insert AFTER INSERT ON attempts BEGIN
  INSERT INTO task_minutes (minute, owner, shard, started, latency_count, latency_sum_ms, latency_max_ms)
    SELECT NEW.started_at - NEW.started_at % 60000, t.owner, 0, 1, NEW.number = 1,
      CASE WHEN NEW.number = 1 THEN max(0, NEW.started_at - t.created_at) ELSE 0 END,
      CASE WHEN NEW.number = 1 THEN max(0, NEW.started_at - t.created_at) ELSE 0 END
    FROM tasks t WHERE t.id = NEW.task_id
    ON CONFLICT (minute, owner, shard) DO UPDATE SET started = started + 1, latency_count = latency_count + excluded.latency_count,
      latency_sum_ms = latency_sum_ms + excluded.latency_sum_ms, latency_max_ms = max(latency_max_ms, excluded.latency_max_ms);
END;
CREATE TRIGGER tasks_minute_end AFTER UPDATE OF state ON tasks
WHEN NEW.state IN ('succeeded', 'failed', 'cancelled') AND OLD.state NOT IN ('succeeded', 'failed', 'cancelled')
BEGIN
  INSERT INTO task_minutes (minute, owner, shard, succeeded, failed, cancelled)
    VALUES (NEW.updated_at - NEW.updated_at % 60000, NEW.owner, 0, NEW.state = 'succeeded', NEW.state = 'failed', NEW.state = 'cancelled')
    ON CONFLICT (minute, owner, shard) DO UPDATE SET succeeded = succeeded + excluded.succeeded, failed = failed + excluded.failed,
      cancelled = cancelled + excluded.cancelled;
END;

-- The Tasks page (task-list.ts): every filter is an equality and an id range (or a
-- name range) on one of these, read newest first. The time range became an id
-- range, so tasks_created_at is unused; tasks_name is replaced by (name, id).
DROP INDEX tasks_created_at;
DROP INDEX tasks_name;
CREATE INDEX tasks_owner_state_id ON tasks (owner, state, id);
CREATE INDEX tasks_name_id ON tasks (name, id);
CREATE INDEX tasks_owner_name_id ON tasks (owner, name, id);
-- runningAttempts (per worker, oldest first): only running attempts are in it.
CREATE INDEX attempts_running_worker ON attempts (worker_id, started_at, id) WHERE state = 'running';
`,
  },
  {
    version: 5,
    name: 'set-based counters (PostgreSQL only: SQLite keeps its row triggers and one counter row per key)',
    // PostgreSQL's version 5 replaces row triggers and counter upserts that
    // locked rows across concurrent transactions. SQLite has one writer at a
    // time, so those locks cost nothing here: the schema (tables, columns)
    // stays the same, and this version only keeps the numbering in step.
    sql: '',
  },
  {
    version: 6,
    name: 'task cwd; tasks submitted to run later (ready with run_after)',
    // cwd: the directory an attempt runs in on the worker (NULL: its work directory).
    // A task submitted with runAt/delay is stored 'ready' with run_after set; promoteDue
    // releases it through tasks_due (state, run_after, id), which already covers the
    // 'ready' range, so no index is added here (PostgreSQL's tasks_due is partial and
    // gets a sibling).
    sql: `ALTER TABLE tasks ADD COLUMN cwd TEXT;`,
  },
  {
    version: 7,
    name: 'cron schedules, their runs, one task per (schedule, slot), leadership epochs',
    sql: `
-- A cron schedule (store/schedules.ts). template: the TaskSpec each run creates, as
-- JSON text (rows.ts scheduleFromRow): it is only ever copied into a task, never
-- filtered on, so one column instead of a copy of every tasks spec column.
-- next_fire_at is NULL while paused (and when the expression has no more times),
-- so schedules_due holds only schedules that can fire.
CREATE TABLE schedules (
  id            TEXT PRIMARY KEY,
  owner         TEXT NOT NULL,
  name          TEXT NOT NULL,
  expr          TEXT NOT NULL,
  tz            TEXT NOT NULL,
  overlap       TEXT NOT NULL CHECK (overlap IN ('allow', 'forbid', 'replace')),
  catchup       TEXT NOT NULL CHECK (catchup IN ('none', 'latest', 'all')),
  max_catchup   INTEGER NOT NULL,
  template      TEXT NOT NULL,
  paused        INTEGER NOT NULL DEFAULT 0 CHECK (paused IN (0, 1)),
  next_fire_at  INTEGER,
  last_slot_at  INTEGER,
  version       INTEGER NOT NULL DEFAULT 1,
  created_at    INTEGER NOT NULL,
  updated_at    INTEGER NOT NULL,
  UNIQUE (owner, name)
);
-- listSchedules of one owner (all owners: the primary key).
CREATE INDEX schedules_owner_id ON schedules (owner, id);
-- dueSchedules / nextScheduleDueAt: the head of this index. Its WHERE is the queries'
-- own (paused is in it although a paused schedule has no next_fire_at), so a partial
-- index matches them on any planner without relying on that rule.
CREATE INDEX schedules_due ON schedules (next_fire_at, id) WHERE next_fire_at IS NOT NULL AND paused = 0;

-- One row per slot decision (fired or skipped), not task_events: a skipped slot has
-- no task for an event to belong to, and (schedule_id, slot_at) is unique. task_id
-- has no foreign key: task retention may remove the task and the record stays.
CREATE TABLE schedule_runs (
  schedule_id  TEXT NOT NULL REFERENCES schedules(id),
  slot_at      INTEGER NOT NULL,
  outcome      TEXT NOT NULL CHECK (outcome IN ('fired', 'skipped')),
  reason       TEXT,
  task_id      TEXT,
  at           INTEGER NOT NULL,
  PRIMARY KEY (schedule_id, slot_at)
);

-- A schedule's run: which schedule (no foreign key: a deleted schedule leaves its
-- tasks and their schedule_id) and which slot. THE guarantee of one run per slot.
ALTER TABLE tasks ADD COLUMN schedule_id TEXT;
ALTER TABLE tasks ADD COLUMN scheduled_at INTEGER;
CREATE UNIQUE INDEX tasks_schedule_slot ON tasks (schedule_id, scheduled_at) WHERE schedule_id IS NOT NULL;

-- Fencing epoch of a lease: +1 each time it changes holder or is taken after expiring.
ALTER TABLE leaders ADD COLUMN epoch INTEGER NOT NULL DEFAULT 1;
`,
  },
  {
    version: 8,
    name: 'a schedule\'s runs newest first (GET /v1/tasks?schedule=NAME)',
    // The task list filtered by schedule (task-list.ts, scheduleId) reads this range in id
    // order and stops at the page's limit. Partial: only a schedule's runs have a
    // schedule_id, and `schedule_id = ?` implies the predicate on either planner.
    sql: `CREATE INDEX tasks_schedule_id ON tasks (schedule_id, id) WHERE schedule_id IS NOT NULL;`,
  },
  {
    version: 9,
    name: "a schedule's active runs (overlap policies); how many slots a catch-up skipped; run record retention",
    // activeScheduleRuns (store/schedules.ts): the overlap policies see every run of a schedule that
    // has not ended, a slot's or a run-now one. Partial: only a schedule's tasks in a non-terminal
    // state, so the index stays as small as the runs in flight; the IN list is spelled exactly as the
    // query spells it (ACTIVE_RUN_STATES_SQL), so either planner proves the predicate.
    // catchup_count / catchup_exact: on the first and last skipped run a catch-up recorded (reason
    // catchup_*), how many slots it skipped in all (a lower bound when not exact); NULL on other runs.
    sql: `CREATE INDEX tasks_schedule_active ON tasks (schedule_id, id) WHERE schedule_id IS NOT NULL AND state IN ('ready', 'waiting', 'running', 'retrying');
ALTER TABLE schedule_runs ADD COLUMN catchup_count INTEGER;
ALTER TABLE schedule_runs ADD COLUMN catchup_exact INTEGER CHECK (catchup_exact IN (0, 1));
-- run_count: the schedule's rows in schedule_runs, kept in the transactions that add or delete them
-- (fireSchedules, pruneScheduleRuns), so retention finds the schedules over the limit through the
-- partial index below instead of counting every schedule's runs. Its 1100 is SCHEDULE_RUNS_KEPT +
-- SCHEDULE_RUNS_SLACK (store/schedules.ts), spelled the same in pruneScheduleRuns' query.
ALTER TABLE schedules ADD COLUMN run_count INTEGER NOT NULL DEFAULT 0;
UPDATE schedules SET run_count = (SELECT count(*) FROM schedule_runs r WHERE r.schedule_id = schedules.id);
CREATE INDEX schedules_runs_over ON schedules (id) WHERE run_count > 1100;`,
  },
  {
    version: 10,
    name: 'task outputs (DROVER_OUTPUT)',
    // The KEY=VALUE pairs the succeeding attempt wrote (core/task-outputs.ts), as a JSON
    // object of string -> string; NULL when none. Written once, with the result, by the
    // end that makes the task succeeded (store/attempts.ts). Never filtered on: no index.
    // Nullable without a default, so adding it rewrites no row.
    sql: `ALTER TABLE tasks ADD COLUMN outputs TEXT;`,
  },
  {
    version: 11,
    name: 'DAGs, their versions and runs; tasks as DAG steps; task state skipped',
    // SQLite cannot change a CHECK constraint in place: the tasks table is rebuilt with
    // 'skipped' among its states (widenTaskStates, below), with foreign keys off.
    foreignKeysOff: true,
    run: widenTaskStates,
    sql: `
-- A DAG (issue 12): one row per (owner, name), pointing at its newest version.
CREATE TABLE dags (
  id              TEXT PRIMARY KEY,
  owner           TEXT NOT NULL,
  name            TEXT NOT NULL,
  latest_version  INTEGER NOT NULL,
  created_at      INTEGER NOT NULL,
  updated_at      INTEGER NOT NULL,
  UNIQUE (owner, name)
);
-- Every version ever applied (immutable): definition is core/dag/dag-definition.ts
-- DagDefinition as JSON, hash its sha256 (an unchanged file stores no new version).
CREATE TABLE dag_versions (
  dag_id      TEXT NOT NULL REFERENCES dags(id),
  version     INTEGER NOT NULL,
  definition  TEXT NOT NULL,
  hash        TEXT NOT NULL,
  step_count  INTEGER NOT NULL,
  created_at  INTEGER NOT NULL,
  PRIMARY KEY (dag_id, version)
);
-- A run of one version. Its steps are tasks (tasks.dag_run_id, dag_step). state is
-- written by the transaction that ends its last step (or by cancel); schedule_id and
-- scheduled_at: a cron schedule's run of the DAG, one per slot as for tasks.
CREATE TABLE dag_runs (
  id           TEXT PRIMARY KEY,
  owner        TEXT NOT NULL,
  dag_id       TEXT NOT NULL REFERENCES dags(id),
  dag_name     TEXT NOT NULL,
  version      INTEGER NOT NULL,
  state        TEXT NOT NULL CHECK (state IN ('running', 'succeeded', 'failed', 'cancelled')),
  params       TEXT NOT NULL,
  step_count   INTEGER NOT NULL,
  -- The run's step states, one character per step in definition order (core/dag/step-states.ts):
  -- what its progress decides from, written with every step change, so a step's end reads this
  -- row instead of every step's.
  step_states  TEXT NOT NULL,
  schedule_id  TEXT,
  scheduled_at INTEGER,
  created_at   INTEGER NOT NULL,
  updated_at   INTEGER NOT NULL,
  ended_at     INTEGER
);
CREATE INDEX dag_runs_owner_id ON dag_runs (owner, id);
CREATE INDEX dag_runs_dag_id ON dag_runs (dag_id, id);
CREATE UNIQUE INDEX dag_runs_schedule_slot ON dag_runs (schedule_id, scheduled_at) WHERE schedule_id IS NOT NULL;

-- A task that is a DAG step: its run and step name (unique in the run), and why it
-- was skipped. No foreign key on dag_run_id: retention may remove runs and tasks apart.
ALTER TABLE tasks ADD COLUMN dag_run_id TEXT;
ALTER TABLE tasks ADD COLUMN dag_step TEXT;
ALTER TABLE tasks ADD COLUMN skip_reason TEXT;
CREATE UNIQUE INDEX tasks_dag_step ON tasks (dag_run_id, dag_step) WHERE dag_run_id IS NOT NULL;
`,
  },
  {
    version: 12,
    name: 'cron schedules of DAGs',
    sql: `
-- A DAG schedule (drover cron add --dag NAME): each slot starts a run of the owner's DAG
-- of this name (its newest version then) with these parameters (JSON object); template
-- is then JSON null. Both NULL for a task schedule.
ALTER TABLE schedules ADD COLUMN dag_name TEXT;
ALTER TABLE schedules ADD COLUMN dag_params TEXT;
-- A DAG schedule's fired slot: the run it started (task_id is NULL then). No foreign key,
-- as for task_id: the record outlives the run.
ALTER TABLE schedule_runs ADD COLUMN dag_run_id TEXT;
-- activeScheduleRuns for a DAG schedule (overlap forbid / replace): its running runs.
CREATE INDEX dag_runs_schedule_active ON dag_runs (schedule_id, id) WHERE schedule_id IS NOT NULL AND state = 'running';
`,
  },
  {
    version: 13,
    name: 'the queue and due indexes hold only the states they are read for, as on PostgreSQL',
    sql: `
-- The claim reads only waiting tasks (attempts.ts CLAIM_SQL) and the due queries only retrying
-- tasks and ready ones with a run_after (tasks.ts DUE_SQL), each with its state as a literal, so
-- partial indexes serve them. Over every state, each state change of every task deleted and
-- inserted an entry in both; now a task enters the queue at submit and leaves it at its claim,
-- and its end writes neither (issue 9).
DROP INDEX tasks_queue;
CREATE INDEX tasks_queue ON tasks (priority DESC, id ASC) WHERE state = 'waiting';
DROP INDEX tasks_due;
CREATE INDEX tasks_due ON tasks (run_after, id) WHERE state = 'retrying';
CREATE INDEX tasks_ready_due ON tasks (run_after, id) WHERE state = 'ready' AND run_after IS NOT NULL;
`,
  },
  {
    version: 14,
    name: 'failed and cancelled tasks indexed by when they ended',
    sql: `
-- GET /v1/tasks?state=failed&order=ended (the Overview's recent failures): newest end first
-- (store/task-list.ts). A failed or cancelled task's updated_at is when it reached that state.
-- Partial: only these rare states are in them, so a task that succeeds writes neither.
-- The OR form, not IN: SQLite proves a query's state = 'failed' implies one side of an OR.
-- updated_at >= 0 (always true: epoch ms) is a mark only the order=ended query carries, so the
-- lists in id order keep to their own indexes (task-list.ts ENDED_ORDER_STATES says why).
CREATE INDEX tasks_ended ON tasks (state, updated_at, id) WHERE (state = 'failed' OR state = 'cancelled') AND updated_at >= 0;
CREATE INDEX tasks_owner_ended ON tasks (owner, state, updated_at, id) WHERE (state = 'failed' OR state = 'cancelled') AND updated_at >= 0;
`,
  },
  {
    version: 15,
    name: 'foreign keys kept (PostgreSQL drops those of attempts and task_events in its version 15)',
    // Nothing to change here: same tables and columns as PostgreSQL's version 15. There each
    // foreign-key check locked the referenced row (a tuple write and a WAL record); SQLite's is
    // a primary-key probe under the one write lock it already holds. Measured (issue 9,
    // 2026-12-05): a 20,000-task no-op drain with foreign_keys off, three pairs alternating,
    // 3,543-4,054/s against 3,732-4,334/s with them on: no difference, so they stay enforced.
    sql: '',
  },
];

/** The schema version this code writes. */
export const LATEST_SCHEMA_VERSION: number = MIGRATIONS.reduce((v, m) => Math.max(v, m.version), 0);

/**
 * Applies the migrations newer than the database's version, in order, in one
 * transaction; refuses a database written by a newer Drover.
 */
export async function migrate(d: SqliteDb): Promise<void> {
  // PRAGMA foreign_keys is a no-op inside a transaction: set it around the write. The
  // store was just opened and migrate() runs before anything else writes through it.
  const fkOff = pendingNeedFkOff(d.db);
  if (fkOff) d.db.pragma('foreign_keys = OFF');
  try {
    await migrateIn(d, fkOff);
  } finally {
    if (fkOff) d.db.pragma('foreign_keys = ON');
  }
}

function pendingNeedFkOff(db: Database.Database): boolean {
  const hasTable = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get() !== undefined;
  const current = hasTable ? (db.prepare('SELECT coalesce(max(version), 0) AS v FROM schema_migrations').get() as { v: number }).v : 0;
  return MIGRATIONS.some((m) => m.version > current && m.foreignKeysOff === true);
}

async function migrateIn(d: SqliteDb, fkOff: boolean): Promise<void> {
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
      m.run?.(db);
      record.run(m.version, m.name, Date.now());
    }
    if (fkOff) {
      const broken = db.pragma('foreign_key_check') as unknown[];
      if (broken.length > 0) throw new Error(`migration left ${broken.length} foreign key violations, e.g. ${JSON.stringify(broken[0])}; nothing was changed`);
    }
  });
}

/**
 * Version 11: the tasks table again, with 'skipped' among its states (the
 * documented rebuild of SQLite's ALTER TABLE page: new table, copy, drop,
 * rename, then its indexes and triggers again, read back from sqlite_master
 * so whatever earlier versions added is kept). legacy_alter_table keeps the
 * rename from re-checking other tables' triggers, which name tasks while it
 * is briefly gone; foreign keys are off (Migration.foreignKeysOff) so the
 * drop deletes nothing anywhere, and they are checked before the commit.
 */
function widenTaskStates(db: Database.Database): void {
  const OLD = "CHECK (state IN ('ready', 'waiting', 'running', 'retrying', 'succeeded', 'failed', 'cancelled'))";
  const NEW = "CHECK (state IN ('ready', 'waiting', 'running', 'retrying', 'succeeded', 'failed', 'cancelled', 'skipped'))";
  const table = (db.prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'tasks'").get() as { sql: string }).sql;
  if (!table.includes(OLD) || !/^CREATE TABLE tasks\b/.test(table)) throw new Error('migration 11: the tasks table is not the one this migration knows');
  const dependents = db.prepare("SELECT sql FROM sqlite_master WHERE tbl_name = 'tasks' AND type IN ('index', 'trigger') AND sql IS NOT NULL ORDER BY rowid").all() as Array<{ sql: string }>;
  db.pragma('legacy_alter_table = ON');
  try {
    db.exec(table.replace(OLD, NEW).replace(/^CREATE TABLE tasks\b/, 'CREATE TABLE tasks_v11'));
    db.exec('INSERT INTO tasks_v11 SELECT * FROM tasks');
    db.exec('DROP TABLE tasks');
    db.exec('ALTER TABLE tasks_v11 RENAME TO tasks');
  } finally {
    db.pragma('legacy_alter_table = OFF');
  }
  for (const x of dependents) db.exec(x.sql);
}
