/**
 * Schema history of the PostgreSQL store. Same rules as sqlite/migrations.ts:
 * append only, numbered, and version N here means the same tables, columns and
 * semantics as version N there. `migrate()` applies the entries newer than the
 * database's version in one transaction (PostgreSQL DDL is transactional) under
 * an advisory lock, so several servers starting together migrate once, and
 * refuses a database whose version is newer than the last entry here.
 *
 * Types:
 *   - times are epoch milliseconds in BIGINT. Lease times (attempts.lease_expires_at,
 *     leaders.expires_at) come from the database's clock (sql.ts DB_NOW_MS), so
 *     servers with skewed clocks agree; every other time is the `now` the caller
 *     passes in;
 *   - ids: task ids are ULID text in the "C" collation, so ORDER BY id and the
 *     keyset cursor compare bytes exactly as SQLite's BINARY does; attempt, event
 *     and log ids are BIGSERIAL (never reused). Since version 3 an attempt's
 *     fencing token is a random 32-hex string of its own (attempts.fencing_token),
 *     no longer its id;
 *   - JSON columns are TEXT holding JSON.stringify output, as in SQLite: the value
 *     round-trips exactly (key order included), and "\u0000" escapes are allowed;
 *   - log data is BYTEA.
 * Names, owners and ids use COLLATE "C" so that ordering, equality and the
 * LIKE prefix filter (which can then use a plain b-tree) are byte-wise and do
 * not depend on the database's locale.
 */
import type { Db } from './db.js';

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
  id            TEXT COLLATE "C" PRIMARY KEY,
  name          TEXT NOT NULL,
  "user"        TEXT NOT NULL,
  role          TEXT NOT NULL CHECK (role IN ('admin', 'user', 'worker')),
  secret_hash   TEXT NOT NULL UNIQUE,
  created_at    BIGINT NOT NULL,
  revoked_at    BIGINT,
  last_used_at  BIGINT
);

CREATE TABLE tasks (
  id                   TEXT COLLATE "C" PRIMARY KEY,
  owner                TEXT COLLATE "C" NOT NULL,
  name                 TEXT COLLATE "C" NOT NULL,
  kind                 TEXT NOT NULL,
  state                TEXT NOT NULL CHECK (state IN ('ready', 'waiting', 'running', 'retrying', 'succeeded', 'failed', 'cancelled')),
  command              TEXT,
  args                 TEXT NOT NULL,
  script               TEXT,
  interpreter          TEXT NOT NULL,
  env                  TEXT NOT NULL,
  timeout_ms           BIGINT,
  max_retries          INTEGER NOT NULL,
  retry_base_delay_ms  BIGINT NOT NULL,
  retry_factor         DOUBLE PRECISION NOT NULL,
  retry_max_delay_ms   BIGINT NOT NULL,
  priority             INTEGER NOT NULL,
  labels               TEXT NOT NULL,
  attempts             INTEGER NOT NULL DEFAULT 0,
  retries_used         INTEGER NOT NULL DEFAULT 0,
  lost_count           INTEGER NOT NULL DEFAULT 0,
  run_after            BIGINT,
  current_attempt_id   BIGINT,
  result               TEXT,
  created_at           BIGINT NOT NULL,
  updated_at           BIGINT NOT NULL
);
-- Listing (newest first = id DESC) with each filter.
CREATE INDEX tasks_state_id ON tasks (state, id);
CREATE INDEX tasks_owner_id ON tasks (owner, id);
CREATE INDEX tasks_name ON tasks (name);
CREATE INDEX tasks_created_at ON tasks (created_at);
-- The queue: claimNext reads the head of this index (partial: only waiting rows are in it).
CREATE INDEX tasks_queue ON tasks (priority DESC, id ASC) WHERE state = 'waiting';
-- promoteDue / nextDueAt: the retrying tasks in run_after order.
CREATE INDEX tasks_due ON tasks (run_after, id) WHERE state = 'retrying';

