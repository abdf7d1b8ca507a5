/** Task output on SQLite (store/logs.ts): fenced appends, read by task with the chunk id as cursor. */
import type { LogChunk } from '../../core/task.js';
import type { LogStore, NewLogChunk } from '../logs.js';
import { logChunkFromRow, type LogChunkRow } from '../rows.js';
import { fence } from './attempts.js';
import type { SqliteDb } from './db.js';

/**
 * Exported for the query-plan tests. `before` names its index: with the
 * statistics of ANALYZE the planner may walk the primary key backwards and
 * filter on task_id, assuming a task's chunks are spread evenly over the ids,
 * which a long log written before many others is not (query-plans.test.ts).
 */
export const LOG_SQL = {
  before: 'SELECT * FROM log_chunks INDEXED BY log_chunks_task_id WHERE task_id = ? AND id < ? ORDER BY id DESC LIMIT +?',
};

export function sqliteLogs(d: SqliteDb): LogStore {
  return {
    /** The fence and the inserts are one transaction; a chunk whose (attempt, seq) is stored is skipped (a re-send). */
    async appendLogs(attemptId: number, fencingToken: string, workerId: string, chunks: NewLogChunk[], now: number): Promise<boolean> {
      return d.write(() => {
        const f = fence(d, attemptId, fencingToken, workerId);
        if (!f.ok) return false;
        const insert = d.q(
          `INSERT INTO log_chunks (task_id, attempt, seq, stream, at, data) VALUES (?, ?, ?, ?, ?, ?)
           ON CONFLICT (task_id, attempt, seq) DO NOTHING`,
        );
        for (const ch of chunks) insert.run(f.attempt.task_id, f.attempt.number, ch.seq, ch.stream, now, ch.data);
        d.signal({ kind: 'task', taskId: f.attempt.task_id });
        return true;
      });
    },

    async readLogs(taskId: string, afterId: number, limit: number, attempt?: number): Promise<LogChunk[]> {
      return d.read(() => {
        const rows =
          attempt === undefined
            ? d.q('SELECT * FROM log_chunks WHERE task_id = ? AND id > ? ORDER BY id LIMIT +?').all(taskId, afterId, limit)
            : d.q('SELECT * FROM log_chunks WHERE task_id = ? AND id > ? AND attempt = ? ORDER BY id LIMIT +?').all(taskId, afterId, attempt, limit);
        return (rows as LogChunkRow[]).map(logChunkFromRow);
      });
    },

    /** Reads backwards on log_chunks_task_id (task_id, id) and returns the page in ascending order. */
    async readLogsBefore(taskId: string, beforeId: number | null, limit: number): Promise<LogChunk[]> {
      return d.read(() => {
        const rows = d.q(LOG_SQL.before).all(taskId, beforeId ?? Number.MAX_SAFE_INTEGER, limit) as LogChunkRow[];
        return rows.reverse().map(logChunkFromRow);
      });
    },
  };
}
