/**
 * The read models' queries use indexes (store/task-views.ts): after filling
 * 30,000 tasks (with attempts, changes, counters, minute rows and log chunks)
 * and ANALYZE, the plans of the very SQL the stores run (their exported
 * builders, with the values a page would pass) must show an index on tasks,
 * no full scan of a large table, and no sort of the whole table.
 *
 * Sorts that are accepted, and why:
 *   - a name-prefix filter reads the (name, id) or (owner, name, id) range and
 *     sorts only the rows in that range by id (a b-tree cannot give one name
 *     range in id order); or, where the planner judges the prefix common, it
 *     reads an index in id order and stops at the limit, with no sort;
 *   - PostgreSQL may sort (top-N) the rows an index condition matched when it
 *     estimates them to be few (at most SORT_ROWS_MAX, 5% of the table), rather
 *     than read the index in order: never a sort of the table;
 *   - PostgreSQL readChanges sorts the at most `limit` changes its LIMITed
 *     lateral read returned (the outer ORDER BY that makes the order a
 *     guarantee, not a plan accident);
 *   - runningAttempts sorts the running attempts (of one worker) only: a
 *     partial index holds just those; minuteStats sorts the rows of its minute range;
 *   - the DAG run list follows the PostgreSQL rule above (a top-N sort of one
 *     DAG's matched runs); dagRunStepCounts groups the page's steps (SQLite's
 *     GROUP BY b-tree, PostgreSQL's hash or sort), never the table's.
 * The DAG queries (issue 12) and DAG schedules' are held to the same: run
 * lists read the dag_runs index made for their filter, a run's steps and
 * outputs tasks_dag_step, a schedule's runs its partial indexes of dag_runs.
 * Needs PostgreSQL like the other PostgreSQL suites (DROVER_TEST_SKIP_POSTGRES=1 skips that half).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { newTaskId } from '../../src/core/ids.js';
import { DAG_RUN_STEPS_SQL } from '../../src/store/dag-rows.js';
import { dagRunListQuery, stepCountsSql } from '../../src/store/dag-run-list.js';
import type { DagRunFilter } from '../../src/store/dags.js';
import { OUTPUTS_OF as PG_OUTPUTS_OF } from '../../src/store/postgres/dag-runs.js';
import { FEED_SQL as PG_FEED_SQL } from '../../src/store/postgres/feed.js';
import { LOG_SQL as PG_LOG_SQL } from '../../src/store/postgres/logs.js';
import { openPostgresStore } from '../../src/store/postgres/postgres-store.js';
import { DUE_SQL as PG_DUE_SQL } from '../../src/store/postgres/tasks.js';
import { CLAIM_SQL as LITE_CLAIM_SQL } from '../../src/store/sqlite/attempts.js';
import { DUE_SQL as LITE_DUE_SQL } from '../../src/store/sqlite/tasks.js';
import {
  ACTIVE_RUNS_SQL as PG_ACTIVE_RUNS_SQL,
  DAG_SLOTS_TAKEN_SQL as PG_DAG_SLOTS_TAKEN_SQL,
  PRUNE_RUNS_SQL as PG_PRUNE_RUNS_SQL,
  SCHEDULE_DUE_SQL as PG_SCHEDULE_DUE_SQL,
} from '../../src/store/postgres/schedules.js';
import { OUTPUTS_OF as LITE_OUTPUTS_OF } from '../../src/store/sqlite/dag-runs.js';
import {
  ACTIVE_DAG_RUNS_SQL as LITE_ACTIVE_DAG_RUNS_SQL,
  ACTIVE_RUNS_SQL as LITE_ACTIVE_RUNS_SQL,
  DAG_SLOT_TAKEN_SQL as LITE_DAG_SLOT_TAKEN_SQL,
  PRUNE_RUNS_SQL as LITE_PRUNE_RUNS_SQL,
  SCHEDULE_DUE_SQL as LITE_SCHEDULE_DUE_SQL,
} from '../../src/store/sqlite/schedules.js';
import { postgresTaskListQuery, VIEW_SQL as PG_VIEW_SQL } from '../../src/store/postgres/task-views.js';
import { FEED_SQL as LITE_FEED_SQL } from '../../src/store/sqlite/feed.js';
import { LOG_SQL as LITE_LOG_SQL } from '../../src/store/sqlite/logs.js';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { sqliteTaskListQuery, VIEW_SQL as LITE_VIEW_SQL } from '../../src/store/sqlite/task-views.js';
import type { TaskFilter } from '../../src/store/tasks.js';
import { createTestDatabase, dropAllTestDatabases, PG_SKIP_REASON, requirePostgres, type TestDatabase } from '../support/postgres.js';

const PG = await requirePostgres();
const T0 = 1_700_000_000_000;
const N = 30_000;
const NAMES = ['build-web', 'build-api', 'deploy-eu', 'deploy-us', 'test-unit', 'test-e2e', 'nightly', 'report'];
/** 60 running (a fleet's slots), 5% waiting, 5% retrying, 8% cancelled, 10% failed, the rest succeeded: a scheduler some time in. */
function stateOf(i: number): string {
  if (i % 500 === 7) return 'running';
  const k = i % 100;
  return k < 5 ? 'waiting' : k < 10 ? 'retrying' : k < 18 ? 'cancelled' : k < 28 ? 'failed' : 'succeeded';
}

interface Row {
  id: string;
  owner: string;
  name: string;
  state: string;
  createdAt: number;
}
/** One task every 100 ms, over 50 owners and 8 name families. */
const ROWS: Row[] = Array.from({ length: N }, (_, i) => ({
  id: newTaskId(T0 + i * 100),
  owner: `u${i % 50}`,
  name: `${NAMES[(i * 7) % NAMES.length]}-${i % 97}`,
  state: stateOf(i),
  createdAt: T0 + i * 100,
}));
const MID = ROWS[N / 2]!;
/**
 * Due times for promoteDue / nextDueAt: every retrying task's backoff ends 5 s after
 * it was made, and 1% of the tasks were submitted to run later (ready, run_after set).
 */
const DUE_DATA = `
  UPDATE tasks SET run_after = created_at + 5000 WHERE state = 'retrying';
  UPDATE tasks SET state = 'ready', run_after = created_at + 60000 WHERE state = 'waiting' AND (created_at - ${T0}) / 100 % 100 = 3;`;
/**
 * 5,000 schedules, one due every 600 ms from T0 on, owners u0..u49; every 10th
 * paused (no next fire time), every 25th exhausted (none either).
 */
const SCHEDULES = 5000;
const scheduleData = (series: string, k: string) => `
  INSERT INTO schedules (id, owner, name, expr, tz, overlap, catchup, max_catchup, template, paused, next_fire_at, created_at, updated_at)
    SELECT 'S' || substr('0000000000' || ${k}, -10), 'u' || (${k} % 50), 'sched-' || ${k}, '* * * * *', 'UTC', 'allow', 'latest', 10, '{}',
           CASE WHEN ${k} % 10 = 0 THEN TRUE ELSE FALSE END,
           CASE WHEN ${k} % 10 = 0 OR ${k} % 25 = 0 THEN NULL ELSE ${T0} + ${k} * 600 END, ${T0}, ${T0}
    FROM ${series};`;

