/** Task routes (docs/api.md, "Tasks"). Users see and act on their own tasks; admins on all. */
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import { InvalidInputError, NotFoundError } from '../../core/errors.js';
import { newTaskId } from '../../core/ids.js';
import { isTerminal } from '../../core/task-state.js';
import type { Task } from '../../core/task.js';
import { requireRole, type Principal } from '../auth.js';
import type { AppContext } from '../context.js';
import { ListQuery, LogsQuery, SubmitBody, TaskIdParams, TaskSchema, AttemptSchema, EventSchema, ErrorSchema } from '../schemas.js';
import { attemptJson, eventJson, taskJson } from '../serialize.js';
import { toTaskSpec } from '../task-input.js';

const TaskEnvelope = Type.Object({ task: TaskSchema });
const errors = { 400: ErrorSchema, 401: ErrorSchema, 403: ErrorSchema, 404: ErrorSchema, 409: ErrorSchema };

function ownedTask(task: Task | null, id: string, p: Principal): Task {
  if (!task || (p.role !== 'admin' && task.owner !== p.user)) throw new NotFoundError('task', id);
  return task;
}

export function taskRoutes(app: FastifyInstance, ctx: AppContext): void {
  const { store, clock } = ctx;
  const user = (req: FastifyRequest) => requireRole(req, 'admin', 'user');

  app.post<{ Body: SubmitBody }>(
    '/v1/tasks',
    { schema: { tags: ['tasks'], summary: 'Submit a task', body: SubmitBody, response: { 201: TaskEnvelope, ...errors } } },
    async (req, reply) => {
      const p = user(req);
      const spec = toTaskSpec(req.body);
      const now = clock.now();
      // The store signals wake: this server's scheduler (and, on PostgreSQL, every server's) dispatches.
      const task = await store.createTask(newTaskId(now), p.user, spec, `user:${p.user}`, now);
      return reply.code(201).send({ task: taskJson(task) });
    },
  );

  app.get<{ Querystring: ListQuery }>(
    '/v1/tasks',
    { schema: { tags: ['tasks'], summary: 'List tasks, newest first', querystring: ListQuery, response: { 200: Type.Object({ tasks: Type.Array(TaskSchema), nextCursor: Type.Union([Type.String(), Type.Null()]) }), ...errors } } },
    async (req) => {
      const p = user(req);
      const q = req.query;
      if (q.owner !== undefined && p.role !== 'admin' && q.owner !== p.user) throw new InvalidInputError('owner', 'only admins may list other users\' tasks');
      const page = await store.listTasks({
        state: q.state,
        namePrefix: q.name,
        owner: p.role === 'admin' ? q.owner : p.user,
        createdAfter: q.createdAfter ? Date.parse(q.createdAfter) : undefined,
        createdBefore: q.createdBefore ? Date.parse(q.createdBefore) : undefined,
        cursor: q.cursor,
        limit: q.limit ?? 50,
      });
      return { tasks: page.tasks.map(taskJson), nextCursor: page.nextCursor };
    },
  );

  app.get<{ Params: TaskIdParams }>(
    '/v1/tasks/:id',
    { schema: { tags: ['tasks'], summary: 'A task with its attempts and events', params: TaskIdParams, response: { 200: Type.Object({ task: TaskSchema, attempts: Type.Array(AttemptSchema), events: Type.Array(EventSchema) }), ...errors } } },
    async (req) => {
      const p = user(req);
      const task = ownedTask(await store.getTask(req.params.id), req.params.id, p);
      const [attempts, events] = await Promise.all([store.listAttempts(task.id), store.listEvents(task.id)]);
      return { task: taskJson(task), attempts: attempts.map(attemptJson), events: events.map(eventJson) };
    },
  );

  app.post<{ Params: TaskIdParams }>(
    '/v1/tasks/:id/cancel',
    { schema: { tags: ['tasks'], summary: 'Cancel a task', params: TaskIdParams, response: { 200: TaskEnvelope, ...errors } } },
    async (req) => {
      const p = user(req);
      ownedTask(await store.getTask(req.params.id), req.params.id, p);
      // A running attempt is stopped through the store's cancel signal, by whichever server holds its worker.
      const res = await store.cancelTask(req.params.id, `user:${p.user}`, clock.now());
      return { task: taskJson(res.task) };
    },
  );

  app.post<{ Params: TaskIdParams }>(
    '/v1/tasks/:id/retry',
    { schema: { tags: ['tasks'], summary: 'Run a failed or cancelled task again with a fresh retry budget', params: TaskIdParams, response: { 200: TaskEnvelope, ...errors } } },
    async (req) => {
      const p = user(req);
      ownedTask(await store.getTask(req.params.id), req.params.id, p);
      const task = await store.retryTask(req.params.id, `user:${p.user}`, clock.now());
      return { task: taskJson(task) };
    },
  );

  app.get<{ Params: TaskIdParams; Querystring: LogsQuery }>(
    '/v1/tasks/:id/logs',
    {
      schema: {
        tags: ['tasks'],
        summary: 'The task\'s output (stdout and stderr in the order read); follow=1 streams until the task ends',
        params: TaskIdParams,
        querystring: LogsQuery,
        response: { 200: { description: 'log bytes', content: { 'text/plain': { schema: { type: 'string' } } } }, ...errors },
      },
    },
    async (req, reply) => {
      const p = user(req);
      const task = ownedTask(await store.getTask(req.params.id), req.params.id, p);
      const follow = req.query.follow === '1' || req.query.follow === 'true';
      const abort = new AbortController();
      req.raw.on('close', () => abort.abort());
      reply.header('content-type', 'text/plain; charset=utf-8').header('cache-control', 'no-store');
      return reply.send(Readable.from(logStream(ctx, task.id, req.query.attempt, follow, abort.signal)));
    },
  );
}

/** Yields the task's log bytes; with `follow`, waits for more until the task has ended for good. */
async function* logStream(ctx: AppContext, taskId: string, attempt: number | undefined, follow: boolean, signal: AbortSignal): AsyncGenerator<Buffer> {
  const PAGE = 256;
  let after = 0;
  let shownAttempt = 0;
  let last = false;
  for (;;) {
    const chunks = await ctx.store.readLogs(taskId, after, PAGE, attempt);
    for (const c of chunks) {
      if (attempt === undefined && c.attempt !== shownAttempt) {
        if (c.attempt >= 2) yield Buffer.from(`--- drover: attempt ${c.attempt} ---\n`);
        shownAttempt = c.attempt;
      }
      yield c.data;
      after = c.id;
    }
    if (chunks.length === PAGE) continue;
    if (last || !follow || signal.aborted) return;
    if (await finished(ctx, taskId)) {
      // An attempt's last chunks are stored before the exit that ended the task: read to the end once more.
      last = true;
      continue;
    }
    await ctx.bus.wait(taskId, 1000, signal);
  }
}

/** Terminal, and no attempt still running (a cancelled task's process may still be stopping). */
async function finished(ctx: AppContext, taskId: string): Promise<boolean> {
  const task = await ctx.store.getTask(taskId);
  if (!task) return true;
  if (!isTerminal(task.state)) return false;
  if (task.currentAttemptId === null) return true;
  const a = await ctx.store.getAttempt(task.currentAttemptId);
  return !a || a.state !== 'running';
}