-- BIGSERIAL: an id is never reused, because the id is also the attempt's fencing
-- token and a newer attempt must have a larger one.
CREATE TABLE attempts (
  id                BIGSERIAL PRIMARY KEY,
  task_id           TEXT COLLATE "C" NOT NULL REFERENCES tasks(id),
  number            INTEGER NOT NULL,
  worker_id         TEXT NOT NULL,
  state             TEXT NOT NULL CHECK (state IN ('running', 'succeeded', 'failed', 'timed_out', 'cancelled', 'lost')),
  started_at        BIGINT NOT NULL,
  ended_at          BIGINT,
  lease_expires_at  BIGINT NOT NULL,
  exit_code         INTEGER,
  signal            TEXT,
  error             TEXT,
  duration_ms       BIGINT,
  UNIQUE (task_id, number)
);
-- The lease sweeper (expiredAttempts); only running attempts have a live lease.
CREATE INDEX attempts_running_lease ON attempts (lease_expires_at, id) WHERE state = 'running';
-- tasks and attempts reference each other; the second reference is added once both exist.
ALTER TABLE tasks ADD CONSTRAINT tasks_current_attempt_fk FOREIGN KEY (current_attempt_id) REFERENCES attempts(id);

CREATE TABLE task_events (
  id          BIGSERIAL PRIMARY KEY,
  task_id     TEXT COLLATE "C" NOT NULL REFERENCES tasks(id),
  from_state  TEXT,
  to_state    TEXT NOT NULL,
  reason      TEXT NOT NULL,
  actor       TEXT NOT NULL,
  at          BIGINT NOT NULL,
  detail      TEXT
);
CREATE INDEX task_events_task_id ON task_events (task_id, id);

-- id is the follow cursor of a task's log across attempts. Appends to one attempt
-- are serialized by a lock on its row (see appendLogs), so within a task ids are
-- assigned and committed in the same order and a follower never skips a chunk.
CREATE TABLE log_chunks (
  id       BIGSERIAL PRIMARY KEY,
  task_id  TEXT COLLATE "C" NOT NULL REFERENCES tasks(id),
  attempt  INTEGER NOT NULL,
  seq      INTEGER NOT NULL,
  stream   TEXT NOT NULL CHECK (stream IN ('stdout', 'stderr')),
  at       BIGINT NOT NULL,
  data     BYTEA NOT NULL
);
CREATE INDEX log_chunks_task_id ON log_chunks (task_id, id);
-- An agent re-sends unacknowledged chunks after a reconnect; this makes the resend a no-op.
CREATE UNIQUE INDEX log_chunks_task_attempt_seq ON log_chunks (task_id, attempt, seq);

CREATE TABLE workers (
  id            TEXT COLLATE "C" PRIMARY KEY,
  hostname      TEXT NOT NULL,
  slots         INTEGER NOT NULL,
  labels        TEXT NOT NULL,
  connected_at  BIGINT NOT NULL,
  last_seen_at  BIGINT NOT NULL,
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
  expires_at  BIGINT NOT NULL
);
`,
  },
  {
    version: 3,
    name: 'fencing tokens, stop orders, placement, idempotent submit, worker token binding',
    sql: `
-- Random per attempt (core/ids.ts newFencingToken). Rows of older attempts get '',
-- which no presented token matches (presented tokens are validated as 32 hex).
ALTER TABLE attempts ADD COLUMN fencing_token TEXT NOT NULL DEFAULT '';
-- Set by a cancel or a superseding retry: the worker must stop this attempt (core/cancel-plan.ts).
ALTER TABLE attempts ADD COLUMN stop_reason TEXT;

-- Placement (core/placement.ts): JSON object text like labels; '{}' runs anywhere.
ALTER TABLE tasks ADD COLUMN requires TEXT NOT NULL DEFAULT '{}';
-- Idempotent submit: (owner, key) names one task; request_hash tells a repeat from a conflict.
ALTER TABLE tasks ADD COLUMN idempotency_key TEXT COLLATE "C";
ALTER TABLE tasks ADD COLUMN request_hash TEXT;
CREATE UNIQUE INDEX tasks_owner_idempotency_key ON tasks (owner, idempotency_key) WHERE idempotency_key IS NOT NULL;
-- The queue, split by placement (attempts.ts claimNext): each partial index holds
-- exactly the rows its branch of the claim asks for, so the claim reads the head
-- of an ordered index and stops. With one index plus a filter on requires, the
-- planner (before any ANALYZE) chose a bitmap scan and a sort of every waiting
-- task for each claim: 35 ms a claim at 1,000 waiting, measured.
CREATE INDEX tasks_queue_free ON tasks (priority DESC, id) WHERE state = 'waiting' AND requires = '{}';
CREATE INDEX tasks_queue_placed ON tasks (priority DESC, id) WHERE state = 'waiting' AND requires <> '{}';

