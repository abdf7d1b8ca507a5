/**
 * Request and response schemas of /v1/schedules (routes/schedules.ts), closed
 * like every schema in schemas.ts. The task template is a POST /v1/tasks body
 * without runAt/delay: a run's time is its slot.
 */
import { Type, type Static } from '@sinclair/typebox';
import { DAG_NAME_PATTERN } from '../core/dag/dag-definition.js';
import { PAGE_CURSOR_PATTERN } from './pattern-rules.js';
import { SubmitBody, TaskSchema } from './schemas.js';

/** A schedule's name: unique per owner, safe in a URL path segment and a shell word. */
/** `.` and `..` alone are refused: they would be path segments that URL normalisation removes (/v1/schedules/..). */
export const SCHEDULE_NAME_PATTERN = '^(?!\\.{1,2}$)[A-Za-z0-9._-]{1,100}$';
const ScheduleName = Type.String({ minLength: 1, maxLength: 100, pattern: SCHEDULE_NAME_PATTERN, description: '1..100 of A-Z a-z 0-9 . _ -, not . or .. alone; unique per owner' });

export const TaskTemplateBody = Type.Omit(SubmitBody, ['runAt', 'delay'], { additionalProperties: false });
export type TaskTemplateBody = Static<typeof TaskTemplateBody>;

const DagParams = Type.Record(Type.String(), Type.String(), { description: 'KEY: value, checked against the DAG\'s declared parameters; keys [A-Za-z_][A-Za-z0-9_]*, at most 64' });

/** A DAG schedule's target: the caller's DAG of this name (newest version at each run) and its run parameters. */
export const ScheduleDagBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100, pattern: DAG_NAME_PATTERN, description: 'the DAG (drover dag apply); each run uses its newest version' }),
    params: Type.Optional(DagParams),
  },
  { additionalProperties: false },
);

export const ScheduleCreateBody = Type.Object(
  {
    name: ScheduleName,
    schedule: Type.String({ minLength: 1, maxLength: 200, description: 'cron: 5 fields, or 6 with a leading seconds field; @hourly, @daily, @weekly, @monthly' }),
    tz: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'IANA time zone (default UTC)' })),
    overlap: Type.Optional(Type.String({ description: 'allow (default), forbid or replace' })),
    catchup: Type.Optional(Type.String({ description: 'none, latest (default) or all' })),
    maxCatchup: Type.Optional(Type.Integer({ description: 'with catchup all: at most this many missed slots run (default 10, at most 1000)' })),
    task: Type.Optional(TaskTemplateBody),
    dag: Type.Optional(ScheduleDagBody),
  },
  { additionalProperties: false, description: 'exactly one of task (each run is a task) and dag (each run is a run of that DAG)' },
);
export type ScheduleCreateBody = Static<typeof ScheduleCreateBody>;

export const ScheduleNameParams = Type.Object({ name: ScheduleName }, { additionalProperties: false });
export type ScheduleNameParams = Static<typeof ScheduleNameParams>;

const Owner = Type.String({ minLength: 1, maxLength: 200, description: 'admins only: that user\'s schedule (default: the caller\'s own)' });

/** The per-name routes: which owner's schedule of that name (admins). */
export const ScheduleOwnerQuery = Type.Object({ owner: Type.Optional(Owner) }, { additionalProperties: false });
export type ScheduleOwnerQuery = Static<typeof ScheduleOwnerQuery>;

export const ScheduleListQuery = Type.Object(
  {
    owner: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'admins only: this user\'s schedules (default: everyone\'s)' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500 })),
    cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 64, pattern: PAGE_CURSOR_PATTERN })),
  },
  { additionalProperties: false },
);
export type ScheduleListQuery = Static<typeof ScheduleListQuery>;

const NullableString = Type.Union([Type.String(), Type.Null()]);

/** What each run creates (a TaskSpec; env values redacted for anyone but the owner, as in task JSON). */
export const TaskTemplateSchema = Type.Pick(TaskSchema, [
  'name', 'kind', 'command', 'args', 'script', 'interpreter', 'env', 'envRedacted', 'timeoutMs', 'cwd', 'retry', 'priority', 'labels', 'requires',
]);

export const ScheduleSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  owner: Type.String(),
  schedule: Type.String(),
  tz: Type.String(),
  overlap: Type.String(),
  catchup: Type.String(),
  maxCatchup: Type.Integer(),
  paused: Type.Boolean(),
  nextFireAt: Type.Union([Type.String({ description: 'null while paused or when the expression has no more times' }), Type.Null()]),
  lastSlotAt: NullableString,
  createdAt: Type.String(),
  updatedAt: Type.String(),
  task: Type.Union([TaskTemplateSchema, Type.Null()], { description: 'what each run creates; null for a DAG schedule' }),
  dag: Type.Union([Type.Object({ name: Type.String(), params: DagParams }), Type.Null()], { description: 'a DAG schedule\'s DAG and run parameters; null for a task schedule' }),
});

export const ScheduleRunSchema = Type.Object({
  slotAt: Type.String(),
  outcome: Type.String({ description: 'fired or skipped' }),
  reason: Type.Union([Type.String({ description: 'why skipped: overlap_forbid, catchup_none, catchup_capped, ...' }), Type.Null()]),
  taskId: NullableString,
  taskState: Type.Union([Type.String({ description: 'the run\'s task\'s current state; null when skipped or the task was removed' }), Type.Null()]),
  dagRunId: Type.Union([Type.String({ description: 'a DAG schedule\'s run (taskId is then null)' }), Type.Null()]),
  dagRunState: Type.Union([Type.String({ description: 'that DAG run\'s current state: running, succeeded, failed or cancelled' }), Type.Null()]),
  latenessMs: Type.Union([Type.Integer({ description: 'task created minus slot; null when skipped' }), Type.Null()]),
  catchup: Type.Union([
    Type.Object(
      {
        skipped: Type.Integer({ description: 'how many slots this catch-up skipped in all (this run is its first or last)' }),
        exact: Type.Boolean({ description: 'false when counting stopped: at least `skipped` slots' }),
      },
      { description: 'on the first and last slot a catch-up skipped (reason catchup_*); null on other runs' },
    ),
    Type.Null(),
  ]),
});

export const ScheduleEnvelope = Type.Object({ schedule: ScheduleSchema });

/** How many times GET /v1/cron/next lists at most (the CLI's `cron next`, computing locally, allows more). */
export const CRON_NEXT_MAX_COUNT = 100;

/** GET /v1/cron/next: the same `schedule` and `tz` as a create body, so an error names the same field. */
export const CronNextQuery = Type.Object(
  {
    schedule: Type.String({ minLength: 1, maxLength: 200, description: 'cron expression, as in POST /v1/schedules' }),
    tz: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'IANA time zone (default UTC)' })),
    from: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'times strictly after this ISO 8601 time with a zone (default now)' })),
    count: Type.Optional(Type.Integer({ minimum: 1, maximum: CRON_NEXT_MAX_COUNT, description: `how many, 1..${CRON_NEXT_MAX_COUNT} (default 5)` })),
  },
  { additionalProperties: false },
);
export type CronNextQuery = Static<typeof CronNextQuery>;

export const CronNextAnswer = Type.Object({
  schedule: Type.String({ description: 'the expression as it would be stored (trimmed, single spaces)' }),
  tz: Type.String(),
  next: Type.Array(Type.String(), { description: 'ascending ISO times (UTC); fewer than count only when the expression has no more times' }),
});
