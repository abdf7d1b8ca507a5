/**
 * createTask's statement on PostgreSQL (tasks.ts), in two forms sharing one
 * shape: the task row, then its events, in one autocommit statement.
 *  - plain: the task is stored `waiting` (or `ready` with run_after) with
 *    its submitted and released events.
 *  - claiming (CreateOptions.claimFor, store/tasks.ts): the same statement
 *    also claims the new task for one worker when no other task is waiting
 *    and the worker's labels satisfy its requires, as the claim statement
 *    (claim-sql.ts) would a moment later: the task is inserted `running`
 *    with attempts 1 and its attempt id, the attempt row is inserted, and a
 *    third event, `claimed`, follows the other two. Otherwise it is the plain
 *    form. One statement and one WAL flush instead of the submit's and the
 *    claim's (issue 9: on an idle system they were two in a row between the
 *    submit and the assignment).
 * The "nothing waiting" test reads the statement's snapshot: a task another
 * server is inserting at the same moment is not seen, as it would not be by a
 * claim started at that moment either.
 *
 * Parameters: $1 id, $2 owner, $3 now, $4 actor, $5 idempotency key, $6
 * request hash, $7 run_after, $8 submitted detail, $9.. the spec's columns
 * (postgres/rows.ts taskSpecColumns); the claiming form then has, after
 * them, the worker id, its labels (JSON), the fencing token, the lease (ms),
 * the scheduler's actor name and the task's requires (JSON).
 * Returns one row (state, attempt: the attempt row as JSON when claimed) if
 * the task was inserted, none when its idempotency key was taken.
 */
import { DB_NOW_MS } from './sql.js';

export function createTaskSql(columns: readonly string[], claiming: boolean): string {
  const spec = columns.map((_, i) => `$${i + 9}`);
  const p = (k: number) => `$${columns.length + 9 + k}`;
  const [worker, labels, token, lease, scheduler, requires] = [0, 1, 2, 3, 4, 5].map(p);
  if (!claiming) {
    return `WITH t AS (
   INSERT INTO tasks (id, owner, created_at, updated_at, state, idempotency_key, request_hash, run_after, ${columns.join(', ')})
   VALUES ($1, $2, $3, $3, CASE WHEN $7::bigint IS NULL THEN 'waiting' ELSE 'ready' END, $5, $6, $7::bigint, ${spec.join(', ')})
   ON CONFLICT (owner, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
   RETURNING id, state
 ), e AS (
   -- A task to run later (run_after) gets only the submitted event; promoteDue releases it.
   INSERT INTO task_events (task_id, from_state, to_state, reason, actor, at, detail)
   SELECT t.id, v.f, v.s, v.r, $4::text, $3::bigint, CASE WHEN v.o = 1 THEN $8::text END
   FROM t, (VALUES (1, NULL::text, 'ready', 'submitted'), (2, 'ready', 'waiting', 'released')) AS v(o, f, s, r)
   WHERE v.o = 1 OR $7::bigint IS NULL
   ORDER BY v.o
 )
 SELECT t.state, NULL::json AS attempt FROM t`;
  }
  return `WITH go AS (
   SELECT NOT EXISTS (SELECT 1 FROM tasks WHERE state = 'waiting')
          AND (${requires}::text = '{}' OR ${requires}::jsonb <@ ${labels}::jsonb) AS go
 ), t AS (
   INSERT INTO tasks (id, owner, created_at, updated_at, state, attempts, current_attempt_id, idempotency_key, request_hash, run_after, ${columns.join(', ')})
   SELECT $1, $2, $3, $3, CASE WHEN go.go THEN 'running' ELSE 'waiting' END, CASE WHEN go.go THEN 1 ELSE 0 END,
          CASE WHEN go.go THEN nextval('attempts_id_seq') END, $5, $6, $7::bigint, ${spec.join(', ')}
   FROM go
   ON CONFLICT (owner, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
   RETURNING id, state, current_attempt_id
 ), a AS (
   INSERT INTO attempts (id, task_id, number, worker_id, fencing_token, state, started_at, lease_expires_at)
   SELECT current_attempt_id, id, 1, ${worker}::text, ${token}::text, 'running', $3::bigint, ${DB_NOW_MS} + ${lease}::bigint
   FROM t WHERE t.state = 'running'
   RETURNING *
 ), e AS (
   INSERT INTO task_events (task_id, from_state, to_state, reason, actor, at, detail)
   SELECT t.id, v.f, v.s, v.r, CASE WHEN v.o = 3 THEN ${scheduler}::text ELSE $4::text END, $3::bigint,
          CASE WHEN v.o = 1 THEN $8::text
               WHEN v.o = 3 THEN json_build_object('attemptId', t.current_attempt_id, 'attempt', 1, 'workerId', ${worker}::text)::text END
   FROM t, (VALUES (1, NULL::text, 'ready', 'submitted'), (2, 'ready', 'waiting', 'released'), (3, 'waiting', 'running', 'claimed')) AS v(o, f, s, r)
   WHERE v.o < 3 OR t.state = 'running'
   ORDER BY v.o
 )
 SELECT t.state, (SELECT to_json(a) FROM a) AS attempt FROM t`;
}
