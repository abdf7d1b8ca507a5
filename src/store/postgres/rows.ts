/**
 * Row <-> model mapping for the PostgreSQL store. The tables have the same
 * columns as SQLite's (see migrations.ts), and the pool parses BIGINT to a JS
 * number and BYTEA to a Buffer, so a PostgreSQL row has exactly the shape of a
 * SQLite one: the mapping functions are shared, and only what differs
 * (positional parameters, the column list) lives here.
 */
import type { TaskSpec } from '../../core/task.js';
import type { StoreSignal } from '../store.js';

export {
  attemptFromRow,
  eventFromRow,
  logChunkFromRow,
  taskFromRow,
  tokenFromRow,
  workerFromRow,
  type AttemptRow,
  type EventRow,
  type LogChunkRow,
  type TaskRow,
  type TokenRow,
  type WorkerRow,
} from '../sqlite/rows.js';

/** The tasks columns a spec determines, in the order of `taskSpecValues`. */
export const TASK_SPEC_COLUMNS = [
  'name',
  'kind',
  'command',
  'args',
  'script',
  'interpreter',
  'env',
  'timeout_ms',
  'max_retries',
  'retry_base_delay_ms',
  'retry_factor',
  'retry_max_delay_ms',
  'priority',
  'labels',
] as const;

export function taskSpecValues(spec: TaskSpec): unknown[] {
  return [
    spec.name,
    spec.kind,
    spec.command,
    JSON.stringify(spec.args),
    spec.script,
    JSON.stringify(spec.interpreter),
    JSON.stringify(spec.env),
    spec.timeoutMs,
    spec.retry.maxRetries,
    spec.retry.baseDelayMs,
    spec.retry.factor,
    spec.retry.maxDelayMs,
    spec.priority,
    JSON.stringify(spec.labels),
  ];
}

/** A NOTIFY payload, parsed and checked; null for anything that is not a StoreSignal. */
export function signalFromPayload(payload: string | undefined): StoreSignal | null {
  if (!payload) return null;
  let v: unknown;
  try {
    v = JSON.parse(payload);
  } catch {
    return null;
  }
  if (typeof v !== 'object' || v === null) return null;
  const o = v as Record<string, unknown>;
  switch (o.kind) {
    case 'wake':
      return { kind: 'wake' };
    case 'task':
      return typeof o.taskId === 'string' ? { kind: 'task', taskId: o.taskId } : null;
    case 'cancel':
      return typeof o.taskId === 'string' && typeof o.attemptId === 'number' ? { kind: 'cancel', taskId: o.taskId, attemptId: o.attemptId } : null;
    case 'drain':
      return typeof o.workerId === 'string' && typeof o.reason === 'string' ? { kind: 'drain', workerId: o.workerId, reason: o.reason } : null;
    default:
      return null;
  }
}
