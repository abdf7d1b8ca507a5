/**
 * DAG routes (docs/api.md, "DAGs"): definitions under /v1/dags (per owner and
 * name, like schedules), runs under /v1/dag-runs (by id). Admins and users,
 * never workers; a user sees and acts on only their own DAGs and runs
 * (anyone else's is 404); an admin on anyone's, naming the owner with
 * `?owner=` on the per-name routes (default the admin's own).
 *
 * Nothing here decides a run's progress: the store writes it in the
 * transaction that ends a step (store/dags.ts). Starting, retrying or
 * cancelling a run wakes the scheduler (SQLite shares its commit; PostgreSQL
 * servers hear the store's signals).
 */
import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import { InvalidInputError, NotFoundError } from '../../core/errors.js';
import { resolveParams } from '../../core/dag/params.js';
import { newTaskId } from '../../core/ids.js';
import type { DagRecord, DagRunRecord } from '../../store/dags.js';
import { principalOf, type Principal } from '../auth.js';
import type { AppContext } from '../context.js';
import { dagHash, toDagDefinition } from '../dag-input.js';
import { dagJson, dagRunDetailJson, dagRunJson, dagSummaryJson } from '../dag-json.js';
import {
  DagBody,
  DagEnvelope,
  DagGetQuery,
  DagListQuery,
  DagNameParams,
  DagOwnerQuery,
  DagRunBody,
  DagRunDetail,
  DagRunEnvelope,
  DagRunIdParams,
  DagRunListItemSchema,
  DagRunListQuery,
  DagSummarySchema,
} from '../dag-schemas.js';
import { ErrorSchema } from '../schemas.js';

const errors = { 400: ErrorSchema, 401: ErrorSchema, 403: ErrorSchema, 404: ErrorSchema, 409: ErrorSchema };
const people = { auth: ['admin', 'user'] } as const;
const tags = ['dags'];
/** A 2,000-step DAG with scripts fits; the default body limit would refuse large graphs. */
export const DAG_BODY_LIMIT = 8 * 1024 * 1024;

/** The owner a per-name route acts for: the caller, or (admins) the one named. */
function dagOwner(p: Principal, owner: string | undefined): string {
  if (owner !== undefined && p.role !== 'admin' && owner !== p.user) throw new InvalidInputError('owner', 'only admins may act on other users\' DAGs');
  return owner ?? p.user;
}

/** The owner filter of a list: a user's own always; an admin's choice (undefined: everyone's). */
function listOwner(p: Principal, owner: string | undefined): string | undefined {
  if (owner !== undefined && p.role !== 'admin' && owner !== p.user) throw new InvalidInputError('owner', 'only admins may read other users\' DAGs');
  return p.role === 'admin' ? owner : p.user;
}

