/**
 * Request and response schemas (TypeBox = JSON Schema). Fastify validates
 * requests with them and @fastify/swagger builds /openapi.json from the same
 * objects, so the document cannot drift from what the server accepts.
 * Every object schema is closed (additionalProperties: false): unknown
 * fields are rejected, not ignored.
 */
import { Type, type Static } from '@sinclair/typebox';
import { TASK_ID_PATTERN } from '../core/ids.js';
import { RETRY_LIMITS } from '../core/retry-policy.js';
import { TASK_STATES } from '../core/task-state.js';
import { MAX_SCRIPT_CHARS } from '../core/task.js';
import { SCHEDULE_FILTER_PATTERN, TASK_ID_PREFIX_PATTERN, TASK_LIST_CURSOR_PATTERN, TOKEN_ID_PATTERN, TOKEN_NAME_PATTERN, TOKEN_USER_PATTERN, VISIBLE_ASCII_PATTERN } from './pattern-rules.js';

const StringMap = Type.Record(Type.String({ minLength: 1, maxLength: 256 }), Type.String({ maxLength: 65536 }));
/** A task's environment: at most MAX_ENV entries (with the 1 MiB body limit, what one exec() can carry). */
export const MAX_ENV = 1000;
const EnvMap = Type.Record(Type.String({ minLength: 1, maxLength: 256 }), Type.String({ maxLength: 65536 }), { maxProperties: MAX_ENV });
/** Placement constraints: keys and values as labels, at most 64 of them (each one is checked against every worker's labels). */
export const MAX_REQUIRES = 64;
const RequiresMap = Type.Record(Type.String({ minLength: 1, maxLength: 256 }), Type.String({ maxLength: 65536 }), { maxProperties: MAX_REQUIRES });
/** Integer milliseconds or a string such as "30s", "1h30m". */
const Duration = Type.Union([Type.Integer({ minimum: 0 }), Type.String({ minLength: 1, maxLength: 32 })]);
const Iso = Type.String({ format: 'date-time' });
const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);

/** The longest task cwd accepted (PATH_MAX on Linux). */
export const MAX_CWD_CHARS = 4096;

export const TaskIdParams = Type.Object({ id: Type.String({ pattern: TASK_ID_PATTERN }) }, { additionalProperties: false });
export type TaskIdParams = Static<typeof TaskIdParams>;

export const SubmitBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    kind: Type.Optional(Type.Literal('batch')),
    command: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 })),
    args: Type.Optional(Type.Array(Type.String({ maxLength: 65536 }), { maxItems: 1000 })),
    script: Type.Optional(Type.String({ minLength: 1, maxLength: MAX_SCRIPT_CHARS })),
    interpreter: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 4096 }), {
        minItems: 1,
        maxItems: 20,
        description: 'argv that runs the script file (its path is appended). Default: none when the script starts with "#!" (the file is executed and the kernel reads that line), else ["sh"].',
      }),
    ),
    cwd: Type.Optional(
      Type.String({ minLength: 1, maxLength: MAX_CWD_CHARS, description: 'Absolute directory the task runs in on the worker (default: a fresh work directory, which stays HOME and holds DROVER_OUTPUT_DIR).' }),
    ),
    runAt: Type.Optional(
      Type.String({ minLength: 1, maxLength: 64, description: 'Run later: an ISO 8601 time with a zone (2026-12-01T18:00:00Z, ...+01:00). A past time runs now. At most 1 year ahead. Not with delay.' }),
    ),
    delay: Type.Optional(
      Type.Union([Type.Integer({ minimum: 0 }), Type.String({ minLength: 1, maxLength: 32 })], {
        description: 'Run later: this long after the submit (integer milliseconds or a duration such as "90s", "5m", "1h30m"). At most 1 year. Not with runAt.',
      }),
    ),
    env: Type.Optional(EnvMap),
    timeout: Type.Optional(Duration),
    retry: Type.Optional(
      Type.Object(
        {
          maxRetries: Type.Optional(Type.Integer({ minimum: 0, maximum: RETRY_LIMITS.maxRetries })),
          baseDelay: Type.Optional(Duration),
          factor: Type.Optional(Type.Number({ minimum: 1, maximum: RETRY_LIMITS.maxFactor })),
          maxDelay: Type.Optional(Duration),
        },
        { additionalProperties: false },
      ),
    ),
    priority: Type.Optional(Type.Integer({ minimum: -1000, maximum: 1000 })),
    labels: Type.Optional(StringMap),
    requires: Type.Optional(RequiresMap),
  },
  { additionalProperties: false },
);
export type SubmitBody = Static<typeof SubmitBody>;

