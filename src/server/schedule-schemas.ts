/**
 * Request and response schemas of /v1/schedules (routes/schedules.ts), closed
 * like every schema in schemas.ts. The task template is a POST /v1/tasks body
 * without runAt/delay: a run's time is its slot.
 */
import { Type, type Static } from '@sinclair/typebox';
import { SubmitBody, TaskSchema } from './schemas.js';

/** A schedule's name: unique per owner, safe in a URL path segment and a shell word. */
export const SCHEDULE_NAME_PATTERN = '^[A-Za-z0-9._-]{1,100}$';
const ScheduleName = Type.String({ minLength: 1, maxLength: 100, pattern: SCHEDULE_NAME_PATTERN, description: '1..100 of A-Z a-z 0-9 . _ -; unique per owner' });

export const TaskTemplateBody = Type.Omit(SubmitBody, ['runAt', 'delay'], { additionalProperties: false });
export type TaskTemplateBody = Static<typeof TaskTemplateBody>;

export const ScheduleCreateBody = Type.Object(
  {
    name: ScheduleName,
    schedule: Type.String({ minLength: 1, maxLength: 200, description: 'cron: 5 fields, or 6 with a leading seconds field; @hourly, @daily, @weekly, @monthly' }),
    tz: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'IANA time zone (default UTC)' })),
    overlap: Type.Optional(Type.String({ description: 'allow (default), forbid or replace' })),
    catchup: Type.Optional(Type.String({ description: 'none, latest (default) or all' })),
    maxCatchup: Type.Optional(Type.Integer({ description: 'with catchup all: at most this many missed slots run (default 10, at most 1000)' })),
    task: TaskTemplateBody,
  },
  { additionalProperties: false },
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
    cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 64, pattern: '^[0-9A-Z]+$' })),
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
  task: TaskTemplateSchema,
});

export const ScheduleRunSchema = Type.Object({
  slotAt: Type.String(),
  outcome: Type.String({ description: 'fired or skipped' }),
  reason: Type.Union([Type.String({ description: 'why skipped: overlap_forbid, catchup_none, catchup_capped, ...' }), Type.Null()]),
  taskId: NullableString,
  taskState: Type.Union([Type.String({ description: 'the run\'s task\'s current state; null when skipped or the task was removed' }), Type.Null()]),
  latenessMs: Type.Union([Type.Integer({ description: 'task created minus slot; null when skipped' }), Type.Null()]),
});

export const ScheduleEnvelope = Type.Object({ schedule: ScheduleSchema });
