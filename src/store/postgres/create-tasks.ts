/**
 * TaskStore.createTasks on PostgreSQL (store/tasks.ts is the contract,
 * store/batch.ts the idempotency scheme): ONE statement per batch, set-based.
 * The tasks come in as one array parameter per column, unnest()ed WITH
 * ORDINALITY (the item index); a data-modifying CTE inserts the tasks and the
 * next inserts both events of each inserted task, in item order. It runs in a
 * transaction of its own (db.write), so it is all or nothing: a taken id
 * (unique violation) aborts the whole statement.
 *
 * With a key, ON CONFLICT on the unique (owner, key) index makes concurrent
 * repeats safe, as for createTask: a second batch with the key waits for the
 * first to commit, then inserts nothing. Whenever fewer than all items were
 * inserted, the transaction is rolled back (nothing of this call is kept) and
 * the stored items are read in a new statement, which decides between a
 * repeat and a conflict (batch.ts matchStoredBatch).
 */
import { ConflictError } from '../../core/errors.js';
import type { Task } from '../../core/task.js';
import { assertTransition } from '../../core/task-state.js';
import { batchKeyRange, checkBatch, matchStoredBatch, newWaitingTask, submittedDetail, type NewTask } from '../batch.js';
import { taskFromRow, type TaskRow } from '../rows.js';
import type { SlotTask } from '../schedules.js';
import type { CreateManyResult, Idempotency } from '../tasks.js';
import type { Db, Tx } from './db.js';
import { isUniqueViolation } from './pg-errors.js';

/**
 * $1 owner, $2 now, $3 actor, $4 batch key (NULL: none), $5 request hash,
 * $6.. one array per column (columns() below). Item i's key is "$4 i" (batch.ts batchItemKey;
 * ordinality counts from 1). Arrays rather than one JSON parameter read with
 * json_array_elements (as the SQLite store does): measured, 20 alternating
 * rounds of 1,000-task batches (parameters built, statement, commit), arrays
 * median 85-87 ms, JSON median 107-117 ms. EXPLAIN ANALYZE of this statement
 * (1,000 tasks, schema v5): tasks insert 11 ms, events insert 6 ms plus 7 ms
 * of their foreign-key checks (gone since schema v15: migrations.ts), the
 * insert trigger 3 ms; with the v4 row trigger that trigger alone was 82-116 ms.
 *
 * Two forms, one text otherwise: `submit` (createTasks) skips an item whose
 * (owner, idempotency key) is taken and returns how many it inserted; `slots`
 * (fireSchedules, schedules.ts) skips an item whose (schedule_id, scheduled_at)
 * is taken, the one-run-per-slot key, and returns the ids it inserted; its
 * items name their owners ($27: one insert holds the runs of several
 * schedules, hence owners), where a submit's all have $1. Either way a
 * skipped item gets no events, and a taken id aborts the statement.
 */
function insertBatchSql(form: 'submit' | 'slots'): string {
  const conflict =
    form === 'submit'
      ? 'ON CONFLICT (owner, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING'
      : 'ON CONFLICT (schedule_id, scheduled_at) WHERE schedule_id IS NOT NULL DO NOTHING';
  const owners = form === 'submit' ? { param: '', column: '', value: '$1' } : { param: ', $27::text[]', column: ', owner', value: 'coalesce(u.owner, $1::text)' };
  return `WITH u AS (
  SELECT * FROM unnest($6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[],
                       $14::bigint[], $15::int[], $16::bigint[], $17::float8[], $18::bigint[], $19::int[], $20::text[], $21::text[],
                       $22::text[], $23::bigint[], $24::text[], $25::text[], $26::bigint[]${owners.param})
    WITH ORDINALITY AS u(id, name, command, args, script, interpreter, env, labels,
                         timeout_ms, max_retries, retry_base_delay_ms, retry_factor, retry_max_delay_ms, priority, requires, kind,
                         cwd, run_after, detail, schedule_id, scheduled_at${owners.column}, n)
), t AS (
  INSERT INTO tasks (id, owner, state, name, kind, command, args, script, interpreter, env, timeout_ms,
    max_retries, retry_base_delay_ms, retry_factor, retry_max_delay_ms, priority, labels, requires, cwd, run_after,
    idempotency_key, request_hash, schedule_id, scheduled_at, created_at, updated_at)
  SELECT u.id, ${owners.value}, CASE WHEN u.run_after IS NULL THEN 'waiting' ELSE 'ready' END, u.name, u.kind, u.command, u.args, u.script, u.interpreter, u.env, u.timeout_ms,
    u.max_retries, u.retry_base_delay_ms, u.retry_factor, u.retry_max_delay_ms, u.priority, u.labels, u.requires, u.cwd, u.run_after,
    $4::text || ' ' || (u.n - 1)::text, $5::text, u.schedule_id, u.scheduled_at, $2::bigint, $2::bigint
  FROM u ORDER BY u.n
  ${conflict}
  RETURNING id
), e AS (
  INSERT INTO task_events (task_id, from_state, to_state, reason, actor, at, detail)
  SELECT u.id, v.f, v.s, v.r, $3::text, $2::bigint, CASE WHEN v.o = 1 THEN u.detail END
  FROM u JOIN t ON t.id = u.id,
       (VALUES (1, NULL::text, 'ready', 'submitted'), (2, 'ready', 'waiting', 'released')) AS v(o, f, s, r)
  -- A task to run later (run_after) gets only its submitted event; promoteDue releases it.
  WHERE v.o = 1 OR u.run_after IS NULL
  ORDER BY u.n, v.o
)
${form === 'submit' ? 'SELECT count(*)::int AS n FROM t' : 'SELECT id FROM t'}`;
}
const INSERT_BATCH = insertBatchSql('submit');
const INSERT_SLOTS = insertBatchSql('slots');