-- The token that registered the worker id; a live other token cannot take the id over.
-- NULL for rows registered before version 3 (the next registration binds them).
ALTER TABLE workers ADD COLUMN token_id TEXT COLLATE "C";
`,
  },
  {
    version: 4,
    name: 'dashboard: web sessions, sign-in codes, worker drain time, change feed, task counters, minute stats, list indexes',
    sql: `
-- When an admin asked the worker to drain (workers.ts requestDrain); NULL when not
-- draining. registerWorker clears it (a worker that comes back is not draining).
ALTER TABLE workers ADD COLUMN draining_at BIGINT;

-- Dashboard sessions (store/web-sessions.ts): only sha256 (hex) of the cookie's
-- secret is stored. Bound to the token that signed in: revoking it ends them.
CREATE TABLE web_sessions (
  id_hash     TEXT COLLATE "C" PRIMARY KEY,
  token_id    TEXT COLLATE "C" NOT NULL REFERENCES tokens(id),
  created_at  BIGINT NOT NULL,
  expires_at  BIGINT NOT NULL
);
CREATE INDEX web_sessions_token_id ON web_sessions (token_id);
CREATE INDEX web_sessions_expires_at ON web_sessions (expires_at);

-- One-time sign-in codes (sha256 hex), consumed by one guarded DELETE.
CREATE TABLE login_codes (
  code_hash   TEXT COLLATE "C" PRIMARY KEY,
  token_id    TEXT COLLATE "C" NOT NULL REFERENCES tokens(id),
  expires_at  BIGINT NOT NULL
);
CREATE INDEX login_codes_expires_at ON login_codes (expires_at);

-- The change feed (store/feed.ts): one row per insert or update of a task and per
-- change of a worker other than a heartbeat, written by the triggers below in the
-- writing transaction, so no write path can forget one. Ids (a sequence) are taken
-- before commit and commit out of order, so a change is ordered by its writing
-- transaction's id (xid8, pg_current_xact_id(): the top-level transaction, also
-- inside a savepoint) and then id, and readChanges returns only changes of
-- transactions below the snapshot's xmin (all of them finished). The primary key
-- is that order; the owner index serves a user's feed.
CREATE TABLE changes (
  id     BIGSERIAL NOT NULL,
  xid    xid8 NOT NULL DEFAULT pg_current_xact_id(),
  topic  TEXT NOT NULL CHECK (topic IN ('task', 'worker')),
  ref    TEXT COLLATE "C" NOT NULL,
  owner  TEXT COLLATE "C",
  state  TEXT,
  at     BIGINT NOT NULL,
  PRIMARY KEY (xid, id)
);
CREATE INDEX changes_owner_xid_id ON changes (owner, xid, id);
-- The newest pruned position (pruneFeed): a cursor before it has missed changes.
CREATE TABLE feed_meta (
  id          INTEGER PRIMARY KEY CHECK (id = 1),
  pruned_xid  xid8 NOT NULL,
  pruned_id   BIGINT NOT NULL
);
INSERT INTO feed_meta (id, pruned_xid, pruned_id) VALUES (1, '0', 0);

-- Tasks per owner and state, kept by the tasks trigger (countTasksByState sums
-- them: no scan of tasks). A task's counter row is one of 16 shards (a hash of its
-- id), so concurrent commits rarely wait on the same row. Every change is an
-- upsert (+1 / -1): a row appears when first needed, and a decrement that finds a
-- shard other than its increment's (were hashtext to change) still sums right.
CREATE TABLE task_counts (
  owner  TEXT COLLATE "C" NOT NULL,
  state  TEXT NOT NULL,
  shard  INTEGER NOT NULL,
  n      BIGINT NOT NULL,
  PRIMARY KEY (owner, state, shard)
);
INSERT INTO task_counts (owner, state, shard, n) SELECT owner, state, hashtext(id) & 15, count(*) FROM tasks GROUP BY 1, 2, 3;

-- Activity per minute (epoch ms floored to the minute), owner and shard
-- (minuteStats sums the shards): an attempt inserted counts as started in its
-- started_at minute (a first attempt adds its submit-to-start latency, never below
-- 0); a task entering succeeded, failed or cancelled from a non-terminal state
-- counts in its updated_at minute. Not backfilled: history starts with this version.
CREATE TABLE task_minutes (
  minute          BIGINT NOT NULL,
  owner           TEXT COLLATE "C" NOT NULL,
  shard           INTEGER NOT NULL,
  started         BIGINT NOT NULL DEFAULT 0,
  succeeded       BIGINT NOT NULL DEFAULT 0,
  failed          BIGINT NOT NULL DEFAULT 0,
  cancelled       BIGINT NOT NULL DEFAULT 0,
  latency_count   BIGINT NOT NULL DEFAULT 0,
  latency_sum_ms  BIGINT NOT NULL DEFAULT 0,
  latency_max_ms  BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (minute, owner, shard)
);
CREATE INDEX task_minutes_owner ON task_minutes (owner, minute);