/**
 * A schedule's runs (GET /v1/tasks?schedule=NAME): every 10th task is a run of
 * one of 50 schedules, each run of schedule S<k> owned by u<k> (k = i mod 50),
 * 60 runs a schedule, its slot its creation time.
 */
const SCHEDULE_RUN_DATA = `
  UPDATE tasks SET schedule_id = 'S' || ((created_at - ${T0}) / 100 % 50), scheduled_at = created_at WHERE (created_at - ${T0}) / 100 % 10 = 1;`;

/**
 * Run records: 20 a schedule, and 1,200 for S0..S19, which are then over the
 * retention limit (run_count > SCHEDULE_RUNS_KEPT + SCHEDULE_RUNS_SLACK).
 * `upTo(n)` is a FROM item of the integers 0..n-1 as g(k).
 */
const runRecordData = (upTo: (n: number) => string) => `
  INSERT INTO schedule_runs (schedule_id, slot_at, outcome, reason, task_id, at)
    SELECT s.id, ${T0} + g.k * 60000, 'skipped', 'overlap_forbid', NULL, ${T0} FROM schedules s, ${upTo(20)};
  INSERT INTO schedule_runs (schedule_id, slot_at, outcome, reason, task_id, at)
    SELECT s.id, ${T0} + (g.k + 20) * 60000, 'skipped', 'overlap_forbid', NULL, ${T0} FROM schedules s, ${upTo(1180)} WHERE s.id < 'S0000000020';
  UPDATE schedules SET run_count = (SELECT count(*) FROM schedule_runs r WHERE r.schedule_id = schedules.id);`;

/**
 * DAGs (issue 12): 200 DAGs (dag k owned by u<k mod 50>) and 20,000 runs, run k
 * of dag k mod 200 (so of its owner), one every 150 ms; 313 running, the rest
 * ended. Run k mod 20 = 5 is a slot of one of 20 DAG schedules S50..S69 (50
 * runs each; S50, S54, ... have running ones). Run k mod 10 = 5 has its 5
 * steps as tasks (10,000): released, claimed (an attempt) and succeeded with
 * outputs; a running run's steps: 2 succeeded, 1 running, 2 ready. Every task
 * has a submitted event, every attempt a claimed one, a released step a
 * released one. Run ids are ULID-shaped and in k order: RUN_ID(k).
 */
const DAG_RUNS = 20_000;
const DAG_STEPS = 5;
const STEP_TASKS = (DAG_RUNS / 10) * DAG_STEPS;
const RUN_ID_HEAD = '01HZ0000000000';
const RUN_ID = (k: number) => `${RUN_ID_HEAD}${100_000_000_000 + k}`;
const dagData = (upTo: (n: number) => string) => `
  INSERT INTO dags (id, owner, name, latest_version, created_at, updated_at)
    SELECT 'D' || (1000 + g.k), 'u' || (g.k % 50), 'dag-' || g.k, 1, ${T0}, ${T0} FROM ${upTo(200)};
  INSERT INTO dag_runs (id, owner, dag_id, dag_name, version, state, params, step_count, step_states, schedule_id, scheduled_at, created_at, updated_at, ended_at)
    SELECT '${RUN_ID_HEAD}' || (100000000000 + g.k), 'u' || (g.k % 50), 'D' || (1000 + g.k % 200), 'dag-' || (g.k % 200), 1,
           CASE WHEN g.k % 64 = 5 THEN 'running' WHEN g.k % 10 = 3 THEN 'failed' WHEN g.k % 25 = 4 THEN 'cancelled' ELSE 'succeeded' END,
           '{}', ${DAG_STEPS}, 'sssss', CASE WHEN g.k % 20 = 5 THEN 'S' || (50 + g.k / 20 % 20) END, CASE WHEN g.k % 20 = 5 THEN ${T0} + g.k * 150 END,
           ${T0} + g.k * 150, ${T0} + g.k * 150 + 60000, CASE WHEN g.k % 64 = 5 THEN NULL ELSE ${T0} + g.k * 150 + 60000 END
    FROM ${upTo(DAG_RUNS)};
  INSERT INTO tasks (id, owner, name, kind, state, command, args, script, interpreter, env, timeout_ms, max_retries, retry_base_delay_ms,
       retry_factor, retry_max_delay_ms, priority, labels, requires, attempts, outputs, dag_run_id, dag_step, created_at, updated_at)
    SELECT '01J00000000000' || (100000000000 + g.k), r.owner, r.dag_name || '.s' || (g.k % ${DAG_STEPS}), 'batch',
           CASE WHEN r.state <> 'running' OR g.k % ${DAG_STEPS} < 2 THEN 'succeeded' WHEN g.k % ${DAG_STEPS} = 2 THEN 'running' ELSE 'ready' END,
           'true', '[]', NULL, '[]', '{}', NULL, 0, 1000, 2, 60000, 0, '{}', '{}',
           CASE WHEN r.state = 'running' AND g.k % ${DAG_STEPS} > 2 THEN 0 ELSE 1 END,
           CASE WHEN r.state <> 'running' OR g.k % ${DAG_STEPS} < 2 THEN '{"OUT":"1"}' END,
           r.id, 's' || (g.k % ${DAG_STEPS}), r.created_at, r.created_at + 1000
    FROM ${upTo(STEP_TASKS)} JOIN dag_runs r ON r.id = '${RUN_ID_HEAD}' || (100000000000 + g.k / ${DAG_STEPS} * 10 + 5);
  INSERT INTO attempts (task_id, number, worker_id, fencing_token, state, started_at, lease_expires_at, ended_at)
    SELECT id, 1, 'w' || (created_at / 100 % 20), '', CASE WHEN state = 'running' THEN 'running' ELSE 'succeeded' END,
           created_at + 50, created_at + 60000, CASE WHEN state = 'running' THEN NULL ELSE created_at + 90 END
    FROM tasks WHERE dag_run_id IS NOT NULL AND state <> 'ready' ORDER BY id;
  INSERT INTO task_events (task_id, from_state, to_state, reason, actor, at, detail)
    SELECT id, NULL, CASE WHEN dag_run_id IS NULL THEN 'waiting' ELSE 'ready' END, 'submitted', owner, created_at, NULL FROM tasks ORDER BY id;
  INSERT INTO task_events (task_id, from_state, to_state, reason, actor, at, detail)
    SELECT id, 'ready', 'waiting', 'released', 'dag', created_at + 10, NULL FROM tasks WHERE dag_run_id IS NOT NULL AND state <> 'ready' ORDER BY id;
  INSERT INTO task_events (task_id, from_state, to_state, reason, actor, at, detail)
    SELECT task_id, 'waiting', 'running', 'claimed', worker_id, started_at, NULL FROM attempts ORDER BY id;`;
/** A running run with a DAG schedule (S50) and steps, an ended one with steps, and a page of 50 runs with steps. */
const RUNNING_RUN = RUN_ID(5);
const ENDED_RUN = RUN_ID(10_005);
const STEPPED_PAGE = Array.from({ length: 50 }, (_, j) => RUN_ID(10_005 + j * 10));
const MID_RUN = RUN_ID(DAG_RUNS / 2);