/**
 * Request headers a route reads, with the rule a value must follow. Fastify
 * validates them with the route's `headers` schema (built from this table);
 * error-handler.ts names the header as written here and states the rule.
 */
export const HEADER_RULES = {
  'idempotency-key': { name: 'Idempotency-Key', rule: '1..255 visible ASCII characters (0x21-0x7E)', minLength: 1, maxLength: 255, pattern: VISIBLE_ASCII_PATTERN },
  'last-event-id': { name: 'Last-Event-ID', rule: 'a stream cursor: 1..200 visible ASCII characters (0x21-0x7E)', minLength: 1, maxLength: 200, pattern: VISIBLE_ASCII_PATTERN },
} as const;

export const SubmitHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      minLength: HEADER_RULES['idempotency-key'].minLength,
      maxLength: HEADER_RULES['idempotency-key'].maxLength,
      pattern: HEADER_RULES['idempotency-key'].pattern,
      description:
        'Makes the submit idempotent per user: a repeat with the same key and the same body returns the first task (200) instead of creating another; ' +
        'the same key with a different body is a 409. 1..255 visible ASCII characters.',
    }),
  ),
});
export type SubmitHeaders = Static<typeof SubmitHeaders>;

/**
 * The submit routes' headers with Prefer (POST /v1/tasks and /v1/tasks/batch):
 * the schema documents it, the handler reads it (prefer.ts checks it, so a bad
 * value is a 400 naming `Prefer`).
 */
export const SubmitPreferHeaders = Type.Composite([
  SubmitHeaders,
  Type.Object({
    prefer: Type.Optional(
      Type.String({
        description:
          'RFC 7240. "return=minimal": the task (each task of a batch, in input order) is answered as {id, state} only, in the same envelope, with Preference-Applied: return=minimal. ' +
          '"return=representation" (the default): whole tasks. Other preferences are ignored; a return of another value is a 400 (field "Prefer").',
      }),
    ),
  }),
]);
export type SubmitPreferHeaders = Static<typeof SubmitPreferHeaders>;

// The patterns of the list queries, and every pattern's rule in words (the 400's reason): pattern-rules.ts.

export const ListQuery = Type.Object(
  {
    state: Type.Optional(Type.Union(TASK_STATES.map((s) => Type.Literal(s)))),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'name prefix' })),
    owner: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'admins only: this user\'s tasks' })),
    createdAfter: Type.Optional(Iso),
    createdBefore: Type.Optional(Iso),
    id: Type.Optional(Type.String({ pattern: TASK_ID_PREFIX_PATTERN, description: 'id prefix: 1..26 Crockford base32 characters, any case' })),
    schedule: Type.Optional(
      Type.String({ minLength: 1, maxLength: 100, pattern: SCHEDULE_FILTER_PATTERN, description: 'the runs of this schedule (of `owner` for an admin who names one, else the caller\'s); 404 when there is none' }),
    ),
    cursor: Type.Optional(
      Type.String({ pattern: TASK_LIST_CURSOR_PATTERN, description: 'the nextCursor of the page before: a task id, or with order=ended "<ms>.<task id>"' }),
    ),
    order: Type.Optional(
      Type.Union([Type.Literal('created'), Type.Literal('ended')], {
        description: 'created (default): newest created first; ended: newest end first, with state failed or cancelled only',
      }),
    ),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500 })),
  },
  { additionalProperties: false },
);
export type ListQuery = Static<typeof ListQuery>;

export const LogsQuery = Type.Object(
  {
    follow: Type.Optional(Type.Union([Type.Literal('1'), Type.Literal('0'), Type.Literal('true'), Type.Literal('false')])),
    attempt: Type.Optional(Type.Integer({ minimum: 1 })),
  },
  { additionalProperties: false },
);
export type LogsQuery = Static<typeof LogsQuery>;

/** Log pages in chunks (routes/log-chunks.ts): at most LOG_CHUNKS_MAX per answer, long-poll at most LOG_WAIT_MAX_MS. */
export const LOG_CHUNKS_MAX = 32;
export const LOG_WAIT_MAX_MS = 25_000;
export const LogChunksQuery = Type.Object(
  {
    before: Type.Optional(Type.Integer({ minimum: 1, description: 'the chunks just before this chunk id (page backwards)' })),
    after: Type.Optional(Type.Integer({ minimum: 0, description: 'the chunks after this chunk id (tail)' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: LOG_CHUNKS_MAX })),
    wait: Type.Optional(Type.Integer({ minimum: 0, maximum: LOG_WAIT_MAX_MS, description: 'with after: wait this many ms for a chunk to arrive or the task to end' })),
  },
  { additionalProperties: false },
);
export type LogChunksQuery = Static<typeof LogChunksQuery>;