-- +d on one task counter row.
CREATE FUNCTION drover_count_task(o text, s text, sh integer, d integer) RETURNS void LANGUAGE sql AS $f$
  INSERT INTO task_counts (owner, state, shard, n) VALUES (o, s, sh, d)
  ON CONFLICT (owner, state, shard) DO UPDATE SET n = task_counts.n + EXCLUDED.n
$f$;

-- One trigger per task row write: the feed row, the counters, the minute's ends.
-- Lock order, so that concurrent single-task transactions cannot deadlock on
-- counter rows: the two counters of a state change in state-name order, then the
-- one minute row; the attempts trigger (fired after the task's in a claim) takes
-- one minute row. (Transactions changing many tasks, like promoteDue, may still
-- deadlock with each other; PostgreSQL aborts one, and db.ts runs it again.)
CREATE FUNCTION drover_task_written() RETURNS trigger LANGUAGE plpgsql AS $f$
DECLARE
  sh integer;
BEGIN
  INSERT INTO changes (topic, ref, owner, state, at) VALUES ('task', NEW.id, NEW.owner, NEW.state, NEW.updated_at);
  IF TG_OP = 'INSERT' THEN
    PERFORM drover_count_task(NEW.owner, NEW.state, hashtext(NEW.id) & 15, 1);
  ELSIF OLD.state IS DISTINCT FROM NEW.state OR OLD.owner IS DISTINCT FROM NEW.owner THEN
    sh := hashtext(NEW.id) & 15; -- ids never change
    IF OLD.state < NEW.state THEN
      PERFORM drover_count_task(OLD.owner, OLD.state, sh, -1);
      PERFORM drover_count_task(NEW.owner, NEW.state, sh, 1);
    ELSE
      PERFORM drover_count_task(NEW.owner, NEW.state, sh, 1);
      PERFORM drover_count_task(OLD.owner, OLD.state, sh, -1);
    END IF;
    IF NEW.state IN ('succeeded', 'failed', 'cancelled') AND OLD.state NOT IN ('succeeded', 'failed', 'cancelled') THEN
      INSERT INTO task_minutes (minute, owner, shard, succeeded, failed, cancelled)
      VALUES (NEW.updated_at - NEW.updated_at % 60000, NEW.owner, sh,
              (NEW.state = 'succeeded')::int, (NEW.state = 'failed')::int, (NEW.state = 'cancelled')::int)
      ON CONFLICT (minute, owner, shard) DO UPDATE SET succeeded = task_minutes.succeeded + EXCLUDED.succeeded,
        failed = task_minutes.failed + EXCLUDED.failed, cancelled = task_minutes.cancelled + EXCLUDED.cancelled;
    END IF;
  END IF;
  RETURN NULL;
END
$f$;
CREATE TRIGGER tasks_written AFTER INSERT OR UPDATE ON tasks FOR EACH ROW EXECUTE FUNCTION drover_task_written();

CREATE FUNCTION drover_task_deleted() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  PERFORM drover_count_task(OLD.owner, OLD.state, hashtext(OLD.id) & 15, -1);
  RETURN NULL;
END
$f$;
CREATE TRIGGER tasks_deleted AFTER DELETE ON tasks FOR EACH ROW EXECUTE FUNCTION drover_task_deleted();

CREATE FUNCTION drover_attempt_started() RETURNS trigger LANGUAGE plpgsql AS $f$
DECLARE
  o text;
  lat bigint;
BEGIN
  SELECT t.owner, CASE WHEN NEW.number = 1 THEN greatest(0, NEW.started_at - t.created_at) END INTO o, lat FROM tasks t WHERE t.id = NEW.task_id;
  INSERT INTO task_minutes (minute, owner, shard, started, latency_count, latency_sum_ms, latency_max_ms)
  VALUES (NEW.started_at - NEW.started_at % 60000, o, hashtext(NEW.task_id) & 15, 1, (lat IS NOT NULL)::int, coalesce(lat, 0), coalesce(lat, 0))
  ON CONFLICT (minute, owner, shard) DO UPDATE SET started = task_minutes.started + 1,
    latency_count = task_minutes.latency_count + EXCLUDED.latency_count,
    latency_sum_ms = task_minutes.latency_sum_ms + EXCLUDED.latency_sum_ms,
    latency_max_ms = greatest(task_minutes.latency_max_ms, EXCLUDED.latency_max_ms);
  RETURN NULL;
END
$f$;
CREATE TRIGGER attempts_started AFTER INSERT ON attempts FOR EACH ROW EXECUTE FUNCTION drover_attempt_started();

-- at: the write's time (a registration's or disconnect's last_seen_at, a drain's draining_at).
CREATE FUNCTION drover_worker_written() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  INSERT INTO changes (topic, ref, owner, state, at) VALUES ('worker', NEW.id, NULL, NULL, greatest(NEW.last_seen_at, NEW.draining_at));
  RETURN NULL;
