/** LogStore on PostgreSQL (store/logs.ts is the contract). */
import type { LogChunk } from '../../core/task.js';
import type { LogStore, NewLogChunk } from '../logs.js';
import { logChunkFromRow, type LogChunkRow } from '../rows.js';
import type { Db } from './db.js';
import { fence, readFenced } from './fence.js';

/**
 * Exported for the query-plan tests. `before` reads log_chunks_task_id
 * backwards, and is written so that only that index gives its order: with
 * `task_id = $1 AND id < $2 ORDER BY id DESC` the planner may walk the primary
 * key backwards and filter on task_id, assuming a task's chunks are spread
 * evenly over the ids, which a long log written before many others is not
 * (query-plans.test.ts: every later chunk of every other task read to page
 * back once). `task_id BETWEEN $1 AND $1` is the same test as equality (the
 * column is COLLATE "C": byte-wise), but is not folded into a constant, so
 * the ORDER BY (task_id, id) is one only this index provides; the row
 * comparison bounds the same index.
 */
export const LOG_SQL = {
  before: 'SELECT * FROM log_chunks WHERE task_id >= $1 AND task_id <= $1 AND (task_id, id) < ($1, $2::bigint) ORDER BY task_id DESC, id DESC LIMIT $3',
};

export function postgresLogs(db: Db): LogStore {
  return {
    /**
     * The attempt row is locked first (it changes no task, so the task row is
     * not): appends of one attempt, from any server, run one after another, so
     * their log ids are committed in increasing order and a follower reading
     * "id > cursor" never skips a chunk committed late; and an attempt ended
     * concurrently is seen as ended (the lock returns its newest version). The
     * task's current attempt is read in the same statement without a lock: it
     * cannot move away from a running attempt (claimNext skips a task whose
     * current attempt still runs), so for a running attempt it is final.
     */
    async appendLogs(attemptId: number, fencingToken: string, workerId: string, chunks: NewLogChunk[], now: number): Promise<boolean> {
      return db.write(async (tx) => {
        const rows = await readFenced(tx, attemptId, { lock: 'attempt' });
        if (!fence(rows, fencingToken, workerId).ok) return false;
        const { task_id: taskId, number } = rows!.attempt;
        if (chunks.length > 0) {
          await tx.query(
            `INSERT INTO log_chunks (task_id, attempt, seq, stream, at, data)
             SELECT $1, $2, u.seq, u.stream, $3, u.data
             FROM unnest($4::int[], $5::text[], $6::bytea[]) WITH ORDINALITY AS u(seq, stream, data, n)
             ORDER BY u.n
             ON CONFLICT (task_id, attempt, seq) DO NOTHING`,
            [taskId, number, now, chunks.map((ch) => ch.seq), chunks.map((ch) => ch.stream), chunks.map((ch) => ch.data)],
          );
        }
        tx.signal({ kind: 'task', taskId });
        return true;
      });
    },

    async readLogs(taskId: string, afterId: number, limit: number, attempt?: number): Promise<LogChunk[]> {
      return db.read(async (q) => {
        const r =
          attempt === undefined
            ? await q.query<LogChunkRow>('SELECT * FROM log_chunks WHERE task_id = $1 AND id > $2 ORDER BY id LIMIT $3', [taskId, afterId, limit])
            : await q.query<LogChunkRow>('SELECT * FROM log_chunks WHERE task_id = $1 AND id > $2 AND attempt = $3 ORDER BY id LIMIT $4', [taskId, afterId, attempt, limit]);
        return r.rows.map(logChunkFromRow);
      });
    },

    /** Reads backwards on log_chunks_task_id (task_id, id) and returns the page in ascending order. */
    async readLogsBefore(taskId: string, beforeId: number | null, limit: number): Promise<LogChunk[]> {
      return db.read(async (q) => {
        const r = await q.query<LogChunkRow>(LOG_SQL.before, [taskId, beforeId ?? Number.MAX_SAFE_INTEGER, limit]);
        return r.rows.reverse().map(logChunkFromRow);
      });
    },
  };
}