/** The stored items of one batch key: an index range of tasks_owner_idempotency_key (keys are COLLATE "C": byte order). */
const STORED_BATCH = 'SELECT * FROM tasks WHERE owner = $1 AND idempotency_key IS NOT NULL AND idempotency_key >= $2 AND idempotency_key < $3';

/** Thrown inside the transaction to roll it back when not every item was inserted (a key seen before). */
class KeyTaken extends Error {}

/** One array per column, in the order of the unnest() below (and of postgres/dags.ts INSERT_STEPS). */
export function columns(tasks: readonly NewTask[]): unknown[][] {
  const cols: unknown[][] = Array.from({ length: 21 }, () => new Array(tasks.length));
  tasks.forEach(({ id, spec: s, runAfter, detail, slot }, i) => {
    cols[0]![i] = id;
    cols[1]![i] = s.name;
    cols[2]![i] = s.command;
    cols[3]![i] = JSON.stringify(s.args);
    cols[4]![i] = s.script;
    cols[5]![i] = JSON.stringify(s.interpreter);
    cols[6]![i] = JSON.stringify(s.env);
    cols[7]![i] = JSON.stringify(s.labels);
    cols[8]![i] = s.timeoutMs;
    cols[9]![i] = s.retry.maxRetries;
    cols[10]![i] = s.retry.baseDelayMs;
    cols[11]![i] = s.retry.factor;
    cols[12]![i] = s.retry.maxDelayMs;
    cols[13]![i] = s.priority;
    cols[14]![i] = JSON.stringify(s.requires);
    cols[15]![i] = s.kind;
    cols[16]![i] = s.cwd;
    cols[17]![i] = runAfter ?? null;
    const d = submittedDetail(runAfter, detail);
    cols[18]![i] = d === null ? null : JSON.stringify(d);
    cols[19]![i] = slot?.scheduleId ?? null;
    cols[20]![i] = slot?.scheduledAt ?? null;
  });
  return cols;
}

export function postgresCreateTasks(db: Db) {
  return async (owner: string, tasks: readonly NewTask[], actor: string, now: number, idem?: Idempotency): Promise<CreateManyResult> => {
    checkBatch(tasks);
    assertTransition('ready', 'waiting', 'released');
    const params = [owner, now, actor, idem?.key ?? null, idem?.requestHash ?? null, ...columns(tasks)];
    try {
      return await db.write(async (tx) => {
        let inserted: number;
        try {
          inserted = (await tx.query<{ n: number }>(INSERT_BATCH, params)).rows[0]!.n;
        } catch (e) {
          if (isUniqueViolation(e)) throw new ConflictError(`a task id of this batch already exists (${(e as { detail?: string }).detail ?? 'unique violation'})`);
          throw e;
        }
        if (inserted !== tasks.length) throw new KeyTaken();
        tx.signal({ kind: 'wake' });
        const out: Task[] = tasks.map(({ id, spec, runAfter, slot }) => newWaitingTask(id, owner, spec, now, runAfter ?? null, slot ?? null));
        return { tasks: out, created: true };
      });
    } catch (e) {
      if (!(e instanceof KeyTaken) || !idem) throw e;
    }
    // Some item's key was stored by an earlier (committed) call: read what it stored.
    const { from, to } = batchKeyRange(idem.key);
    const rows = await db.read(async (q) => (await q.query<TaskRow>(STORED_BATCH, [owner, from, to])).rows);
    const m = matchStoredBatch(idem.key, idem.requestHash, tasks.length, rows);
    if (m.kind === 'repeat') return { tasks: m.rows.map(taskFromRow), created: false };
    const reason = m.kind === 'conflict' ? m.reason : 'was taken by a batch that was then removed';
    throw new ConflictError(`Idempotency-Key ${JSON.stringify(idem.key)} ${reason}; repeat that batch unchanged to get its tasks, or use a new key`);
  };
}

/**
 * Inserts schedules' runs (fireSchedules, schedules.ts) inside the caller's
 * transaction, through the statement createTasks uses (same rows, events,
 * feed rows and counters), each item with its `slot` and its schedule's
 * owner. An item whose slot is taken inserts nothing, not even an event (the
 * unique key tasks_schedule_slot; a concurrent insert of the same slot waits
 * for the other transaction and then skips). Returns the tasks inserted, in
 * item order.
 */
export async function insertSlotTasks(tx: Tx, tasks: readonly SlotTask[], actor: string, now: number): Promise<Task[]> {
  if (tasks.length === 0) return [];
  checkBatch(tasks);
  assertTransition('ready', 'waiting', 'released');
  let ids: Set<string>;
  try {
    const params = [null, now, actor, null, null, ...columns(tasks), tasks.map((t) => t.owner)];
    ids = new Set((await tx.query<{ id: string }>(INSERT_SLOTS, params)).rows.map((r) => r.id));
  } catch (e) {
    if (isUniqueViolation(e)) throw new ConflictError(`a task id of this schedule run already exists (${(e as { detail?: string }).detail ?? 'unique violation'})`);
    throw e;
  }
  if (ids.size > 0) tx.signal({ kind: 'wake' });
  return tasks.filter((t) => ids.has(t.id)).map(({ id, owner, spec, slot }) => newWaitingTask(id, owner, spec, now, null, slot));
}
