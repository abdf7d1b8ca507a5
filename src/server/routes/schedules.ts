/**
 * Schedule routes (docs/api.md, "Schedules"). Like /v1/tasks: admins and
 * users, never workers; a user sees and acts on only their own schedules
 * (anyone else's is 404); an admin on anyone's, naming the owner with
 * `?owner=` on the per-name routes (a name is unique per owner; default the
 * admin's own). Firing is not here: the cron service (cron-service.ts) fires,
 * and `ctx.cronKick` tells it that a schedule's next fire time may now be
 * earlier than its timer (after create, resume and run).
 */
import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import { InvalidInputError, NotFoundError } from '../../core/errors.js';
import { firstFireAfter, nextFireTimes } from '../../core/cron/next-fire.js';
import { parseSchedule } from '../../core/cron/schedule.js';
import { newTaskId } from '../../core/ids.js';
import type { ScheduleDag, ScheduleRecord } from '../../store/schedules.js';
import { resolveParams } from '../../core/dag/params.js';
import { dagRunJson } from '../dag-json.js';
import { DagRunSchema } from '../dag-schemas.js';
import { principalOf, type Principal } from '../auth.js';
import type { AppContext } from '../context.js';
import { ErrorSchema, TaskSchema } from '../schemas.js';
import { toScheduleSpec } from '../schedule-input.js';
import { scheduleJson, scheduleRunJson } from '../schedule-json.js';
import { runScheduleNow } from '../schedule-run-now.js';
import {
  ScheduleCreateBody,
  ScheduleEnvelope,
  ScheduleListQuery,
  ScheduleNameParams,
  ScheduleOwnerQuery,
  ScheduleRunSchema,
  ScheduleSchema,
} from '../schedule-schemas.js';
import { taskJson } from '../serialize.js';

const errors = { 400: ErrorSchema, 401: ErrorSchema, 403: ErrorSchema, 404: ErrorSchema, 409: ErrorSchema };
const people = { auth: ['admin', 'user'] } as const;
const tags = ['schedules'];
/** How many fire times GET /v1/schedules/:name lists, and how many recent runs. */
export const SHOWN_NEXT = 5;
export const SHOWN_RUNS = 20;

/** The owner a per-name route acts for: the caller, or (admins) the one named. */
export function scheduleOwner(p: Principal, owner: string | undefined): string {
  if (owner !== undefined && p.role !== 'admin' && owner !== p.user) throw new InvalidInputError('owner', 'only admins may act on other users\' schedules');
  return owner ?? p.user;
}

/** The owner filter of the list: a user's own always; an admin's choice (undefined: everyone's). */
function listOwner(p: Principal, owner: string | undefined): string | undefined {
  if (owner !== undefined && p.role !== 'admin' && owner !== p.user) throw new InvalidInputError('owner', 'only admins may read other users\' schedules');
  return p.role === 'admin' ? owner : p.user;
}

/**
 * A new DAG schedule's target: the owner's DAG exists and its newest version
 * takes the parameters. InvalidInputError naming dag.name or dag.params.KEY.
 */
async function checkScheduleDag(ctx: Pick<AppContext, 'store'>, owner: string, target: ScheduleDag): Promise<void> {
  const dag = await ctx.store.getDag(owner, target.name);
  if (!dag) throw new InvalidInputError('dag.name', `no DAG named "${target.name}"; apply it first (drover dag apply FILE)`);
  try {
    resolveParams(dag.definition.params, target.params);
  } catch (e) {
    if (e instanceof InvalidInputError) throw new InvalidInputError(`dag.${e.field}`, e.reason);
    throw e;
  }
}

/** The named schedule of that owner, or 404 naming it. */
export async function namedSchedule(ctx: Pick<AppContext, 'store'>, owner: string, name: string): Promise<ScheduleRecord> {
  const s = await ctx.store.getScheduleByName(owner, name);
  if (!s) throw new NotFoundError('schedule', name);
  return s;
}