interface DagRunVariant {
  name: string;
  filter: Omit<DagRunFilter, 'limit'>;
  /** SQLite's one read of dag_runs. */
  sqlite: RegExp;
  /** PostgreSQL's one index of dag_runs, and its index condition (none: read in order, stopped at the limit). */
  index: string;
  cond?: RegExp;
  /**
   * Another index PostgreSQL may read instead, in order and with no sort, and
   * why that is accepted (measured): a cost tie, not a scan of the table.
   */
  pgAlso?: { index: string; why: string };
}
const DAG_RUN_VARIANTS: DagRunVariant[] = [
  { name: 'no filter', filter: {}, sqlite: /^SCAN dag_runs USING INDEX sqlite_autoindex_dag_runs_1$/, index: 'dag_runs_pkey' },
  { name: 'owner', filter: { owner: 'u7' }, sqlite: /^SEARCH dag_runs USING INDEX dag_runs_owner_id \(owner=\?\)$/, index: 'dag_runs_owner_id', cond: /^\(owner = 'u7'::text\)$/ },
  { name: 'dag', filter: { dagId: 'D1007' }, sqlite: /^SEARCH dag_runs USING INDEX dag_runs_dag_id \(dag_id=\?\)$/, index: 'dag_runs_dag_id', cond: /^\(dag_id = 'D1007'::text\)$/ },
  { name: 'id prefix', filter: { idPrefix: MID_RUN.slice(0, 24) }, sqlite: /^SEARCH dag_runs USING INDEX sqlite_autoindex_dag_runs_1 \(id>\? AND id<\?\)$/, index: 'dag_runs_pkey', cond: /^\(\(id >= '\w+'::text\) AND \(id < '\w+'::text\)\)$/ },
  { name: 'cursor', filter: { cursor: MID_RUN }, sqlite: /^SEARCH dag_runs USING INDEX sqlite_autoindex_dag_runs_1 \(id<\?\)$/, index: 'dag_runs_pkey', cond: /^\(id < '\w+'::text\)$/ },
  {
    name: 'owner + cursor',
    filter: { owner: 'u7', cursor: MID_RUN },
    sqlite: /^SEARCH dag_runs USING INDEX dag_runs_owner_id \(owner=\? AND id<\?\)$/,
    index: 'dag_runs_owner_id',
    cond: /^\(\(owner = 'u7'::text\) AND \(id < '\w+'::text\)\)$/,
    pgAlso: {
      index: 'dag_runs_pkey',
      why:
        'PostgreSQL 15 may read the primary key backward from the cursor, filtering on the owner (here 2,543 rows for 51, estimated 159 against 162 ' +
        'for dag_runs_owner_id: narrow rows in id order); an owner with fewer runs tips it to dag_runs_owner_id',
    },
  },
  { name: 'dag + cursor', filter: { dagId: 'D1007', cursor: MID_RUN }, sqlite: /^SEARCH dag_runs USING INDEX dag_runs_dag_id \(dag_id=\? AND id<\?\)$/, index: 'dag_runs_dag_id', cond: /^\(\(dag_id = 'D1007'::text\) AND \(id < '\w+'::text\)\)$/ },
  // The API's ?dag=NAME sends the DAG alone (server/routes/dags.ts: a DAG's runs are its owner's).
];

/** A task with a long log (5,010 chunks), which a viewer pages backwards from its end. */
const BIG_LOG = ROWS[N - 1]!.id;
/** The most rows a plan may sort: what an index condition matched, a small part of the table. */
const SORT_ROWS_MAX = N / 20;

interface Variant {
  name: string;
  filter: Omit<TaskFilter, 'limit'>;
  /** A sort of the rows of a name range is accepted (see the header). */
  nameRangeSort?: boolean;
  /** No index condition on tasks is needed: the unfiltered first page reads the primary key in order and stops at the limit. */
  unfiltered?: boolean;
  /** SQLite's plan must read this index of tasks (the one the filter was made for); PostgreSQL's an index condition on its column. */
  index?: string;
}
const VARIANTS: Variant[] = [
  { name: 'no filter', filter: {}, unfiltered: true },
  { name: 'keyset cursor', filter: { cursor: MID.id } },
  { name: 'state', filter: { state: 'running' } },
  { name: 'state + cursor', filter: { state: 'waiting', cursor: MID.id } },
  { name: 'owner', filter: { owner: 'u7' } },
  { name: 'owner + cursor', filter: { owner: 'u7', cursor: MID.id } },
  { name: 'owner + state', filter: { owner: 'u7', state: 'failed' } },
  { name: 'owner + state + cursor', filter: { owner: 'u7', state: 'cancelled', cursor: MID.id } },
  { name: 'name prefix', filter: { namePrefix: 'deploy-eu-4' }, nameRangeSort: true },
  { name: 'owner + name prefix', filter: { owner: 'u7', namePrefix: 'build-' }, nameRangeSort: true },
  { name: 'id prefix', filter: { idPrefix: MID.id.slice(0, 11) } },
  { name: 'time range', filter: { createdAfter: T0 + 1_000_000, createdBefore: T0 + 1_100_000 } },
  { name: 'time range + owner', filter: { owner: 'u3', createdAfter: T0 + 1_000_000, createdBefore: T0 + 1_500_000 } },
  { name: 'created after + state', filter: { state: 'running', createdAfter: T0 + 2_500_000 } },
  { name: 'state + id prefix', filter: { state: 'succeeded', idPrefix: MID.id.slice(0, 10) } },
  { name: 'schedule', filter: { scheduleId: 'S11' }, index: 'tasks_schedule_id' },
  { name: 'schedule + cursor', filter: { scheduleId: 'S21', cursor: MID.id }, index: 'tasks_schedule_id' },
  { name: 'owner + schedule', filter: { owner: 'u11', scheduleId: 'S11' }, index: 'tasks_schedule_id' },
  // order=ended (the Overview's recent failures): the partial end indexes of migration 14, read in end order.
  { name: 'failed by end', filter: { state: 'failed', order: 'ended' }, index: 'tasks_ended' },
  { name: 'cancelled by end + cursor', filter: { state: 'cancelled', order: 'ended', cursor: `${MID.createdAt}.${MID.id}` }, index: 'tasks_ended' },
  { name: 'owner + failed by end', filter: { owner: 'u7', state: 'failed', order: 'ended' }, index: 'tasks_owner_ended' },
  { name: 'owner + failed by end + cursor', filter: { owner: 'u7', state: 'failed', order: 'ended', cursor: `${MID.createdAt}.${MID.id}` }, index: 'tasks_owner_ended' },
];

after(async () => {
  if (PG) await dropAllTestDatabases();
});

