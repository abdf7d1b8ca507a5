/**
 * Row <-> model mapping shared by both stores. The two schemas have the same
 * tables and columns (test/store/schema-parity.test.ts checks it), and the
 * PostgreSQL pool parses BIGINT to a JS number and BYTEA to a Buffer, so a
 * row has one shape whichever backend read it. Column names are snake_case,
 * model fields camelCase; JSON columns are parsed here and nowhere else.
 */
import type { Attempt, AttemptState, LogChunk, Task, TaskEvent, TaskResult, TaskSpec } from '../core/task.js';
import { TASK_STATES, type TaskState, type TransitionReason } from '../core/task-state.js';
import type { TaskOutputs } from '../core/task-outputs.js';
import type { Role, TokenRecord } from './tokens.js';
import type { MinuteStat, RunningAttemptView, TaskSummary } from './task-views.js';
import type { WebSessionRecord } from './web-sessions.js';
import type { WorkerRecord } from './workers.js';
import type { ScheduleRecord, ScheduleRun, ScheduleSpec } from './schedules.js';

export interface TaskRow {
  id: string;
  owner: string;
  name: string;
  kind: string;
  state: string;
  command: string | null;
  args: string;
  script: string | null;
  interpreter: string;
  env: string;
  timeout_ms: number | null;
  cwd: string | null;
  max_retries: number;
  retry_base_delay_ms: number;
  retry_factor: number;
  retry_max_delay_ms: number;
  priority: number;
  labels: string;
  requires: string;
  idempotency_key: string | null;
  request_hash: string | null;
  attempts: number;
  retries_used: number;
  lost_count: number;
  run_after: number | null;
  current_attempt_id: number | null;
  result: string | null;
  created_at: number;
  updated_at: number;
  schedule_id: string | null;
  scheduled_at: number | null;
  dag_run_id: string | null;
  dag_step: string | null;
  skip_reason: string | null;
  /** JSON object of string → string (schema v10); NULL when the task wrote none. */
  outputs: string | null;
}

export interface AttemptRow {
  id: number;
  task_id: string;
  number: number;
  worker_id: string;
  fencing_token: string;
  stop_reason: string | null;
  state: string;
  started_at: number;
  ended_at: number | null;
  lease_expires_at: number;
  exit_code: number | null;
  signal: string | null;
  error: string | null;
  duration_ms: number | null;
}

export interface EventRow {
  id: number;
  task_id: string;
  from_state: string | null;
  to_state: string;
  reason: string;
  actor: string;
  at: number;
  detail: string | null;
}

export interface LogChunkRow {
  id: number;
  task_id: string;
  attempt: number;
  seq: number;
  stream: string;
  at: number;
  data: Buffer;
}

export interface TokenRow {
  id: string;
  name: string;
  user: string;
  role: string;
  secret_hash: string;
  created_at: number;
  revoked_at: number | null;
  last_used_at: number | null;
}

export interface WorkerRow {
  id: string;
  hostname: string;
  slots: number;
  labels: string;
  connected_at: number;
  last_seen_at: number;
  state: string;
  token_id: string | null;
  draining_at: number | null;
}

/** A row of task-list.ts summaryColumns. */
export interface TaskSummaryRow {
  id: string;
  owner: string;
  name: string;
  kind: string;
  state: string;
  priority: number;
  attempts: number;
  retries_used: number;
  run_after: number | null;
  created_at: number;
  updated_at: number;
  worker_id: string | null;
  started_at: number | null;
  ended_at: number | null;
  duration_ms: number | null;
  exit_code: number | null;
  signal: string | null;
  error: string | null;
  outcome: string | null;
  schedule_id: string | null;
  scheduled_at: number | null;
  dag_run_id: string | null;
  dag_step: string | null;
  skip_reason: string | null;
}

export interface RunningAttemptRow {
  attempt_id: number;
  task_id: string;
  task_name: string;
  owner: string;
  worker_id: string;
  started_at: number;
}

export interface MinuteStatRow {
  minute: number;
  started: number;
  succeeded: number;
  failed: number;
  cancelled: number;
  latency_count: number;
  latency_sum_ms: number;
  latency_max_ms: number;
}

export interface WebSessionRow {
  id_hash: string;
  token_id: string;
  created_at: number;
  expires_at: number;
}

/**
 * The tasks columns a spec determines: the keys of taskSpecParams (its return
 * type makes the two agree), and the order of taskSpecValues. Code, never
 * input, so they may be spliced into SQL.
 */
export const TASK_SPEC_COLUMNS = [
  'name', 'kind', 'command', 'args', 'script', 'interpreter', 'env', 'timeout_ms', 'cwd',
  'max_retries', 'retry_base_delay_ms', 'retry_factor', 'retry_max_delay_ms', 'priority', 'labels', 'requires',
] as const;

