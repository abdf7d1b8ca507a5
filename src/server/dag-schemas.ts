/**
 * Request and response schemas of /v1/dags and /v1/dag-runs (routes/dags.ts,
 * docs/api.md "DAGs"), closed like every schema in schemas.ts. A DAG body is
 * what a DAG file holds (the CLI reads YAML or JSON and sends it as is): a
 * name, an optional description, declared run parameters with defaults, and
 * steps, each a POST /v1/tasks body (without runAt/delay; its name is the
 * step's) plus `depends_on`, `when` and the `retries` shorthand.
 */
import { Type, type Static } from '@sinclair/typebox';
import { MAX_DAG_STEPS } from '../core/dag/dag-graph.js';
import { DAG_NAME_PATTERN } from '../core/dag/dag-definition.js';
import { RETRY_LIMITS } from '../core/retry-policy.js';
import { TASK_ID_PATTERN } from '../core/ids.js';
import { PAGE_CURSOR_PATTERN, TASK_ID_PREFIX_PATTERN } from './pattern-rules.js';
import { ResultSchema, SubmitBody } from './schemas.js';
import { TaskTemplateSchema } from './schedule-schemas.js';

const DagName = Type.String({ minLength: 1, maxLength: 100, pattern: DAG_NAME_PATTERN, description: '1..100 of A-Z a-z 0-9 . _ -, not . or .. alone; unique per owner' });
const Params = Type.Record(Type.String(), Type.String(), { description: 'KEY: value; keys [A-Za-z_][A-Za-z0-9_]*, at most 64' });

/** A step: what to run (a task body), its dependencies and its condition. */
export const DagStepBody = Type.Object(
  {
    ...Type.Omit(SubmitBody, ['runAt', 'delay', 'name']).properties,
    name: Type.String({ minLength: 1, maxLength: 64, description: 'unique in the DAG: letters, digits, _ . - (not first: . -)' }),
    depends_on: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: MAX_DAG_STEPS, description: 'names of the steps this one waits for' })),
    when: Type.Optional(Type.String({ description: 'success (default): all dependencies succeeded; failure: all ended and one failed; always: all ended' })),
    retries: Type.Optional(Type.Integer({ minimum: 0, maximum: RETRY_LIMITS.maxRetries, description: 'shorthand for retry.maxRetries' })),
  },
  { additionalProperties: false },
);
export type DagStepBody = Static<typeof DagStepBody>;

export const DagBody = Type.Object(
  {
    name: DagName,
    description: Type.Optional(Type.String({ maxLength: 2000 })),
    params: Type.Optional(Params),
    steps: Type.Array(DagStepBody, { maxItems: MAX_DAG_STEPS, description: `1..${MAX_DAG_STEPS} steps` }),
  },
  { additionalProperties: false },
);
export type DagBody = Static<typeof DagBody>;

const Owner = Type.String({ minLength: 1, maxLength: 200, description: 'admins only: that user\'s DAG (default: the caller\'s own)' });

export const DagNameParams = Type.Object({ name: DagName }, { additionalProperties: false });
export type DagNameParams = Static<typeof DagNameParams>;

export const DagGetQuery = Type.Object(
  { owner: Type.Optional(Owner), version: Type.Optional(Type.Integer({ minimum: 1, description: 'that version (default: the newest)' })) },
  { additionalProperties: false },
);
export type DagGetQuery = Static<typeof DagGetQuery>;

export const DagOwnerQuery = Type.Object({ owner: Type.Optional(Owner) }, { additionalProperties: false });
export type DagOwnerQuery = Static<typeof DagOwnerQuery>;

const Cursor = Type.String({ minLength: 1, maxLength: 64, pattern: PAGE_CURSOR_PATTERN });

export const DagListQuery = Type.Object(
  {
    owner: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'admins only: this user\'s DAGs (default: everyone\'s)' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500 })),
    cursor: Type.Optional(Cursor),
  },
  { additionalProperties: false },
);
export type DagListQuery = Static<typeof DagListQuery>;