export const CountsQuery = Type.Object({ owner: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'admins only' })) }, { additionalProperties: false });
export type CountsQuery = Static<typeof CountsQuery>;

/** The longest window /v1/stats/minutes answers for. */
export const MINUTES_MAX_WINDOW_MS = 24 * 3600_000;
export const MinutesQuery = Type.Object(
  {
    since: Type.Optional(Iso),
    until: Type.Optional(Iso),
    owner: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'admins only' })),
  },
  { additionalProperties: false },
);
export type MinutesQuery = Static<typeof MinutesQuery>;

/** A change-feed cursor as a client holds it; the store decides whether it is well formed. */
export const StreamQuery = Type.Object(
  { cursor: Type.Optional(Type.String({ minLength: 1, maxLength: HEADER_RULES['last-event-id'].maxLength, pattern: HEADER_RULES['last-event-id'].pattern })) },
  { additionalProperties: false },
);
export type StreamQuery = Static<typeof StreamQuery>;

export const StreamHeaders = Type.Object({
  'last-event-id': Type.Optional(
    Type.String({
      minLength: HEADER_RULES['last-event-id'].minLength,
      maxLength: HEADER_RULES['last-event-id'].maxLength,
      pattern: HEADER_RULES['last-event-id'].pattern,
      description: 'Resume after this cursor (EventSource sends it on reconnect); wins over ?cursor=',
    }),
  ),
});
export type StreamHeaders = Static<typeof StreamHeaders>;

export const TokenCreateBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100, pattern: TOKEN_NAME_PATTERN }),
    role: Type.Optional(Type.Union([Type.Literal('admin'), Type.Literal('user'), Type.Literal('worker')])),
    user: Type.Optional(Type.String({ minLength: 1, maxLength: 100, pattern: TOKEN_USER_PATTERN })),
  },
  { additionalProperties: false },
);
export type TokenCreateBody = Static<typeof TokenCreateBody>;

export const TokenIdParams = Type.Object({ id: Type.String({ pattern: TOKEN_ID_PATTERN }) }, { additionalProperties: false });

// ---- responses (documented in /openapi.json; also used to serialize fast) ----

export const ResultSchema = Type.Union([
  Type.Object({
    outcome: Type.String({ description: 'succeeded, failed, timed_out, cancelled, lost, or start_failed (the process could not be started; no retry was used)' }),
    attempt: Type.Integer(),
    exitCode: Type.Union([Type.Integer(), Type.Null()]),
    signal: Nullable(Type.String()),
    error: Nullable(Type.String()),
    durationMs: Type.Union([Type.Integer(), Type.Null()]),
  }),
  Type.Null(),
]);

export const TaskSchema = Type.Object({
  id: Type.String(),
  owner: Type.String(),
  name: Type.String(),
  kind: Type.String(),
  state: Type.String(),
  command: Nullable(Type.String()),
  args: Type.Array(Type.String()),
  script: Nullable(Type.String()),
  interpreter: Type.Array(Type.String()),
  env: Type.Record(Type.String(), Type.String()),
  /** True when the caller is not the task's owner: every env value is "" (the keys are shown). */
  envRedacted: Type.Boolean(),
  timeoutMs: Type.Union([Type.Integer(), Type.Null()]),
  cwd: Nullable(Type.String()),
  retry: Type.Object({ maxRetries: Type.Integer(), baseDelayMs: Type.Integer(), factor: Type.Number(), maxDelayMs: Type.Integer() }),
  priority: Type.Integer(),
  labels: Type.Record(Type.String(), Type.String()),
  requires: Type.Record(Type.String(), Type.String()),
  attempts: Type.Integer(),
  retriesUsed: Type.Integer(),
  lostCount: Type.Integer(),
  runAfter: Nullable(Type.String()),
  scheduleId: Nullable(Type.String({ description: 'the cron schedule that created this task (a run of it), else null; may name a deleted schedule' })),
  scheduledAt: Nullable(Type.String({ description: 'the scheduled time (slot) this run is for; null for a task not made by a schedule, or run out of schedule (cron run)' })),
  dagRunId: Nullable(Type.String({ description: 'the DAG run this task is a step of, else null' })),
  dagStep: Nullable(Type.String({ description: 'the name of the DAG step this task is, else null' })),
  skipReason: Nullable(Type.String({ description: 'why a skipped DAG step was skipped: upstream_failed, upstream_skipped or condition_not_met; null unless skipped' })),
  createdAt: Type.String(),
  updatedAt: Type.String(),
  result: ResultSchema,
  outputs: Type.Union([
    Type.Record(Type.String(), Type.String(), {
      description:
        'What the succeeding attempt wrote to the file named by DROVER_OUTPUT, as KEY=VALUE lines (at most 128 keys, 64 KiB); recorded once, when the task succeeded; null when it wrote none or has not succeeded',
    }),
    Type.Null(),
  ]),
});