END
$f$;
CREATE TRIGGER workers_inserted AFTER INSERT ON workers FOR EACH ROW EXECUTE FUNCTION drover_worker_written();
-- Every column but last_seen_at (a heartbeat changes only that); a new workers column is added here.
CREATE TRIGGER workers_updated AFTER UPDATE ON workers FOR EACH ROW
WHEN ((OLD.hostname, OLD.slots, OLD.labels, OLD.connected_at, OLD.state, OLD.token_id, OLD.draining_at)
      IS DISTINCT FROM (NEW.hostname, NEW.slots, NEW.labels, NEW.connected_at, NEW.state, NEW.token_id, NEW.draining_at))
EXECUTE FUNCTION drover_worker_written();

-- The Tasks page (task-list.ts): every filter is an equality and an id range (or a
-- name range, byte-wise: name is COLLATE "C") on one of these, read newest first.
-- The time range became an id range, so tasks_created_at is unused; tasks_name is
-- replaced by (name, id).
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
    name: 'set-based counters: statement-level triggers, task_counts and task_minutes take delta rows, folded by foldCounters',
    sql: `
-- Measured (issue 9). With version 4's row triggers, every task row written
-- ran a PL/pgSQL function (a feed row, and an upsert of one of 16 counter rows
-- per (owner, state) and of one minute row), and the upserts locked those rows
-- until COMMIT. Statements that move several tasks (batched claims and ends,
-- batch submits) locked them in row order, so two such statements deadlocked
-- (PostgreSQL notices after deadlock_timeout, 1 s): a contract test of 6
-- concurrent 8-task claims failed with 40P01. Now:
--   * every trigger is FOR EACH STATEMENT with transition tables, and writes
--     the feed rows, the counter deltas and the minute deltas of the whole
--     statement set-based: one function call per statement, not per row;
--   * counters and minutes take INSERTed delta rows (no unique key), which lock
--     nothing another writer wants; readers sum the rows (they already summed
--     the 16 shards), and foldCounters (the elected sweeper, every sweep)
--     replaces the rows of each key by their sum, so reads stay small.
DROP TRIGGER tasks_written ON tasks;
DROP TRIGGER tasks_deleted ON tasks;
DROP TRIGGER attempts_started ON attempts;
DROP FUNCTION drover_task_written();
DROP FUNCTION drover_task_deleted();
DROP FUNCTION drover_attempt_started();
DROP FUNCTION drover_count_task(text, text, integer, integer);
ALTER TABLE task_counts DROP CONSTRAINT task_counts_pkey;
CREATE INDEX task_counts_owner_state ON task_counts (owner, state);
ALTER TABLE task_minutes DROP CONSTRAINT task_minutes_pkey;
CREATE INDEX task_minutes_minute ON task_minutes (minute);
-- Unused since version 3's tasks_queue_free and tasks_queue_placed (the claim reads those): one index fewer
-- to write at every submit, claim and end.
DROP INDEX tasks_queue;

-- New tasks: their feed rows, +1 per (owner, state).
CREATE FUNCTION drover_tasks_inserted() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  WITH c AS (
    INSERT INTO task_counts (owner, state, shard, n) SELECT owner, state, 0, count(*) FROM new_rows GROUP BY owner, state
  )
  INSERT INTO changes (topic, ref, owner, state, at) SELECT 'task', id, owner, state, updated_at FROM new_rows ORDER BY id;
  RETURN NULL;
END
$f$;
CREATE TRIGGER tasks_inserted AFTER INSERT ON tasks REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION drover_tasks_inserted();

-- Written tasks: a feed row each; -1/+1 for each that changed state (or owner);
-- the minute's ends for each that entered succeeded, failed or cancelled from a
-- non-terminal state (counted in its updated_at minute).
CREATE FUNCTION drover_tasks_updated() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  WITH moved AS (
    SELECT o.owner AS old_owner, o.state AS old_state, n.owner, n.state, n.updated_at
    FROM old_rows o JOIN new_rows n USING (id)
    WHERE (o.state, o.owner) IS DISTINCT FROM (n.state, n.owner)
  ), c AS (
    INSERT INTO task_counts (owner, state, shard, n)
    SELECT owner, state, 0, sum(d) FROM (
      SELECT old_owner AS owner, old_state AS state, -1 AS d FROM moved
      UNION ALL
      SELECT owner, state, 1 FROM moved
    ) x GROUP BY owner, state HAVING sum(d) <> 0
  ), m AS (
    INSERT INTO task_minutes (minute, owner, shard, succeeded, failed, cancelled)
    SELECT updated_at - updated_at % 60000, owner, 0,
           count(*) FILTER (WHERE state = 'succeeded'), count(*) FILTER (WHERE state = 'failed'), count(*) FILTER (WHERE state = 'cancelled')
    FROM moved
    WHERE state IN ('succeeded', 'failed', 'cancelled') AND old_state NOT IN ('succeeded', 'failed', 'cancelled')
    GROUP BY 1, 2
  )
  INSERT INTO changes (topic, ref, owner, state, at) SELECT 'task', id, owner, state, updated_at FROM new_rows ORDER BY id;
  RETURN NULL;
END
$f$;
CREATE TRIGGER tasks_updated AFTER UPDATE ON tasks REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION drover_tasks_updated();

CREATE FUNCTION drover_tasks_deleted() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  INSERT INTO task_counts (owner, state, shard, n) SELECT owner, state, 0, -count(*) FROM old_rows GROUP BY owner, state;
  RETURN NULL;
END
$f$;
CREATE TRIGGER tasks_deleted AFTER DELETE ON tasks REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION drover_tasks_deleted();

-- New attempts count as started in their started_at minute; a first attempt adds
-- its submit-to-start latency (never below 0).
CREATE FUNCTION drover_attempts_inserted() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  INSERT INTO task_minutes (minute, owner, shard, started, latency_count, latency_sum_ms, latency_max_ms)
  SELECT a.started_at - a.started_at % 60000, t.owner, 0, count(*), count(*) FILTER (WHERE a.number = 1),
         coalesce(sum(greatest(0, a.started_at - t.created_at)) FILTER (WHERE a.number = 1), 0),
         coalesce(max(greatest(0, a.started_at - t.created_at)) FILTER (WHERE a.number = 1), 0)
  FROM new_rows a JOIN tasks t ON t.id = a.task_id
  GROUP BY 1, 2;
  RETURN NULL;
END
$f$;
CREATE TRIGGER attempts_inserted AFTER INSERT ON attempts REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION drover_attempts_inserted();
`,
  },
  {
    version: 6,
    name: 'task cwd; tasks submitted to run later (ready with run_after)',
    sql: `
-- The directory an attempt runs in on the worker (NULL: its work directory).
ALTER TABLE tasks ADD COLUMN cwd TEXT;
-- promoteDue / nextDueAt for tasks submitted to run later: the scheduled 'ready'
-- tasks in run_after order (a ready task a manual retry holds has no run_after).
CREATE INDEX tasks_ready_due ON tasks (run_after, id) WHERE state = 'ready' AND run_after IS NOT NULL;
`,
  },
  {
    version: 7,
    name: 'cron schedules, their runs, one task per (schedule, slot), leadership epochs',
    sql: `
-- A cron schedule (store/schedules.ts); see sqlite/migrations.ts version 7 for the
-- columns. template is the TaskSpec as JSON text; next_fire_at is NULL while paused.
CREATE TABLE schedules (
  id            TEXT COLLATE "C" PRIMARY KEY,
  owner         TEXT COLLATE "C" NOT NULL,
  name          TEXT COLLATE "C" NOT NULL,
  expr          TEXT NOT NULL,
  tz            TEXT NOT NULL,
  overlap       TEXT NOT NULL CHECK (overlap IN ('allow', 'forbid', 'replace')),
  catchup       TEXT NOT NULL CHECK (catchup IN ('none', 'latest', 'all')),
  max_catchup   INTEGER NOT NULL,
  template      TEXT NOT NULL,
  paused        BOOLEAN NOT NULL DEFAULT false,
  next_fire_at  BIGINT,
  last_slot_at  BIGINT,
  version       BIGINT NOT NULL DEFAULT 1,
  created_at    BIGINT NOT NULL,
  updated_at    BIGINT NOT NULL,
  UNIQUE (owner, name)
);
CREATE INDEX schedules_owner_id ON schedules (owner, id);
CREATE INDEX schedules_due ON schedules (next_fire_at, id) WHERE next_fire_at IS NOT NULL AND NOT paused;

-- One row per slot decision; task_id without a foreign key (task retention may remove the task).
CREATE TABLE schedule_runs (
  schedule_id  TEXT COLLATE "C" NOT NULL REFERENCES schedules(id),
  slot_at      BIGINT NOT NULL,
  outcome      TEXT NOT NULL CHECK (outcome IN ('fired', 'skipped')),
  reason       TEXT,
  task_id      TEXT COLLATE "C",
  at           BIGINT NOT NULL,
  PRIMARY KEY (schedule_id, slot_at)
);

-- One run per slot: fireSchedule inserts ON CONFLICT (schedule_id, scheduled_at) DO NOTHING.
ALTER TABLE tasks ADD COLUMN schedule_id TEXT COLLATE "C";
ALTER TABLE tasks ADD COLUMN scheduled_at BIGINT;
CREATE UNIQUE INDEX tasks_schedule_slot ON tasks (schedule_id, scheduled_at) WHERE schedule_id IS NOT NULL;

-- Fencing epoch of a lease: +1 each time it changes holder or is taken after expiring.
ALTER TABLE leaders ADD COLUMN epoch BIGINT NOT NULL DEFAULT 1;
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
ALTER TABLE schedule_runs ADD COLUMN catchup_exact BOOLEAN;
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
    sql: `
ALTER TABLE tasks DROP CONSTRAINT tasks_state_check;
ALTER TABLE tasks ADD CONSTRAINT tasks_state_check
  CHECK (state IN ('ready', 'waiting', 'running', 'retrying', 'succeeded', 'failed', 'cancelled', 'skipped'));

-- A DAG (issue 12): one row per (owner, name), pointing at its newest version.
CREATE TABLE dags (
  id              TEXT COLLATE "C" PRIMARY KEY,
  owner           TEXT COLLATE "C" NOT NULL,
  name            TEXT COLLATE "C" NOT NULL,
  latest_version  INTEGER NOT NULL,
  created_at      BIGINT NOT NULL,
  updated_at      BIGINT NOT NULL,
  UNIQUE (owner, name)
);
-- Every version ever applied (immutable): definition is core/dag/dag-definition.ts
-- DagDefinition as JSON, hash its sha256 (an unchanged file stores no new version).
CREATE TABLE dag_versions (
  dag_id      TEXT COLLATE "C" NOT NULL REFERENCES dags(id),
  version     INTEGER NOT NULL,
  definition  TEXT NOT NULL,
  hash        TEXT NOT NULL,
  step_count  INTEGER NOT NULL,
  created_at  BIGINT NOT NULL,
  PRIMARY KEY (dag_id, version)
);
-- A run of one version. Its steps are tasks (tasks.dag_run_id, dag_step). state is
-- written by the transaction that ends its last step (or by cancel); schedule_id and
-- scheduled_at: a cron schedule's run of the DAG, one per slot as for tasks.
CREATE TABLE dag_runs (
  id           TEXT COLLATE "C" PRIMARY KEY,
  owner        TEXT COLLATE "C" NOT NULL,
  dag_id       TEXT COLLATE "C" NOT NULL REFERENCES dags(id),
  dag_name     TEXT COLLATE "C" NOT NULL,
  version      INTEGER NOT NULL,
  state        TEXT NOT NULL CHECK (state IN ('running', 'succeeded', 'failed', 'cancelled')),
  params       TEXT NOT NULL,
  step_count   INTEGER NOT NULL,
  -- The run's step states, one character per step in definition order (core/dag/step-states.ts):
  -- what its progress decides from, written with every step change, so a step's end reads this
  -- row instead of every step's.
  step_states  TEXT NOT NULL,
  schedule_id  TEXT COLLATE "C",
  scheduled_at BIGINT,
  created_at   BIGINT NOT NULL,
  updated_at   BIGINT NOT NULL,
  ended_at     BIGINT
);
CREATE INDEX dag_runs_owner_id ON dag_runs (owner, id);
CREATE INDEX dag_runs_dag_id ON dag_runs (dag_id, id);
CREATE UNIQUE INDEX dag_runs_schedule_slot ON dag_runs (schedule_id, scheduled_at) WHERE schedule_id IS NOT NULL;

-- A task that is a DAG step: its run and step name (unique in the run), and why it
-- was skipped. No foreign key on dag_run_id: retention may remove runs and tasks apart.
ALTER TABLE tasks ADD COLUMN dag_run_id TEXT COLLATE "C";
ALTER TABLE tasks ADD COLUMN dag_step TEXT COLLATE "C";
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
ALTER TABLE schedules ADD COLUMN dag_name TEXT COLLATE "C";
ALTER TABLE schedules ADD COLUMN dag_params TEXT;
-- A DAG schedule's fired slot: the run it started (task_id is NULL then). No foreign key,
-- as for task_id: the record outlives the run.
ALTER TABLE schedule_runs ADD COLUMN dag_run_id TEXT COLLATE "C";
-- activeScheduleRuns for a DAG schedule (overlap forbid / replace): its running runs.
CREATE INDEX dag_runs_schedule_active ON dag_runs (schedule_id, id) WHERE schedule_id IS NOT NULL AND state = 'running';
`,
  },
  {
    version: 13,
    name: 'the queue and due indexes hold only the states they are read for (SQLite only: PostgreSQL has had them since versions 1 and 9)',
    // SQLite's version 13 makes its tasks_queue and tasks_due partial, as these already are here
    // (tasks_queue_free, tasks_queue_placed, tasks_due, tasks_ready_due); this version only keeps
    // the numbering in step.
    sql: '',
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
    name: 'no foreign-key checks on the hot path: attempts and task_events to tasks, tasks to their current attempt',
    sql: `
-- Measured (issue 9, 2026-12-05, auto_explain with log_triggers on a live server): in the
-- statement that ends 10 attempts and claims 10 tasks (end-claimed.ts), 2.7 ms in the database,
-- the 40 foreign-key checks took 0.96 ms: 20 for the events, 10 for the attempts, 10 for the
-- tasks' current attempt. Each is a primary-key probe that also locks the referenced row
-- FOR KEY SHARE, which writes that tuple and a WAL record. Without them, alternating runs on
-- one machine: a 20,000-task no-op drain (one 10-slot agent) median 2,102 -> 2,232/s (seven
-- pairs, six won) and 2,982 -> 3,232/s with --prefetch 20 (seven pairs, four won); 1,000-task
-- batch submits 18,739-23,110 -> 25,983-29,486 tasks/s (four pairs, all won); sequential
-- single submits no different (944-1,190 against 1,066-1,249/s).
--
-- What the checks guarded is kept by construction, and tested instead
-- (test/support/pg-integrity.ts, run on every PostgreSQL contract test's database):
--   * every attempt and every event is inserted by a statement that takes its task_id from
--     the task row it inserts, updates or has read in the same transaction, and no code
--     deletes a task or an attempt, so the task stays;
--   * current_attempt_id is set only by the claim, to the id of the attempt inserted by the
--     same statement for the same task (claim-sql.ts, create-task-sql.ts).
-- log_chunks keeps its foreign key: a log append is not on the claim or end path.
-- SQLite keeps its foreign keys (its version 15 says why).
ALTER TABLE task_events DROP CONSTRAINT task_events_task_id_fkey;
ALTER TABLE attempts DROP CONSTRAINT attempts_task_id_fkey;
ALTER TABLE tasks DROP CONSTRAINT tasks_current_attempt_fk;
`,
  },
];

/** The schema version this code writes. */
export const LATEST_SCHEMA_VERSION: number = MIGRATIONS.reduce((v, m) => Math.max(v, m.version), 0);

/**
 * Advisory lock key (two int4 halves) that serializes migrate() across every
 * process attached to the database: 0x44524f56 is "DROV", 1 is "migrate".
 */
export const MIGRATION_LOCK: readonly [number, number] = [0x44524f56, 1];

/**
 * Applies the migrations newer than the database's version, in one
 * transaction under a transaction-level advisory lock: servers starting
 * together queue here, the first applies the migrations, the others then see
 * them applied and do nothing. DDL is transactional, so a failed migration
 * leaves the previous version intact.
 */
export async function applyMigrations(db: Db): Promise<void> {
  await db.write(async (tx) => {
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