export const DagRunBody = Type.Object({ params: Type.Optional(Params) }, { additionalProperties: false });
export type DagRunBody = Static<typeof DagRunBody>;

export const DagRunListQuery = Type.Object(
  {
    dag: Type.Optional(DagName),
    id: Type.Optional(Type.String({ pattern: TASK_ID_PREFIX_PATTERN, description: 'runs whose id starts with this: 1..26 Crockford base32 characters, any case (how the CLI resolves a run id prefix)' })),
    owner: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'admins only: this user\'s runs (default: everyone\'s; with dag, the caller\'s DAG of that name)' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500 })),
    cursor: Type.Optional(Cursor),
  },
  { additionalProperties: false },
);
export type DagRunListQuery = Static<typeof DagRunListQuery>;

export const DagRunIdParams = Type.Object({ id: Type.String({ pattern: TASK_ID_PATTERN }) }, { additionalProperties: false });
export type DagRunIdParams = Static<typeof DagRunIdParams>;

const NullableString = Type.Union([Type.String(), Type.Null()]);

export const DagStepSchema = Type.Object({
  name: Type.String(),
  dependsOn: Type.Array(Type.String()),
  when: Type.String(),
  task: TaskTemplateSchema,
});

export const DagSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  owner: Type.String(),
  version: Type.Integer(),
  description: NullableString,
  params: Type.Union([Params, Type.Null()], { description: 'declared parameters and their defaults; null: any are taken' }),
  hash: Type.String({ description: 'sha256 of the stored definition' }),
  steps: Type.Array(DagStepSchema),
  createdAt: Type.String({ description: 'when this version was applied' }),
  firstCreatedAt: Type.String(),
});

export const DagSummarySchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  owner: Type.String(),
  version: Type.Integer(),
  stepCount: Type.Integer(),
  description: NullableString,
  createdAt: Type.String(),
  updatedAt: Type.String(),
});

export const DagRunSchema = Type.Object({
  id: Type.String(),
  dag: Type.String(),
  dagId: Type.String(),
  version: Type.Integer(),
  owner: Type.String(),
  state: Type.String({ description: 'running, succeeded, failed or cancelled' }),
  params: Params,
  stepCount: Type.Integer(),
  scheduleId: NullableString,
  scheduledAt: NullableString,
  createdAt: Type.String(),
  updatedAt: Type.String(),
  endedAt: NullableString,
});

const StepCounts = Type.Record(Type.String(), Type.Integer(), { description: 'steps by state' });

/** A run as GET /v1/dag-runs lists it: with its steps counted by state (`drover dag runs`: succeeded/total). */
export const DagRunListItemSchema = Type.Object({ ...DagRunSchema.properties, counts: StepCounts });

export const DagRunStepSchema = Type.Object({
  name: Type.String(),
  dependsOn: Type.Array(Type.String()),
  when: Type.String(),
  taskId: Type.String(),
  state: Type.String(),
  skipReason: NullableString,
  attempts: Type.Integer(),
  releasedAt: NullableString,
  startedAt: NullableString,
  endedAt: NullableString,
  durationMs: Type.Union([Type.Integer({ description: 'endedAt (or now, while running) minus startedAt' }), Type.Null()]),
  result: ResultSchema,
  outputs: Type.Union([Type.Record(Type.String(), Type.String()), Type.Null()], { description: 'KEY=VALUE lines the step wrote to $DROVER_OUTPUT; values are "" for anyone but the owner' }),
  critical: Type.Boolean({ description: 'on the critical path' }),
});

export const DagRunDetail = Type.Object({
  run: DagRunSchema,
  steps: Type.Array(DagRunStepSchema),
  criticalPath: Type.Array(Type.String(), { description: 'the chain of steps that decided the run\'s duration, first to last' }),
  counts: StepCounts,
});

export const DagEnvelope = Type.Object({ dag: DagSchema, created: Type.Optional(Type.Boolean()) });
export const DagRunEnvelope = Type.Object({ run: DagRunSchema });