export const AttemptSchema = Type.Object({
  id: Type.Integer(),
  number: Type.Integer(),
  workerId: Type.String(),
  state: Type.String(),
  startedAt: Type.String(),
  endedAt: Nullable(Type.String()),
  exitCode: Type.Union([Type.Integer(), Type.Null()]),
  signal: Nullable(Type.String()),
  error: Nullable(Type.String()),
  durationMs: Type.Union([Type.Integer(), Type.Null()]),
});

export const EventSchema = Type.Object({
  id: Type.Integer(),
  from: Nullable(Type.String()),
  to: Type.String(),
  reason: Type.String(),
  actor: Type.String(),
  at: Type.String(),
  detail: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]),
});

const NullableInt = Type.Union([Type.Integer(), Type.Null()]);

/** A row of the task list and of the stream: no command, script, args or env. */
export const TaskSummarySchema = Type.Object({
  id: Type.String(),
  owner: Type.String(),
  name: Type.String(),
  kind: Type.String(),
  state: Type.String(),
  priority: Type.Integer(),
  attempts: Type.Integer(),
  retriesUsed: Type.Integer(),
  workerId: Nullable(Type.String()),
  createdAt: Type.String(),
  updatedAt: Type.String(),
  startedAt: Nullable(Type.String()),
  endedAt: Nullable(Type.String()),
  durationMs: NullableInt,
  exitCode: NullableInt,
  signal: Nullable(Type.String()),
  error: Nullable(Type.String()),
  outcome: Nullable(Type.String({ description: 'how the task ended (result outcome: succeeded, failed, timed_out, cancelled, lost, start_failed) once terminal; before that how its current attempt ended; null while it runs' })),
  runAfter: Nullable(Type.String()),
  scheduleId: Nullable(Type.String({ description: 'the cron schedule that created this task (a run of it), else null; may name a deleted schedule' })),
  scheduledAt: Nullable(Type.String({ description: 'the scheduled time (slot) this run is for; null for a task not made by a schedule, or run out of schedule (cron run)' })),
  dagRunId: Nullable(Type.String({ description: 'the DAG run this task is a step of, else null' })),
  dagStep: Nullable(Type.String({ description: 'the name of the DAG step this task is, else null' })),
  skipReason: Nullable(Type.String({ description: 'why a skipped DAG step was skipped: upstream_failed, upstream_skipped or condition_not_met; null unless skipped' })),
});

export const RunningAttemptSchema = Type.Object({
  attemptId: Type.Integer(),
  taskId: Type.String(),
  taskName: Type.String(),
  startedAt: Type.String(),
});

export const WorkerSchema = Type.Object({
  id: Type.String(),
  hostname: Type.String(),
  labels: Type.Record(Type.String(), Type.String()),
  slots: Type.Integer(),
  slotsUsed: Type.Integer(),
  state: Type.Union([Type.Literal('connected'), Type.Literal('draining'), Type.Literal('disconnected'), Type.Literal('lost')]),
  connectedAt: Type.String(),
  lastSeenAt: Type.String(),
  drainingAt: Nullable(Type.String()),
  runningAttempts: Type.Array(RunningAttemptSchema),
});

export const LogChunkSchema = Type.Object({
  id: Type.Integer(),
  attempt: Type.Integer(),
  stream: Type.String(),
  at: Type.String(),
  data: Type.String({ description: 'base64' }),
});

export const CountsSchema = Type.Object(Object.fromEntries(TASK_STATES.map((s) => [s, Type.Integer()])) as Record<(typeof TASK_STATES)[number], ReturnType<typeof Type.Integer>>);

export const MinuteSchema = Type.Object({
  minute: Type.String(),
  started: Type.Integer(),
  succeeded: Type.Integer(),
  failed: Type.Integer(),
  cancelled: Type.Integer(),
  latencyCount: Type.Integer(),
  latencyAvgMs: NullableInt,
  latencyMaxMs: NullableInt,
});

export const TokenSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  user: Type.String(),
  role: Type.String(),
  createdAt: Type.String(),
  revokedAt: Nullable(Type.String()),
  lastUsedAt: Nullable(Type.String()),
});

export const ErrorSchema = Type.Object({
  error: Type.Object({
    code: Type.String(),
    message: Type.String(),
    field: Type.Optional(Type.String()),
    reason: Type.Optional(Type.String()),
  }),
});