describe('query plans: SQLite', () => {
  let s: SqliteStore;
  before(async () => {
    s = openSqliteStore(':memory:');
    await s.migrate();
    s.db.transaction(() => {
      const ins = s.db.prepare(
        `INSERT INTO tasks (id, owner, name, kind, state, command, args, script, interpreter, env, timeout_ms, max_retries, retry_base_delay_ms,
           retry_factor, retry_max_delay_ms, priority, labels, requires, created_at, updated_at)
         VALUES (?, ?, ?, 'batch', ?, 'true', '[]', NULL, '[]', '{}', NULL, 0, 1000, 2, 60000, 0, '{}', '{}', ?, ?)`,
      );
      for (const r of ROWS) ins.run(r.id, r.owner, r.name, r.state, r.createdAt, r.createdAt);
      s.db.exec(`
        INSERT INTO attempts (task_id, number, worker_id, fencing_token, state, started_at, lease_expires_at, ended_at)
          SELECT id, 1, 'w' || (created_at / 100 % 20), '', CASE WHEN state = 'running' THEN 'running' ELSE 'succeeded' END,
                 created_at + 50, created_at + 60000, CASE WHEN state = 'running' THEN NULL ELSE created_at + 90 END
          FROM tasks WHERE state <> 'waiting' ORDER BY id;
        UPDATE tasks SET attempts = 1, current_attempt_id = (SELECT a.id FROM attempts a WHERE a.task_id = tasks.id AND a.number = 1) WHERE state <> 'waiting';
        WITH RECURSIVE g(k) AS (SELECT 10 UNION ALL SELECT k + 1 FROM g WHERE k < 5009)
        INSERT INTO log_chunks (task_id, attempt, seq, stream, at, data) SELECT '${BIG_LOG}', 1, g.k, 'stdout', ${T0}, x'00' FROM g;
        WITH RECURSIVE g(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM g WHERE k < 9)
        INSERT INTO log_chunks (task_id, attempt, seq, stream, at, data) SELECT t.id, 1, g.k, 'stdout', t.created_at, x'00' FROM (SELECT id, created_at FROM tasks ORDER BY id LIMIT 2000) t, g;
        ${DUE_DATA}
        ${SCHEDULE_RUN_DATA}
        ${scheduleData(`(WITH RECURSIVE g(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM g WHERE k < ${SCHEDULES - 1}) SELECT k FROM g) AS g`, 'g.k')}
        ${runRecordData((n) => `(WITH RECURSIVE g(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM g WHERE k < ${n - 1}) SELECT k FROM g) AS g`)}
        ${dagData((n) => `(WITH RECURSIVE g(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM g WHERE k < ${n - 1}) SELECT k FROM g) AS g`)}
        ANALYZE;
      `);
    })();
  });
  after(() => s.close());

  const plan = (sql: string, params: unknown[]) => (s.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as Array<{ detail: string }>).map((p) => p.detail);

  it('the data is there', () => {
    const count = (sql: string) => (s.db.prepare(sql).get() as { n: number }).n;
    assert.equal(count('SELECT count(*) AS n FROM tasks WHERE dag_run_id IS NULL'), N);
    assert.equal(count('SELECT count(*) AS n FROM tasks WHERE dag_run_id IS NOT NULL'), STEP_TASKS);
    assert.ok(count('SELECT count(*) AS n FROM changes') >= N);
    assert.equal(count('SELECT count(*) AS n FROM dag_runs'), DAG_RUNS);
  });

  for (const v of VARIANTS) {
    for (const shape of ['summaries', 'tasks'] as const) {
      it(`list ${shape}, ${v.name}: an index on tasks, in id order${v.nameRangeSort ? ' (name range sorted)' : ''}`, () => {
        const q = sqliteTaskListQuery({ ...v.filter, limit: 50 }, shape);
        const p = plan(q.sql, q.params);
        const onTasks = p.filter((d) => /^(SCAN|SEARCH) t\b/.test(d));
        if (v.nameRangeSort) {
          // The page's ids come from the covering name index (sorted: a name range is not
          // in id order), then only those rows are read by primary key (sqlite/task-views.ts).
          assert.equal(onTasks.length, 2, p.join('\n'));
          assert.ok(onTasks.some((d) => /^SEARCH t USING INDEX sqlite_autoindex_tasks_1 \(id=\?\)$/.test(d)), p.join('\n'));
          const inner = onTasks.find((d) => !/sqlite_autoindex_tasks_1 \(id=\?\)$/.test(d));
          assert.match(inner ?? '', /^SEARCH t USING (COVERING )?INDEX \S+ \(/, p.join('\n'));
          // Sorted only when read from the name range (else an index in id order, stopping at the limit).
          if (p.some((d) => /TEMP B-TREE/.test(d))) assert.match(inner!, /^SEARCH t USING COVERING INDEX tasks_(owner_)?name_id \(.*name>\? AND name<\?\)/, p.join('\n'));
          if (shape === 'summaries') assert.ok(p.some((d) => /^SEARCH a USING INTEGER PRIMARY KEY \(rowid=\?\)/.test(d)), p.join('\n'));
          return;
        }
        assert.equal(onTasks.length, 1, p.join('\n'));
        if (v.unfiltered) assert.match(onTasks[0]!, /^SCAN t USING (COVERING )?INDEX sqlite_autoindex_tasks_1$/, p.join('\n'));
        else assert.match(onTasks[0]!, /^SEARCH t USING (COVERING )?INDEX \S+ \(/, p.join('\n'));
        // A sort only of a name range; without a sort, the planner reads an index in id order.
        if (p.some((d) => /TEMP B-TREE/.test(d))) {
          assert.ok(v.nameRangeSort, p.join('\n'));
          assert.match(onTasks[0]!, /tasks_(owner_)?name_id \(.*name>\? AND name<\?\)/, p.join('\n'));
        }
        if (v.index) assert.match(onTasks[0]!, new RegExp(`INDEX ${v.index} \\(`), p.join('\n'));
        if (shape === 'summaries') assert.ok(p.some((d) => /^SEARCH a USING INTEGER PRIMARY KEY \(rowid=\?\)/.test(d)), p.join('\n'));
      });
    }
  }

  it('the queries of the other read models and the feed use their indexes', () => {
    const expect = (label: string, sql: string, params: unknown[], want: RegExp, sortOk = false) => {
      const p = plan(sql, params);
      assert.ok(p.some((d) => want.test(d)), `${label}:\n${p.join('\n')}`);
      assert.ok(!p.some((d) => /^SCAN (tasks|t|attempts|a|changes|log_chunks)$/.test(d)), `${label}: a full scan\n${p.join('\n')}`);
      if (!sortOk) assert.ok(!p.some((d) => /TEMP B-TREE/.test(d)), `${label}: a sort\n${p.join('\n')}`);
    };
    // Counts read the counters only, never tasks.
    for (const [label, sql, params] of [
      ['counts', LITE_VIEW_SQL.countsAll, []],
      ['counts of an owner', LITE_VIEW_SQL.countsOwner, ['u7']],
    ] as const) {
      const p = plan(sql, [...params]);
      assert.ok(p.every((d) => !/\btasks\b/.test(d)) && p.some((d) => /task_counts/.test(d)), `${label}:\n${p.join('\n')}`);
    }
    expect('counts of an owner', LITE_VIEW_SQL.countsOwner, ['u7'], /^SEARCH task_counts USING PRIMARY KEY \(owner=\?\)/);
    expect('running attempts', LITE_VIEW_SQL.running(false), [], /attempts_running_/, true);
    expect('running attempts of a worker', LITE_VIEW_SQL.running(true), ['w3'], /^SEARCH a USING INDEX attempts_running_worker \(worker_id=\?\)/);
    expect('readChanges', LITE_FEED_SQL.all, [100, 200, 50], /^SEARCH changes USING INTEGER PRIMARY KEY \(rowid>\? AND rowid<\?\)/);
    expect('readChanges of an owner', LITE_FEED_SQL.owner, ['u7', 100, 200, 50], /^SEARCH changes USING (COVERING )?INDEX changes_owner_id \(owner=\? AND (rowid|id)>\? AND (rowid|id)<\?\)/);
    expect('readLogsBefore', LITE_LOG_SQL.before, [BIG_LOG, 1_000_000, 32], /^SEARCH log_chunks USING (COVERING )?INDEX log_chunks_task_id \(task_id=\? AND (rowid|id)<\?\)/);
    expect('minute stats', LITE_VIEW_SQL.minutes(false), [T0 + 600_000, T0 + 900_000], /^SEARCH task_minutes USING PRIMARY KEY \(minute>\? AND minute<\?\)/);
    expect('minute stats of an owner', LITE_VIEW_SQL.minutes(true), ['u7', T0 + 600_000, T0 + 900_000], /^SEARCH task_minutes USING (COVERING )?INDEX task_minutes_owner \(owner=\? AND minute>\? AND minute<\?\)/, true);
  });

  it('the claim reads the head of tasks_queue, no sort', () => {
    const p = plan(LITE_CLAIM_SQL, [{ labels: '{}', max: 10 }]);
    // The partial index holds only waiting tasks in claim order: its head is the claim (no range to search).
    assert.ok(p.some((d) => /^SCAN t USING (COVERING )?INDEX tasks_queue$/.test(d)), p.join('\n'));
    assert.ok(!p.some((d) => /TEMP B-TREE|^SCAN t$/.test(d)), p.join('\n'));
  });

  it('the due queries (promoteDue, nextDueAt) read tasks_due and tasks_ready_due ranges in run_after order', () => {
    const mid = T0 + 1_500_000;
    for (const [state, index] of [['retrying', 'tasks_due'], ['ready', 'tasks_ready_due']] as const) {
      const p = plan(LITE_DUE_SQL.due(state), [mid, 256]);
      assert.ok(p.some((d) => new RegExp(`^SEARCH tasks USING (COVERING )?INDEX ${index} \\(run_after<\\?\\)`).test(d)), `due ${state}:\n${p.join('\n')}`);
      assert.ok(!p.some((d) => /TEMP B-TREE|^SCAN tasks$/.test(d)), `due ${state}:\n${p.join('\n')}`);
    }
    const p = plan(LITE_DUE_SQL.next, []);
    assert.equal(p.filter((d) => /tasks_due|tasks_ready_due/.test(d)).length, 2, p.join('\n'));
    assert.ok(!p.some((d) => /^SCAN tasks$/.test(d)), p.join('\n'));
  });

  it('the schedule due queries (dueSchedules, nextScheduleDueAt) read the head of schedules_due, no sort', () => {
    assert.equal((s.db.prepare('SELECT count(*) AS n FROM schedules').get() as { n: number }).n, SCHEDULES);
    for (const [label, sql, params] of [
      ['dueSchedules', LITE_SCHEDULE_DUE_SQL.due, [T0 + 1_500_000, 256]],
      ['nextScheduleDueAt', LITE_SCHEDULE_DUE_SQL.next, []],
    ] as const) {
      const p = plan(sql, [...params]);
      assert.ok(p.some((d) => /^(SEARCH|SCAN) schedules USING (COVERING )?INDEX schedules_due\b/.test(d)), `${label}:\n${p.join('\n')}`);
      assert.ok(!p.some((d) => /TEMP B-TREE|^SCAN schedules$/.test(d)), `${label}:\n${p.join('\n')}`);
    }
    assert.match(plan(LITE_SCHEDULE_DUE_SQL.due, [T0, 256]).join('\n'), /schedules_due \((next_fire_at>\? AND )?next_fire_at<\?\)/);
  });

  it("a schedule's active runs (activeScheduleRuns) read its range of tasks_schedule_active, no sort", () => {
    const active = s.db.prepare(LITE_ACTIVE_RUNS_SQL).all('S1', 1000) as Array<{ state: string }>;
    assert.ok(active.length > 0 && active.every((r) => !['succeeded', 'failed', 'cancelled'].includes(r.state)), 'S1 has active runs (waiting ones), and only those are returned');
    const p = plan(LITE_ACTIVE_RUNS_SQL, ['S1', 100]);
    assert.ok(p.some((d) => /^SEARCH tasks USING (COVERING )?INDEX tasks_schedule_active \(schedule_id=\?\)/.test(d)), p.join('\n'));
    assert.ok(!p.some((d) => /TEMP B-TREE|^SCAN tasks$/.test(d)), p.join('\n'));
  });

  it('run record retention (pruneScheduleRuns) finds the schedules over the limit in schedules_runs_over and trims a primary-key range', () => {
    const over = plan(LITE_PRUNE_RUNS_SQL.over, [10]);
    assert.ok(over.some((d) => /^(SCAN|SEARCH) schedules USING (COVERING )?INDEX schedules_runs_over\b/.test(d)), over.join('\n'));
    assert.ok(!over.some((d) => /TEMP B-TREE|^SCAN schedules$/.test(d)), over.join('\n'));
    const trim = s.db.prepare(`EXPLAIN QUERY PLAN ${LITE_PRUNE_RUNS_SQL.trim}`).all({ id: 'S1', n: 100 }) as Array<{ detail: string }>;
    assert.ok(trim.every((d) => !/^SCAN schedule_runs$/.test(d.detail)), trim.map((d) => d.detail).join('\n'));
  });

  for (const v of DAG_RUN_VARIANTS) {
    it(`DAG run list, ${v.name}: one read of the index made for it, in id order, no sort`, () => {
      const q = dagRunListQuery({ ...v.filter, limit: 50 }, () => '?');
      const p = plan(q.sql, q.params);
      assert.equal(p.length, 1, p.join('\n'));
      assert.match(p[0]!, v.sqlite);
    });
  }

  it("a run's steps (dagRunSteps) read tasks_dag_step, then each step's events and attempts by task", () => {
    const steps = s.db.prepare(DAG_RUN_STEPS_SQL('?')).all(ENDED_RUN) as Array<{ released_at: number | null; started_at: number | null }>;
    assert.ok(steps.length === DAG_STEPS && steps.every((r) => r.released_at !== null && r.started_at !== null), JSON.stringify(steps));
    const p = plan(DAG_RUN_STEPS_SQL('?'), [ENDED_RUN]);
    assert.ok(p.some((d) => /^SEARCH t USING INDEX tasks_dag_step \(dag_run_id=\?\)$/.test(d)), p.join('\n'));
    assert.ok(p.some((d) => /^SEARCH e USING INDEX task_events_task_id \(task_id=\?\)$/.test(d)), p.join('\n'));
    assert.ok(p.some((d) => /^SEARCH a USING INDEX sqlite_autoindex_attempts_1 \(task_id=\?\)$/.test(d)), p.join('\n'));
    assert.ok(!p.some((d) => /^SCAN|TEMP B-TREE/.test(d)), p.join('\n'));
  });

  it("a page's step counts (dagRunStepCounts) read tasks_dag_step per run; only the matched steps are grouped", () => {
    const sql = stepCountsSql(STEPPED_PAGE.map(() => '?').join(', '));
    assert.equal((s.db.prepare(`SELECT sum(n) AS n FROM (${sql})`).get(...STEPPED_PAGE) as { n: number }).n, STEPPED_PAGE.length * DAG_STEPS);
    const p = plan(sql, STEPPED_PAGE);
    assert.ok(p.some((d) => /^SEARCH tasks USING (COVERING )?INDEX tasks_dag_step \(dag_run_id=\?\)$/.test(d)), p.join('\n'));
    assert.ok(!p.some((d) => /^SCAN tasks\b/.test(d) || (/TEMP B-TREE/.test(d) && d !== 'USE TEMP B-TREE FOR GROUP BY')), p.join('\n'));
  });

  it("a release's read of its dependencies' outputs (applyProgress) is a lookup of tasks_dag_step per step", () => {
    const deps = JSON.stringify(['s0', 's1', 's2']);
    assert.equal(s.db.prepare(LITE_OUTPUTS_OF).all(RUNNING_RUN, deps).length, 2);
    const p = plan(LITE_OUTPUTS_OF, [RUNNING_RUN, deps]);
    assert.ok(p.some((d) => /^SEARCH tasks USING INDEX tasks_dag_step \(dag_run_id=\? AND dag_step=\?\)$/.test(d)), p.join('\n'));
    assert.ok(!p.some((d) => /^SCAN tasks\b|TEMP B-TREE/.test(d)), p.join('\n'));
  });

  it("a DAG schedule's active runs read its range of dag_runs_schedule_active, no sort; a slot's run is one lookup of dag_runs_schedule_slot", () => {
    const active = s.db.prepare(LITE_ACTIVE_DAG_RUNS_SQL).all('S50', 1000) as Array<{ id: string }>;
    const running = s.db.prepare("SELECT id FROM dag_runs WHERE schedule_id = 'S50' AND state = 'running' ORDER BY id").all() as Array<{ id: string }>;
    assert.ok(running.length > 0, 'S50 has running runs');
    assert.deepEqual(active.map((r) => r.id), running.map((r) => r.id));
    const p = plan(LITE_ACTIVE_DAG_RUNS_SQL, ['S50', 100]);
    assert.equal(p.length, 1, p.join('\n'));
    assert.match(p[0]!, /^SEARCH dag_runs USING INDEX dag_runs_schedule_active \(schedule_id=\?\)$/);

    const slot = T0 + 5 * 150;
    assert.ok(s.db.prepare(LITE_DAG_SLOT_TAKEN_SQL).get('S50', slot) !== undefined && s.db.prepare(LITE_DAG_SLOT_TAKEN_SQL).get('S50', slot + 1) === undefined);
    const taken = plan(LITE_DAG_SLOT_TAKEN_SQL, ['S50', slot]);
    assert.equal(taken.length, 1, taken.join('\n'));
    assert.match(taken[0]!, /^SEARCH dag_runs USING COVERING INDEX dag_runs_schedule_slot \(schedule_id=\? AND scheduled_at=\?\)$/);
  });
});

describe('query plans: PostgreSQL', { skip: PG ? false : PG_SKIP_REASON }, () => {
  let db: TestDatabase;
  let c: pg.Client;
  before(async () => {
    db = await createTestDatabase();
    c = new pg.Client({ connectionString: db.url });
    await c.connect();
    await c.query(
      `INSERT INTO tasks (id, owner, name, kind, state, command, args, script, interpreter, env, timeout_ms, max_retries, retry_base_delay_ms,
         retry_factor, retry_max_delay_ms, priority, labels, requires, created_at, updated_at)
       SELECT u.id, u.owner, u.name, 'batch', u.state, 'true', '[]', NULL, '[]', '{}', NULL, 0, 1000, 2, 60000, 0, '{}', '{}', u.created_at, u.created_at
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[]) AS u(id, owner, name, state, created_at)`,
      [ROWS.map((r) => r.id), ROWS.map((r) => r.owner), ROWS.map((r) => r.name), ROWS.map((r) => r.state), ROWS.map((r) => r.createdAt)],
    );
    // Each statement commits on its own: one transaction over all of them holds
    // the cluster's xmin horizon for seconds on a loaded machine, and the PostgreSQL
    // store tests running beside this file wait for that horizon (feedSettled).
    const seed = `
      INSERT INTO attempts (task_id, number, worker_id, fencing_token, state, started_at, lease_expires_at, ended_at)
        SELECT id, 1, 'w' || (created_at / 100 % 20), '', CASE WHEN state = 'running' THEN 'running' ELSE 'succeeded' END,
               created_at + 50, created_at + 60000, CASE WHEN state = 'running' THEN NULL ELSE created_at + 90 END
        FROM tasks WHERE state <> 'waiting' ORDER BY id;
      UPDATE tasks t SET attempts = 1, current_attempt_id = a.id FROM attempts a WHERE a.task_id = t.id;
      INSERT INTO log_chunks (task_id, attempt, seq, stream, at, data) SELECT '${BIG_LOG}', 1, g, 'stdout', ${T0}, '\\x00' FROM generate_series(10, 5009) g;
      INSERT INTO log_chunks (task_id, attempt, seq, stream, at, data)
        SELECT t.id, 1, g, 'stdout', t.created_at, '\\x00' FROM (SELECT id, created_at FROM tasks ORDER BY id LIMIT 2000) t, generate_series(0, 9) g;
      ${DUE_DATA}
      ${SCHEDULE_RUN_DATA}
      ${scheduleData(`generate_series(0, ${SCHEDULES - 1}) AS g(k)`, 'g.k')}
      ${runRecordData((n) => `generate_series(0, ${n - 1}) AS g(k)`)}
      ${dagData((n) => `generate_series(0, ${n - 1}) AS g(k)`)}
      ANALYZE;
    `;
    for (const stmt of seed.split(/;\s*\n/).map((x) => x.trim()).filter(Boolean)) await c.query(stmt);
  });
  after(async () => {
    await c?.end();
    await db?.drop();
  });

  interface PlanNode {
    'Node Type': string;
    'Relation Name'?: string;
    'Index Name'?: string;
    'Index Cond'?: string;
    'Scan Direction'?: string;
    'Plan Rows'?: number;
    Plans?: PlanNode[];
  }
  const nodes = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(nodes)];
  async function plan(sql: string, params: unknown[]): Promise<{ all: PlanNode[]; text: string }> {
    const r = await c.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(`EXPLAIN (FORMAT JSON) ${sql}`, params);
    const root = r.rows[0]!['QUERY PLAN'][0]!.Plan;
    const all = nodes(root);
    const text = all.map((n) => [n['Node Type'], n['Relation Name'], n['Index Name'], n['Index Cond']].filter(Boolean).join(' ')).join('\n');
    return { all, text };
  }
  const isIndexScan = (n: PlanNode) => /^(Index Scan|Index Only Scan|Bitmap Index Scan)$/.test(n['Node Type']);
  const reads = (all: PlanNode[], index: string, cond: RegExp) => all.some((n) => isIndexScan(n) && n['Index Name'] === index && cond.test(n['Index Cond'] ?? ''));
  const seqScanOf = (all: PlanNode[], tables: readonly string[]) => all.some((n) => n['Node Type'] === 'Seq Scan' && tables.includes(n['Relation Name'] ?? ''));

  it('the data is there', async () => {
    const count = async (sql: string) => (await c.query<{ n: number }>(sql)).rows[0]!.n;
    assert.equal(await count('SELECT count(*)::int AS n FROM tasks WHERE dag_run_id IS NULL'), N);
    assert.equal(await count('SELECT count(*)::int AS n FROM tasks WHERE dag_run_id IS NOT NULL'), STEP_TASKS);
    assert.equal(await count('SELECT count(*)::int AS n FROM dag_runs'), DAG_RUNS);
  });

  for (const v of VARIANTS) {
    for (const shape of ['summaries', 'tasks'] as const) {
      it(`list ${shape}, ${v.name}: an index on tasks, no sequential scan, no sort of more than the matched rows`, async () => {
        const q = postgresTaskListQuery({ ...v.filter, limit: 50 }, shape);
        const { all, text } = await plan(q.sql, q.params);
        assert.ok(!all.some((n) => n['Node Type'] === 'Seq Scan'), text);
        const onTasks = all.filter((n) => isIndexScan(n) && /^tasks_/.test(n['Index Name'] ?? ''));
        assert.ok(onTasks.length >= 1, text);
        // A filter is an index condition on tasks; for a name prefix the planner may instead read an
        // index in id order and stop at the limit (it judged the prefix common enough).
        if (!v.unfiltered && !v.nameRangeSort) assert.ok(onTasks.some((n) => n['Index Cond'] !== undefined), `an index condition on tasks:\n${text}`);
        // A sort only of the rows an index condition matched (the planner's top-N of a few rows), never of the table.
        for (const sort of all.filter((n) => /Sort/.test(n['Node Type']))) {
          assert.ok(sort['Plan Rows']! <= SORT_ROWS_MAX, `a sort of ${sort['Plan Rows']} rows:\n${text}`);
          assert.ok(onTasks.some((n) => n['Index Cond'] !== undefined), `a sort of rows no index condition bounds:\n${text}`);
        }
        // PostgreSQL may instead combine the slot index's schedule_id range with another (a bitmap AND) and top-N sort
        // those rows (one schedule's runs): either way the schedule's rows are found by an index condition, never by a scan.
        if (v.index) assert.ok(onTasks.some((n) => n['Index Name'] === v.index || /\bschedule_id = /.test(n['Index Cond'] ?? '')), `reads ${v.index}:\n${text}`);
        if (shape === 'summaries') assert.ok(all.some((n) => n['Index Name'] === 'attempts_pkey') || all.some((n) => n['Relation Name'] === 'attempts' && isIndexScan(n)), text);
      });
    }
  }

  it('the queries of the other read models and the feed use their indexes', async () => {
    const expect = async (label: string, sql: string, params: unknown[], index: RegExp, sortOk = false) => {
      const { all, text } = await plan(sql, params);
      assert.ok(all.some((n) => isIndexScan(n) && index.test(n['Index Name'] ?? '')), `${label}:\n${text}`);
      assert.ok(!all.some((n) => n['Node Type'] === 'Seq Scan' && ['tasks', 'attempts', 'changes', 'log_chunks', 'task_minutes'].includes(n['Relation Name'] ?? '')), `${label}: a full scan\n${text}`);
      if (!sortOk) assert.ok(!all.some((n) => /Sort/.test(n['Node Type'])), `${label}: a sort\n${text}`);
      return all;
    };
    for (const [label, sql, params] of [
      ['counts', PG_VIEW_SQL.countsAll, []],
      ['counts of an owner', PG_VIEW_SQL.countsOwner, ['u7']],
    ] as const) {
      const { all, text } = await plan(sql, [...params]);
      assert.ok(!all.some((n) => n['Relation Name'] === 'tasks'), `${label} never reads tasks:\n${text}`);
    }
    // No index expectation for the counts: task_counts is small by design (the sweeper folds its delta rows to
    // one per owner and state, migration 5), so a scan of it is the planner's right choice; it never reads tasks (above).
    await expect('running attempts', PG_VIEW_SQL.running(false), [], /^attempts_running_/, true);
    await expect('running attempts of a worker', PG_VIEW_SQL.running(true), ['w3'], /^attempts_running_worker$/, true);
    const xid = (await c.query<{ x: string }>('SELECT min(xid)::text AS x FROM changes')).rows[0]!.x;
    await expect('readChanges', PG_FEED_SQL.read(false), [xid, 100, 50], /^changes_pkey$/, true);
    await expect('readChanges of an owner', PG_FEED_SQL.read(true), [xid, 100, 50, 'u7'], /^changes_owner_xid_id$/, true);
    await expect('pruneFeed', PG_FEED_SQL.prunable, [1000], /^changes_pkey$/);
    await expect('readLogsBefore', PG_LOG_SQL.before, [BIG_LOG, 1_000_000, 32], /^log_chunks_task_id$/);
    await expect('minute stats', PG_VIEW_SQL.minutes(false), [T0 + 600_000, T0 + 900_000], /^task_minutes_/, true);
    await expect('minute stats of an owner', PG_VIEW_SQL.minutes(true), [T0 + 600_000, T0 + 900_000, 'u7'], /^task_minutes_/, true);
  });

  it('the due queries (promoteDue, nextDueAt) read tasks_due and tasks_ready_due', async () => {
    for (const [label, sql, params] of [
      ['promoteDue', PG_DUE_SQL.promote, [T0 + 1_500_000, 256]],
      ['nextDueAt', PG_DUE_SQL.next, []],
    ] as const) {
      const { all, text } = await plan(sql, [...params]);
      const used = new Set(all.filter(isIndexScan).map((n) => n['Index Name']));
      assert.ok(used.has('tasks_due') && used.has('tasks_ready_due'), `${label}:\n${text}`);
      assert.ok(!all.some((n) => n['Node Type'] === 'Seq Scan' && n['Relation Name'] === 'tasks'), `${label}: a full scan\n${text}`);
    }
  });

  it('the schedule due queries (dueSchedules, nextScheduleDueAt) read schedules_due, no sequential scan, no sort', async () => {
    for (const [label, sql, params] of [
      ['dueSchedules', PG_SCHEDULE_DUE_SQL.due, [T0 + 1_500_000, 256]],
      ['nextScheduleDueAt', PG_SCHEDULE_DUE_SQL.next, []],
    ] as const) {
      const { all, text } = await plan(sql, [...params]);
      assert.ok(all.some((n) => isIndexScan(n) && n['Index Name'] === 'schedules_due'), `${label}:\n${text}`);
      assert.ok(!all.some((n) => n['Node Type'] === 'Seq Scan' || /Sort/.test(n['Node Type'])), `${label}:\n${text}`);
    }
  });

  it("schedules' active runs (activeScheduleRuns) read each one's range of tasks_schedule_active; only the result is sorted", async () => {
    const ids = Array.from({ length: 50 }, (_, k) => `S${k}`);
    const active = (await c.query<{ state: string }>(PG_ACTIVE_RUNS_SQL, [ids, 1000])).rows;
    assert.ok(active.length > 0 && active.every((r) => !['succeeded', 'failed', 'cancelled'].includes(r.state)), 'active runs exist, and only those are returned');
    const { all, text } = await plan(PG_ACTIVE_RUNS_SQL, [ids, 100]);
    assert.ok(all.some((n) => isIndexScan(n) && n['Index Name'] === 'tasks_schedule_active' && /schedule_id = /.test(n['Index Cond'] ?? '')), text);
    assert.ok(!all.some((n) => n['Node Type'] === 'Seq Scan' && n['Relation Name'] === 'tasks'), text);
  });

  it('run record retention (pruneScheduleRuns) finds the schedules over the limit in schedules_runs_over, no sequential scan', async () => {
    await c.query('BEGIN');
    try {
      const { all, text } = await plan(PG_PRUNE_RUNS_SQL, [10, 200, 1000]);
      assert.ok(all.some((n) => isIndexScan(n) && n['Index Name'] === 'schedules_runs_over'), text);
      assert.ok(!all.some((n) => n['Node Type'] === 'Seq Scan' && (n['Relation Name'] === 'schedules' || n['Relation Name'] === 'schedule_runs')), text);
    } finally {
      await c.query('ROLLBACK');
    }
  });

  for (const v of DAG_RUN_VARIANTS) {
    it(`DAG run list, ${v.name}: ${v.index} only, no sequential scan, a sort only of the rows its condition matched`, async (t) => {
      const q = dagRunListQuery({ ...v.filter, limit: 50 }, (n) => `$${n}`);
      const { all, text } = await plan(q.sql, q.params);
      assert.ok(!all.some((n) => n['Node Type'] === 'Seq Scan'), text);
      const onRuns = all.filter((n) => isIndexScan(n) && /^dag_runs_/.test(n['Index Name'] ?? ''));
      assert.equal(onRuns.length, 1, `one index of dag_runs:\n${text}`);
      const read = onRuns[0]!;
      if (v.pgAlso && read['Index Name'] === v.pgAlso.index) {
        t.diagnostic(`${v.pgAlso.index}: ${v.pgAlso.why}`);
        assert.ok(read['Node Type'] === 'Index Scan' && read['Scan Direction'] === 'Backward' && !all.some((n) => /Sort/.test(n['Node Type'])), text);
        return;
      }
      assert.equal(read['Index Name'], v.index, text);
      if (v.cond) assert.match(read['Index Cond'] ?? '', v.cond, text);
      else assert.equal(read['Index Cond'], undefined, text);
      // In id order (an index scan backward), or a top-N sort of the few rows the index condition matched (see the header).
      const sorts = all.filter((n) => /Sort/.test(n['Node Type']));
      if (sorts.length === 0) assert.ok(read['Node Type'] === 'Index Scan' && read['Scan Direction'] === 'Backward', text);
      else assert.ok(v.cond && sorts.every((n) => n['Plan Rows']! <= DAG_RUNS / 20), `a sort of more than the matched rows:\n${text}`);
    });
  }

  it("a run's steps (dagRunSteps) read tasks_dag_step, then each step's events and attempts by task", async () => {
    const steps = (await c.query<{ released_at: string | null; started_at: string | null }>(DAG_RUN_STEPS_SQL('$1'), [ENDED_RUN])).rows;
    assert.ok(steps.length === DAG_STEPS && steps.every((r) => r.released_at !== null && r.started_at !== null), JSON.stringify(steps));
    const { all, text } = await plan(DAG_RUN_STEPS_SQL('$1'), [ENDED_RUN]);
    assert.ok(reads(all, 'tasks_dag_step', /^\(dag_run_id = '\w+'::text\)$/), text);
    assert.ok(reads(all, 'task_events_task_id', /^\(task_id = t\.id\)$/), text);
    assert.ok(reads(all, 'attempts_task_id_number_key', /^\(task_id = t\.id\)$/), text);
    assert.ok(!all.some((n) => n['Node Type'] === 'Seq Scan' || /Sort/.test(n['Node Type'])), text);
  });

  it("a page's step counts (dagRunStepCounts) read tasks_dag_step per run; only the matched steps are sorted", async () => {
    const sql = stepCountsSql('SELECT unnest($1::text[])');
    assert.equal((await c.query<{ n: number }>(`SELECT sum(n)::int AS n FROM (${sql}) c`, [STEPPED_PAGE])).rows[0]!.n, STEPPED_PAGE.length * DAG_STEPS);
    const { all, text } = await plan(sql, [STEPPED_PAGE]);
    assert.ok(reads(all, 'tasks_dag_step', /^\(dag_run_id = /), text);
    assert.ok(!seqScanOf(all, ['tasks']), text);
    for (const sort of all.filter((n) => /Sort/.test(n['Node Type']))) assert.ok(sort['Plan Rows']! <= SORT_ROWS_MAX, `a sort of ${sort['Plan Rows']} rows:\n${text}`);
  });

  it("a release's read of its dependencies' outputs (applyProgress) is the run's range of tasks_dag_step", async () => {
    const deps = ['s0', 's1', 's2'];
    assert.equal((await c.query(PG_OUTPUTS_OF, [RUNNING_RUN, deps])).rows.length, 2);
    const { all, text } = await plan(PG_OUTPUTS_OF, [RUNNING_RUN, deps]);
    assert.ok(reads(all, 'tasks_dag_step', /^\(+dag_run_id = '\w+'::text\)/), text);
    assert.ok(!seqScanOf(all, ['tasks']), text);
  });

  it("DAG schedules' active runs (activeScheduleRuns) read each one's range of dag_runs_schedule_active; taken slots are one range of dag_runs_schedule_slot", async () => {
    const ids = Array.from({ length: 20 }, (_, k) => `S${50 + k}`);
    const active = (await c.query<{ id: string; dag: boolean }>(PG_ACTIVE_RUNS_SQL, [ids, 1000])).rows;
    const running = (await c.query<{ id: string }>("SELECT id FROM dag_runs WHERE schedule_id = ANY($1::text[]) AND state = 'running' ORDER BY id", [ids])).rows;
    assert.ok(running.length > 0, 'DAG schedules have running runs');
    assert.deepEqual(active.filter((r) => r.dag).map((r) => r.id).sort(), running.map((r) => r.id));
    const { all, text } = await plan(PG_ACTIVE_RUNS_SQL, [ids, 100]);
    assert.ok(reads(all, 'dag_runs_schedule_active', /^\(schedule_id = s\.id\)$/), text);
    assert.ok(!seqScanOf(all, ['tasks', 'dag_runs']), text);

    const slot = T0 + 5 * 150;
    assert.deepEqual((await c.query<{ scheduled_at: string }>(PG_DAG_SLOTS_TAKEN_SQL, ['S50', [slot, slot + 1]])).rows.map((r) => Number(r.scheduled_at)), [slot]);
    const taken = await plan(PG_DAG_SLOTS_TAKEN_SQL, ['S50', [slot, slot + 1]]);
    assert.ok(reads(taken.all, 'dag_runs_schedule_slot', /^\(\(schedule_id = 'S50'::text\) AND \(scheduled_at = ANY \(/), taken.text);
    assert.ok(!seqScanOf(taken.all, ['dag_runs']), taken.text);
  });
});
