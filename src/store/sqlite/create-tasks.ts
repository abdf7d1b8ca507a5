/**
 * TaskStore.createTasks on SQLite (store/tasks.ts is the contract, store/batch.ts
 * the idempotency scheme). The whole batch is one write (db.ts): one savepoint
 * inside the group-commit transaction, so its tasks are stored together or not
 * at all, and it shares the commit's fsync with whatever else was requested in
 * the same turn.
 *
 * The task rows go in through multi-row INSERT ... VALUES statements of up to
 * 128 rows (chunked-insert.ts, which has the measurements); the events of
 * every task through one statement over json_each() of a small JSON array
 * ([id, runAfter, detail] a task). Earlier measurements (1,000-task batches, a
 * file with synchronous=FULL): one prepared INSERT per task cost 55-95 µs a
 * row, 22-24 µs with temp_store = MEMORY. Each statement that fires the feed
 * and counter triggers opens a statement journal, so few statements per
 * batch pay that few times.
 */
import { ConflictError } from '../../core/errors.js';
import type { Task } from '../../core/task.js';
import { assertTransition } from '../../core/task-state.js';
import { batchItemKey, batchKeyRange, checkBatch, matchStoredBatch, newWaitingTask, submittedDetail, type NewTask } from '../batch.js';
import { TASK_SPEC_COLUMNS, taskFromRow, taskSpecValues, type TaskRow } from '../rows.js';
import type { SlotTask } from '../schedules.js';
import type { CreateManyResult, Idempotency } from '../tasks.js';
import { insertChunked, valuesInsert } from './chunked-insert.js';
import type { SqliteDb } from './db.js';
import { isUniqueViolation } from './sqlite-errors.js';

/**
 * One task's values, in the order of encode(): id, owner, state, the spec's columns (rows.ts
 * TASK_SPEC_COLUMNS), then run_after, idempotency_key, schedule_id, scheduled_at; request_hash,
 * created_at and updated_at are shared (@hash, @now).
 */
const TASK_VALUES = 7 + TASK_SPEC_COLUMNS.length;
const TASK_ROW_SQL = valuesInsert(
  `INSERT INTO tasks (id, owner, state, ${TASK_SPEC_COLUMNS.join(', ')}, run_after, idempotency_key, schedule_id, scheduled_at,
   request_hash, created_at, updated_at)`,
  `(${Array<string>(TASK_VALUES).fill('?').join(', ')}, @hash, @now, @now)`,
);
/**
 * @events: [id, runAfter, submitted detail as JSON text] a task (encode): both events of each
 * task released now, only `submitted` of a task to run later, in item order. Kept over json_each:
 * the events as VALUES chunks of 100-500 rows measured no faster (2,000 events a batch: 4.4-5.5 ms
 * in four runs, against 4.3-5.8 ms over json_each in the two runs between them).
 */
const INSERT_EVENTS = `INSERT INTO task_events (task_id, from_state, to_state, reason, actor, at, detail)
 SELECT j.value ->> 0, v.f, v.s, v.r, @actor, @now,
   CASE WHEN v.o = 1 THEN j.value ->> 2 END
 FROM json_each(@events) AS j, (SELECT 1 AS o, NULL AS f, 'ready' AS s, 'submitted' AS r UNION ALL SELECT 2, 'ready', 'waiting', 'released') AS v
 WHERE v.o = 1 OR j.value ->> 1 IS NULL
 ORDER BY j.key, v.o`;
/** The stored items of one batch key: an index range of tasks_owner_idempotency_key (the key range of batch.ts). */
const STORED_BATCH = 'SELECT * FROM tasks WHERE owner = ? AND idempotency_key IS NOT NULL AND idempotency_key >= ? AND idempotency_key < ?';

export function sqliteCreateTasks(d: SqliteDb) {
  return async (owner: string, tasks: readonly NewTask[], actor: string, now: number, idem?: Idempotency): Promise<CreateManyResult> => {
    checkBatch(tasks);
    assertTransition('ready', 'waiting', 'released');
    // Encoded before the write: the transaction (shared with other writers) stays short.
    const encoded = encode(tasks, () => owner, idem?.key ?? null);
    return d.write(() => {
      if (idem) {
        const { from, to } = batchKeyRange(idem.key);
        const m = matchStoredBatch(idem.key, idem.requestHash, tasks.length, d.q(STORED_BATCH).all(owner, from, to) as TaskRow[]);
        if (m.kind === 'repeat') return { tasks: m.rows.map(taskFromRow), created: false };
        if (m.kind === 'conflict') throw new ConflictError(`Idempotency-Key ${JSON.stringify(idem.key)} ${m.reason}; repeat that batch unchanged to get its tasks, or use a new key`);
      }
      // The key range was empty in this transaction, so only an id can be taken (or given twice).
      insertRows(d, encoded, actor, now, idem?.requestHash ?? null);
      return { tasks: tasks.map(({ id, spec, runAfter, slot }) => newWaitingTask(id, owner, spec, now, runAfter ?? null, slot ?? null)), created: true };
    });
  };
}

/**
 * Schedules' runs (fireSchedules, schedules.ts), each owned by its schedule's
 * owner, through the same statements as createTasks (the rows, events, feed
 * rows and counters: the last two by the tasks triggers), inside the caller's
 * write. The caller has made sure no slot of these tasks is taken (its
 * transaction holds the write lock); a taken id throws ConflictError.
 */
export function insertSlotTasks(d: SqliteDb, tasks: readonly SlotTask[], actor: string, now: number): Task[] {
  if (tasks.length === 0) return [];
  checkBatch(tasks);
  assertTransition('ready', 'waiting', 'released');
  insertRows(d, encode(tasks, (i) => tasks[i]!.owner, null), actor, now, null);
  return tasks.map(({ id, owner, spec, slot }) => newWaitingTask(id, owner, spec, now, null, slot));
}

/** A batch as its statements bind it: TASK_VALUES values a task, and the events' JSON. */
interface Encoded {
  values: unknown[];
  events: string;
}

/** Item i's owner is ownerOf(i); with a batch key, item i's key is batchItemKey(key, i). */
function encode(tasks: readonly NewTask[], ownerOf: (i: number) => string, key: string | null): Encoded {
  const values: unknown[] = [];
  const events: unknown[] = [];
  tasks.forEach(({ id, spec, runAfter, slot, detail }, i) => {
    const after = runAfter ?? null;
    values.push(id, ownerOf(i), after === null ? 'waiting' : 'ready', ...taskSpecValues(spec), after,
      key === null ? null : batchItemKey(key, i), slot?.scheduleId ?? null, slot?.scheduledAt ?? null);
    const d = submittedDetail(after, detail);
    events.push([id, after, d === null ? null : JSON.stringify(d)]);
  });
  return { values, events: JSON.stringify(events) };
}

function insertRows(d: SqliteDb, e: Encoded, actor: string, now: number, hash: string | null): void {
  try {
    insertChunked(d, TASK_ROW_SQL, TASK_VALUES, e.values, { hash, now });
  } catch (err) {
    if (isUniqueViolation(err)) throw new ConflictError(`a task id of this batch already exists (${(err as Error).message})`);
    throw err;
  }
  d.q(INSERT_EVENTS).run({ actor, now, events: e.events });
  d.signal({ kind: 'wake' });
}