export function dagRoutes(app: FastifyInstance, ctx: AppContext): void {
  const { store, clock } = ctx;
  const wake = () => {
    if (store.capabilities.groupCommit) ctx.scheduler.kick();
  };

  async function namedDag(owner: string, name: string, version?: number): Promise<DagRecord> {
    const d = await store.getDag(owner, name, version);
    if (!d) throw new NotFoundError('DAG', version === undefined ? name : `${name} version ${version}`);
    return d;
  }

  /** The run if the caller may see it (its owner, or an admin), else 404 as if it did not exist. */
  async function visibleRun(p: Principal, id: string): Promise<DagRunRecord> {
    const r = await store.getDagRun(id);
    if (!r || (p.role !== 'admin' && r.owner !== p.user)) throw new NotFoundError('DAG run', id);
    return r;
  }

  app.post<{ Body: DagBody }>(
    '/v1/dags',
    {
      config: people,
      bodyLimit: DAG_BODY_LIMIT,
      schema: {
        tags,
        summary: 'Apply a DAG definition: stored as the next version of the caller\'s DAG of that name, or unchanged',
        description:
          'Validated as a whole before anything is stored: each step as a POST /v1/tasks body, then the graph (no cycle, every dependency a step, ' +
          'unique step names, at least one step, something to run). An invalid definition changes nothing (400 naming the field, e.g. steps[3].depends_on[0]). ' +
          '201 with created: true when a new version was stored; 200 with created: false when the newest version is the same definition.',
        body: DagBody,
        response: { 200: DagEnvelope, 201: DagEnvelope, ...errors },
      },
    },
    async (req, reply) => {
      const p = principalOf(req);
      const def = toDagDefinition(req.body);
      const now = clock.now();
      const { dag, created } = await store.applyDag(newTaskId(now), p.user, def, dagHash(def), now);
      return reply.code(created ? 201 : 200).send({ dag: dagJson(dag, p.user), created });
    },
  );

  app.get<{ Querystring: DagListQuery }>(
    '/v1/dags',
    {
      config: people,
      schema: {
        tags,
        summary: 'List DAGs (their newest versions), oldest first',
        querystring: DagListQuery,
        response: { 200: Type.Object({ dags: Type.Array(DagSummarySchema), nextCursor: Type.Union([Type.String(), Type.Null()]) }), ...errors },
      },
    },
    async (req) => {
      const p = principalOf(req);
      const page = await store.listDags({ owner: listOwner(p, req.query.owner), cursor: req.query.cursor, limit: req.query.limit ?? 50 });
      return { dags: page.dags.map(dagSummaryJson), nextCursor: page.nextCursor };
    },
  );

  app.get<{ Params: DagNameParams; Querystring: DagGetQuery }>(
    '/v1/dags/:name',
    { config: people, schema: { tags, summary: 'A DAG\'s definition: its newest version, or ?version=N', params: DagNameParams, querystring: DagGetQuery, response: { 200: DagEnvelope, ...errors } } },
    async (req) => {
      const p = principalOf(req);
      const d = await namedDag(dagOwner(p, req.query.owner), req.params.name, req.query.version);
      return { dag: dagJson(d, p.user) };
    },
  );

  app.post<{ Params: DagNameParams; Querystring: DagOwnerQuery; Body: DagRunBody }>(
    '/v1/dags/:name/runs',
    {
      config: people,
      schema: {
        tags,
        summary: 'Start a run of the DAG\'s newest version',
        description:
          'Every step becomes a task at once, in one transaction: those without dependencies waiting, the others ready until their dependencies end. ' +
          'params: run parameters (every step sees DROVER_PARAM_<KEY>); a DAG that declares params takes only those, with its defaults for the rest. ' +
          'The run belongs to the DAG\'s owner.',
        params: DagNameParams,
        querystring: DagOwnerQuery,
        body: Type.Optional(DagRunBody),
        response: { 201: DagRunEnvelope, ...errors },
      },
      // The body is optional (docs/api.md), but a schema validates what there is, and no body is not an
      // object: none is read as {} (no params), before validation.
      preValidation: (req, _reply, done) => {
        req.body ??= {};
        done();
      },
    },
    async (req, reply) => {
      const p = principalOf(req);
      const dag = await namedDag(dagOwner(p, req.query.owner), req.params.name);
      const params = resolveParams(dag.definition.params, req.body?.params ?? {});
      const now = clock.now();
      const run = await store.startDagRun({ runId: newTaskId(now), dag, params, taskIds: dag.definition.steps.map(() => newTaskId(now)), actor: `user:${p.user}`, now });
      wake();
      return reply.code(201).send({ run: dagRunJson(run, p.user) });
    },
  );

  app.get<{ Querystring: DagRunListQuery }>(
    '/v1/dag-runs',
    {
      config: people,
      schema: {
        tags,
        summary: 'List DAG runs, newest first, each with its steps counted by state; ?dag=NAME for one DAG\'s, ?id=PREFIX for the runs whose id starts with it',
        querystring: DagRunListQuery,
        response: { 200: Type.Object({ runs: Type.Array(DagRunListItemSchema), nextCursor: Type.Union([Type.String(), Type.Null()]) }), ...errors },
      },
    },
    async (req) => {
      const p = principalOf(req);
      const q = req.query;
      let dagId: string | undefined;
      let owner = listOwner(p, q.owner);
      if (q.dag !== undefined) {
        // The DAG was found under an owner the caller may read, and every run of a DAG is its owner's:
        // the DAG alone selects them (with the owner too, PostgreSQL ANDed both indexes and sorted).
        const d = await namedDag(dagOwner(p, q.owner), q.dag);
        dagId = d.id;
        owner = undefined;
      }
      const page = await store.listDagRuns({ owner, dagId, idPrefix: q.id?.toUpperCase(), cursor: q.cursor, limit: q.limit ?? 50 });
      const counts = await store.dagRunStepCounts(page.runs.map((r) => r.id));
      return { runs: page.runs.map((r) => ({ ...dagRunJson(r, p.user), counts: counts.get(r.id) ?? {} })), nextCursor: page.nextCursor };
    },
  );

  app.get<{ Params: DagRunIdParams }>(
    '/v1/dag-runs/:id',
    {
      config: people,
      schema: {
        tags,
        summary: 'A DAG run: each step\'s state, task, timing and outputs, the counts by state, and the critical path',
        params: DagRunIdParams,
        response: { 200: DagRunDetail, ...errors },
      },
    },
    async (req) => {
      const p = principalOf(req);
      const run = await visibleRun(p, req.params.id);
      const [dag, steps] = await Promise.all([store.getDagVersion(run.dagId, run.version), store.dagRunSteps(run.id)]);
      if (!dag) throw new NotFoundError('DAG version of run', run.id);
      return dagRunDetailJson(run, dag.definition, steps, p.user, clock.now());
    },
  );

  app.post<{ Params: DagRunIdParams }>(
    '/v1/dag-runs/:id/cancel',
    {
      config: people,
      schema: {
        tags,
        summary: 'Cancel a running run: its running steps are stopped, its pending ones cancelled; 409 once it has ended',
        params: DagRunIdParams,
        response: { 200: DagRunEnvelope, ...errors },
      },
    },
    async (req) => {
      const p = principalOf(req);
      await visibleRun(p, req.params.id);
      const r = await store.cancelDagRun(req.params.id, `user:${p.user}`, clock.now());
      if (!r) throw new NotFoundError('DAG run', req.params.id);
      return { run: dagRunJson(r.run, p.user) };
    },
  );

  app.post<{ Params: DagRunIdParams }>(
    '/v1/dag-runs/:id/retry',
    {
      config: people,
      schema: {
        tags,
        summary: 'Retry an ended run: its failed and cancelled steps and those skipped because of them run again; succeeded steps are kept',
        description: '409 while the run is running, when nothing failed, or while a cancelled step\'s attempt is still being stopped.',
        params: DagRunIdParams,
        response: { 200: DagRunEnvelope, ...errors },
      },
    },
    async (req) => {
      const p = principalOf(req);
      await visibleRun(p, req.params.id);
      const r = await store.retryDagRun(req.params.id, `user:${p.user}`, clock.now());
      if (!r) throw new NotFoundError('DAG run', req.params.id);
      wake();
      return { run: dagRunJson(r, p.user) };
    },
  );
}
