/** Task output, stored in chunks (one row per chunk an agent sent). */
import type { LogChunk } from '../core/task.js';

export interface NewLogChunk {
  seq: number;
  stream: 'stdout' | 'stderr';
  data: Buffer;
}

export interface LogStore {
  /**
   * Appends chunks of the attempt's output; false (nothing written) unless the
   * fence holds (core/fence.ts: the attempt is `workerId`'s, the token is its,
   * it is running and current). A chunk whose (attempt, seq) is already stored
   * is skipped, so a re-send after a reconnect is harmless.
   */
  appendLogs(attemptId: number, fencingToken: string, workerId: string, chunks: NewLogChunk[], now: number): Promise<boolean>;
  /** Chunks of the task with id > afterId in order, at most `limit`. */
  readLogs(taskId: string, afterId: number, limit: number, attempt?: number): Promise<LogChunk[]>;
  /**
   * The last `limit` chunks of the task with id < beforeId (null: the end of
   * the log), returned in ascending id order: a viewer opens a large log at
   * its end and pages backwards without reading the rest.
   */
  readLogsBefore(taskId: string, beforeId: number | null, limit: number): Promise<LogChunk[]>;
}