/** Named parameters for INSERT INTO tasks; the columns a spec determines. */
export function taskSpecParams(spec: TaskSpec): Record<(typeof TASK_SPEC_COLUMNS)[number], string | number | null> {
  return {
    name: spec.name,
    kind: spec.kind,
    command: spec.command,
    args: JSON.stringify(spec.args),
    script: spec.script,
    interpreter: JSON.stringify(spec.interpreter),
    env: JSON.stringify(spec.env),
    timeout_ms: spec.timeoutMs,
    cwd: spec.cwd,
    max_retries: spec.retry.maxRetries,
    retry_base_delay_ms: spec.retry.baseDelayMs,
    retry_factor: spec.retry.factor,
    retry_max_delay_ms: spec.retry.maxDelayMs,
    priority: spec.priority,
    labels: JSON.stringify(spec.labels),
    requires: JSON.stringify(spec.requires),
  };
}

/** taskSpecParams' values in the order of TASK_SPEC_COLUMNS: positional parameters for a multi-row insert. */
export function taskSpecValues(spec: TaskSpec): unknown[] {
  const p = taskSpecParams(spec);
  return TASK_SPEC_COLUMNS.map((c) => p[c]);
}

export function taskFromRow(r: TaskRow): Task {
  return {
    id: r.id,
    owner: r.owner,
    name: r.name,
    kind: r.kind as Task['kind'],
    state: r.state as TaskState,
    command: r.command,
    args: JSON.parse(r.args) as string[],
    script: r.script,
    interpreter: JSON.parse(r.interpreter) as string[],
    env: JSON.parse(r.env) as Record<string, string>,
    timeoutMs: r.timeout_ms,
    cwd: r.cwd ?? null,
    retry: {
      maxRetries: r.max_retries,
      baseDelayMs: r.retry_base_delay_ms,
      factor: r.retry_factor,
      maxDelayMs: r.retry_max_delay_ms,
    },
    priority: r.priority,
    labels: JSON.parse(r.labels) as Record<string, string>,
    requires: JSON.parse(r.requires) as Record<string, string>,
    attempts: r.attempts,
    retriesUsed: r.retries_used,
    lostCount: r.lost_count,
    runAfter: r.run_after,
    currentAttemptId: r.current_attempt_id,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    result: r.result === null ? null : (JSON.parse(r.result) as TaskResult),
    outputs: r.outputs ? (JSON.parse(r.outputs) as TaskOutputs) : null,
    scheduleId: r.schedule_id ?? null,
    scheduledAt: r.scheduled_at ?? null,
    dagRunId: r.dag_run_id ?? null,
    dagStep: r.dag_step ?? null,
    skipReason: (r.skip_reason ?? null) as Task['skipReason'],
  };
}

export function attemptFromRow(r: AttemptRow): Attempt {
  return {
    id: r.id,
    taskId: r.task_id,
    number: r.number,
    workerId: r.worker_id,
    fencingToken: r.fencing_token,
    stopReason: r.stop_reason,
    state: r.state as AttemptState,
    startedAt: r.started_at,
    endedAt: r.ended_at,
    leaseExpiresAt: r.lease_expires_at,
    exitCode: r.exit_code,
    signal: r.signal,
    error: r.error,
    durationMs: r.duration_ms,
  };
}

export function eventFromRow(r: EventRow): TaskEvent {
  return {
    id: r.id,
    taskId: r.task_id,
    from: r.from_state as TaskState | null,
    to: r.to_state as TaskState,
    reason: r.reason as TransitionReason | 'fenced_report',
    actor: r.actor,
    at: r.at,
    detail: r.detail === null ? null : (JSON.parse(r.detail) as Record<string, unknown>),
  };
}

export function logChunkFromRow(r: LogChunkRow): LogChunk {
  return { id: r.id, attempt: r.attempt, seq: r.seq, stream: r.stream as LogChunk['stream'], at: r.at, data: r.data };
}

export function tokenFromRow(r: TokenRow): TokenRecord {
  return {
    id: r.id,
    name: r.name,
    user: r.user,
    role: r.role as Role,
    secretHash: r.secret_hash,
    createdAt: r.created_at,
    revokedAt: r.revoked_at,
    lastUsedAt: r.last_used_at,
  };
}

export function workerFromRow(r: WorkerRow): WorkerRecord {
  return {
    id: r.id,
    hostname: r.hostname,
    slots: r.slots,
    labels: JSON.parse(r.labels) as Record<string, string>,
    connectedAt: r.connected_at,
    lastSeenAt: r.last_seen_at,
    state: r.state as WorkerRecord['state'],
    drainingAt: r.draining_at,
  };
}