export function scheduleRoutes(app: FastifyInstance, ctx: AppContext): void {
  const { store, clock } = ctx;
  const kick = () => ctx.cronKick?.();
  const one = { params: ScheduleNameParams, querystring: ScheduleOwnerQuery };

  app.post<{ Body: ScheduleCreateBody }>(
    '/v1/schedules',
    {
      config: people,
      schema: {
        tags,
        summary: 'Create a schedule',
        description:
          'Each fire time of `schedule` in `tz` creates one task from `task` (a POST /v1/tasks body without runAt/delay; ' +
          'its name defaults to the schedule\'s), or, with `dag` instead of `task`, starts one run of the caller\'s DAG of that name ' +
          '(its newest version when the slot fires) with `dag.params`; the DAG must exist and take those parameters. ' +
          'Defaults: tz UTC, overlap allow, catchup latest, maxCatchup 10. ' +
          'nextFireAt is the first fire time after now. 409 when the caller already has a schedule of that name.',
        body: ScheduleCreateBody,
        response: { 201: ScheduleEnvelope, ...errors },
      },
    },
    async (req, reply) => {
      const p = principalOf(req);
      const { spec, schedule } = toScheduleSpec(req.body);
      if (spec.dag) await checkScheduleDag(ctx, p.user, spec.dag);
      const now = clock.now();
      const s = await store.createSchedule(newTaskId(now), p.user, spec, now, firstFireAfter(schedule, now));
      kick();
      return reply.code(201).send({ schedule: scheduleJson(s, p.user) });
    },
  );

  app.get<{ Querystring: ScheduleListQuery }>(
    '/v1/schedules',
    {
      config: people,
      schema: {
        tags,
        summary: 'List schedules, oldest first',
        querystring: ScheduleListQuery,
        response: { 200: Type.Object({ schedules: Type.Array(ScheduleSchema), nextCursor: Type.Union([Type.String(), Type.Null()]) }), ...errors },
      },
    },
    async (req) => {
      const p = principalOf(req);
      const q = req.query;
      const page = await store.listSchedules({ owner: listOwner(p, q.owner), cursor: q.cursor, limit: q.limit ?? 50 });
      return { schedules: page.schedules.map((s) => scheduleJson(s, p.user)), nextCursor: page.nextCursor };
    },
  );

  app.get<{ Params: ScheduleNameParams; Querystring: ScheduleOwnerQuery }>(
    '/v1/schedules/:name',
    {
      config: people,
      schema: {
        tags,
        summary: `A schedule, its next ${SHOWN_NEXT} fire times after now and its ${SHOWN_RUNS} most recent runs (newest slot first)`,
        description: 'next is computed from the expression whether or not the schedule is paused. Runs made with /run (out of schedule) have no slot and are not listed here: GET /v1/tasks?schedule=NAME lists every run.',
        ...one,
        response: { 200: Type.Object({ schedule: ScheduleSchema, next: Type.Array(Type.String()), runs: Type.Array(ScheduleRunSchema) }), ...errors },
      },
    },
    async (req) => {
      const p = principalOf(req);
      const s = await namedSchedule(ctx, scheduleOwner(p, req.query.owner), req.params.name);
      const next = nextFireTimes(parseSchedule({ expr: s.expr, tz: s.tz }), clock.now(), SHOWN_NEXT).map((t) => new Date(t).toISOString());
      const runs = await store.scheduleRuns(s.id, SHOWN_RUNS);
      return { schedule: scheduleJson(s, p.user), next, runs: runs.map(scheduleRunJson) };
    },
  );

  app.post<{ Params: ScheduleNameParams; Querystring: ScheduleOwnerQuery }>(
    '/v1/schedules/:name/pause',
    { config: people, schema: { tags, summary: 'Pause: no slot fires until resumed (pausing a paused schedule changes nothing)', ...one, response: { 200: ScheduleEnvelope, ...errors } } },
    async (req) => {
      const p = principalOf(req);
      const s = await namedSchedule(ctx, scheduleOwner(p, req.query.owner), req.params.name);
      if (s.paused) return { schedule: scheduleJson(s, p.user) };
      const paused = await store.setPaused(s.id, true, clock.now(), null);
      if (!paused) throw new NotFoundError('schedule', req.params.name);
      return { schedule: scheduleJson(paused, p.user) };
    },
  );

  app.post<{ Params: ScheduleNameParams; Querystring: ScheduleOwnerQuery }>(
    '/v1/schedules/:name/resume',
    {
      config: people,
      schema: {
        tags,
        summary: 'Resume: nextFireAt becomes the first fire time after now (resuming an active schedule changes nothing)',
        description: 'Slots that passed while paused are decided by the catch-up policy when the schedule next fires.',
        ...one,
        response: { 200: ScheduleEnvelope, ...errors },
      },
    },
    async (req) => {
      const p = principalOf(req);
      const s = await namedSchedule(ctx, scheduleOwner(p, req.query.owner), req.params.name);
      if (!s.paused) return { schedule: scheduleJson(s, p.user) };
      const now = clock.now();
      const resumed = await store.setPaused(s.id, false, now, firstFireAfter(parseSchedule({ expr: s.expr, tz: s.tz }), now));
      if (!resumed) throw new NotFoundError('schedule', req.params.name);
      kick();
      return { schedule: scheduleJson(resumed, p.user) };
    },
  );

  app.post<{ Params: ScheduleNameParams; Querystring: ScheduleOwnerQuery }>(
    '/v1/schedules/:name/run',
    {
      config: people,
      schema: {
        tags,
        summary: 'Run now, out of schedule: one task from the template, or one run of a DAG schedule\'s DAG (paused or not)',
        description:
          'The task has scheduleId set and scheduledAt null, is owned by the schedule\'s owner, and its submitted event has detail {"schedule": NAME, "manual": true}. ' +
          'It takes no slot: the schedule\'s next fire time and catch-up are unchanged. Until it ends it is an active run for the overlap policies ' +
          '(forbid skips slots meanwhile; replace cancels it when the next slot fires).',
        ...one,
        response: { 201: Type.Object({ task: Type.Optional(TaskSchema), run: Type.Optional(DagRunSchema) }, { description: 'task for a task schedule; run (a DAG run) for a DAG schedule' }), ...errors },
      },
    },
    async (req, reply) => {
      const p = principalOf(req);
      const s = await namedSchedule(ctx, scheduleOwner(p, req.query.owner), req.params.name);
      const made = await runScheduleNow(store, s, `user:${p.user}`, clock.now());
      if (store.capabilities.groupCommit) ctx.scheduler.kick();
      kick();
      return reply.code(201).send('task' in made ? { task: taskJson(made.task, p.user) } : { run: dagRunJson(made.run, p.user) });
    },
  );

  app.delete<{ Params: ScheduleNameParams; Querystring: ScheduleOwnerQuery }>(
    '/v1/schedules/:name',
    {
      config: people,
      schema: {
        tags,
        summary: 'Delete a schedule and its run records; its tasks stay (with their scheduleId)',
        ...one,
        response: { 200: Type.Object({ deleted: Type.Boolean(), schedule: ScheduleSchema }), ...errors },
      },
    },
    async (req) => {
      const p = principalOf(req);
      const s = await namedSchedule(ctx, scheduleOwner(p, req.query.owner), req.params.name);
      if (!(await store.deleteSchedule(s.id))) throw new NotFoundError('schedule', req.params.name);
      return { deleted: true, schedule: scheduleJson(s, p.user) };
    },
  );
}