export function taskSummaryFromRow(r: TaskSummaryRow): TaskSummary {
  return {
    id: r.id,
    owner: r.owner,
    name: r.name,
    kind: r.kind,
    state: r.state as TaskState,
    priority: r.priority,
    attempts: r.attempts,
    retriesUsed: r.retries_used,
    workerId: r.worker_id,
    startedAt: r.started_at,
    endedAt: r.ended_at,
    durationMs: r.duration_ms,
    exitCode: r.exit_code,
    signal: r.signal,
    error: r.error,
    outcome: r.outcome as TaskSummary['outcome'],
    runAfter: r.run_after,
    scheduleId: r.schedule_id ?? null,
    scheduledAt: r.scheduled_at ?? null,
    dagRunId: r.dag_run_id ?? null,
    dagStep: r.dag_step ?? null,
    skipReason: (r.skip_reason ?? null) as TaskSummary['skipReason'],
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

export function runningAttemptFromRow(r: RunningAttemptRow): RunningAttemptView {
  return { attemptId: r.attempt_id, taskId: r.task_id, taskName: r.task_name, owner: r.owner, workerId: r.worker_id, startedAt: r.started_at };
}

export function minuteStatFromRow(r: MinuteStatRow): MinuteStat {
  return {
    minute: r.minute,
    started: r.started,
    succeeded: r.succeeded,
    failed: r.failed,
    cancelled: r.cancelled,
    latencyCount: r.latency_count,
    latencySumMs: r.latency_sum_ms,
    latencyMaxMs: r.latency_max_ms,
  };
}

/** Counter sums by state to every state's count (0 where no counter has any). */
export function countsOf(rows: Array<{ state: string; n: number }>): Record<TaskState, number> {
  const out = Object.fromEntries(TASK_STATES.map((s) => [s, 0])) as Record<TaskState, number>;
  for (const r of rows) if (r.state in out) out[r.state as TaskState] = Number(r.n);
  return out;
}

/**
 * The start of the minute holding `ms` (epoch ms): minuteStats reads from the
 * minute holding `since`, so that minute's activity is not left out.
 */
export const minuteFloor = (ms: number): number => ms - (((ms % 60_000) + 60_000) % 60_000);

export function webSessionFromRow(r: WebSessionRow): WebSessionRecord {
  return { idHash: r.id_hash, tokenId: r.token_id, createdAt: r.created_at, expiresAt: r.expires_at };
}

export interface ScheduleRow {
  id: string;
  owner: string;
  name: string;
  expr: string;
  tz: string;
  overlap: string;
  catchup: string;
  max_catchup: number;
  /** The TaskSpec as JSON; JSON null for a DAG schedule. */
  template: string;
  /** A DAG schedule's DAG name and parameters (JSON object); both NULL for a task schedule. */
  dag_name: string | null;
  dag_params: string | null;
  /** SQLite: 0 | 1; PostgreSQL: BOOLEAN. */
  paused: number | boolean;
  next_fire_at: number | null;
  last_slot_at: number | null;
  version: number;
  created_at: number;
  updated_at: number;
}

/** Named parameters for INSERT INTO schedules: the columns a spec determines. */
export function scheduleSpecParams(spec: ScheduleSpec) {
  return {
    name: spec.name,
    expr: spec.expr,
    tz: spec.tz,
    overlap: spec.overlap,
    catchup: spec.catchup,
    max_catchup: spec.maxCatchup,
    template: JSON.stringify(spec.template),
    dag_name: spec.dag?.name ?? null,
    dag_params: spec.dag ? JSON.stringify(spec.dag.params) : null,
  };
}

export function scheduleFromRow(r: ScheduleRow): ScheduleRecord {
  return {
    id: r.id,
    owner: r.owner,
    name: r.name,
    expr: r.expr,
    tz: r.tz,
    overlap: r.overlap as ScheduleRecord['overlap'],
    catchup: r.catchup as ScheduleRecord['catchup'],
    maxCatchup: r.max_catchup,
    template: JSON.parse(r.template) as ScheduleRecord['template'],
    dag: r.dag_name === null ? null : { name: r.dag_name, params: JSON.parse(r.dag_params ?? '{}') as Record<string, string> },
    paused: r.paused === true || r.paused === 1,
    nextFireAt: r.next_fire_at,
    lastSlotAt: r.last_slot_at,
    version: r.version,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

/** A schedule_runs row with its task's state (LEFT JOIN tasks). */
export interface ScheduleRunRow {
  schedule_id: string;
  slot_at: number;
  outcome: string;
  reason: string | null;
  task_id: string | null;
  task_state: string | null;
  dag_run_id: string | null;
  dag_run_state: string | null;
  at: number;
  catchup_count: number | null;
  /** 0/1 on SQLite, boolean on PostgreSQL. */
  catchup_exact: number | boolean | null;
}

export function scheduleRunFromRow(r: ScheduleRunRow): ScheduleRun {
  return {
    scheduleId: r.schedule_id,
    slotAt: r.slot_at,
    outcome: r.outcome as ScheduleRun['outcome'],
    reason: r.reason,
    taskId: r.task_id,
    taskState: r.task_state as TaskState | null,
    dagRunId: r.dag_run_id,
    dagRunState: r.dag_run_state as ScheduleRun['dagRunState'],
    at: r.at,
    catchup: r.catchup_count === null ? null : { count: r.catchup_count, exact: r.catchup_exact === true || r.catchup_exact === 1 },
  };
}
