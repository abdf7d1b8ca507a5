/** Task routes (docs/api.md, "Tasks"). Users see and act on their own tasks; admins on all. */
import type { ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import { ConflictError, InvalidInputError, NotFoundError } from '../../core/errors.js';
import { newTaskId } from '../../core/ids.js';
import { isTerminal } from '../../core/task-state.js';
import type { Task } from '../../core/task.js';
import { principalOf, type Principal } from '../auth.js';
import type { AppContext } from '../context.js';
import { ListQuery, LogsQuery, SubmitBody, SubmitHeaders, SubmitPreferHeaders, TaskIdParams, TaskSchema, TaskSummarySchema, AttemptSchema, EventSchema, ErrorSchema } from '../schemas.js';
import { attemptJson, eventJson, taskJson, taskSummaryJson } from '../serialize.js';
import { requestHash, toRunAfter, toTaskSpec } from '../task-input.js';
import { specOf } from '../rerun.js';
import { returnPreference } from '../prefer.js';
import { createAndDispatch } from '../submit-dispatch.js';
import { namedSchedule } from './schedules.js';

const TaskEnvelope = Type.Object({ task: TaskSchema });
const errors = { 400: ErrorSchema, 401: ErrorSchema, 403: ErrorSchema, 404: ErrorSchema, 409: ErrorSchema };
/** Task routes are for people: admins (all tasks) and users (their own). Never worker tokens. */
const people = { auth: ['admin', 'user'] } as const;

/**
 * Log chunks read per store query. A chunk is at most LOG_LIMITS.maxChunkBytes
 * (core/protocol.ts, 64 KiB), so one page holds at most 2 MiB, the most a follower keeps in
 * memory besides the socket's own buffer (see the logs route).
 */
export const LOG_PAGE_CHUNKS = 32;

/**
 * The owner filter of a read: a user's own tasks always; an admin's choice
 * (undefined: everyone's). A user naming someone else is told so (400 owner)
 * rather than silently shown their own.
 */
export function ownerScope(p: Principal, owner: string | undefined): string | undefined {
  if (owner !== undefined && p.role !== 'admin' && owner !== p.user) throw new InvalidInputError('owner', 'only admins may read other users\' tasks');
  return p.role === 'admin' ? owner : p.user;
}

export function ownedTask(task: Task | null, id: string, p: Principal): Task {
  if (!task || (p.role !== 'admin' && task.owner !== p.user)) throw new NotFoundError('task', id);
  return task;
}

export function taskRoutes(app: FastifyInstance, ctx: AppContext): void {
  const { store, clock } = ctx;
  const user = principalOf;

  app.post<{ Body: SubmitBody; Headers: SubmitPreferHeaders }>(
    '/v1/tasks',
    {
      config: people,
      schema: {
        tags: ['tasks'],
        summary: 'Submit a task',
        description:
          'With runAt or delay the task is created `ready` and released to `waiting` when that time comes (a past runAt runs now). ' +
          'With an Idempotency-Key header the submit can be repeated safely: 201 when this request created the task, ' +
          '200 with the same task when the key (per user) was seen before with the same body, 409 when it was seen with a different body. ' +
          'With Prefer: return=minimal the task is answered as {id, state} only.',
        headers: SubmitPreferHeaders,
        body: SubmitBody,
        response: {
          201: { description: 'Created (with Prefer: return=minimal the task is only {id, state})', ...TaskEnvelope },
          200: { description: 'A repeat of an earlier submit with the same Idempotency-Key and body: the task it created (with Prefer: return=minimal, {id, state})', ...TaskEnvelope },
          ...errors,
        },
      },
    },
    async (req, reply) => {
      const p = user(req);
      const spec = toTaskSpec(req.body);
      // Checked before anything is stored: a bad Prefer changes nothing.
      const preference = returnPreference(req.headers.prefer);
      const now = clock.now();
      const runAfter = toRunAfter(req.body, now);
      const key = req.headers['idempotency-key'];
      const idem = key !== undefined ? { key, requestHash: requestHash(req.body) } : undefined;
      let res;
      try {
        // Claimed and assigned in the submit's own write when a worker is free and nothing waits; else the store's wake dispatches it.
        res = await createAndDispatch(store, ctx.scheduler, { id: newTaskId(now), owner: p.user, spec, actor: `user:${p.user}`, now, idem, opts: { runAfter } });
        // A task to run later: this server's timer releases it when due (every server's sweep also would, within a second).
        if (res.task.runAfter !== null && res.task.state === 'ready') ctx.scheduler.wakeAtTime(res.task.runAfter);
      } catch (err) {
        // With a key, the store's only conflict is that key bound to another body: say so in the API's words.
        if (idem && err instanceof ConflictError) {
          throw new ConflictError(`Idempotency-Key "${idem.key}" was already used for a different request body; use a new key for a new task`);
        }
        throw err;
      }
      reply.code(res.created ? 201 : 200);
      if (preference !== null) reply.header('preference-applied', `return=${preference}`);
      if (preference === 'minimal') {
        // Not the route's response schema (a whole task): serialized as it is. The wire type is the client's MinimalTask.
        return reply.serializer(JSON.stringify).send({ task: { id: res.task.id, state: res.task.state } });
      }
      return reply.send({ task: taskJson(res.task, p.user) });
    },
  );

  app.get<{ Querystring: ListQuery }>(
    '/v1/tasks',
    {
      config: people,
      schema: {
        tags: ['tasks'],
        summary: 'List tasks, newest first (created, or with order=ended the newest end), as summary rows (no command, script, args or env)',
        querystring: ListQuery,
        response: { 200: Type.Object({ tasks: Type.Array(TaskSummarySchema), nextCursor: Type.Union([Type.String(), Type.Null()]) }), ...errors },
      },
    },
    async (req) => {
      const p = user(req);
      const q = req.query;
      const owner = ownerScope(p, q.owner);
      // A schedule name is unique per owner: the named owner's (admins), else the caller's own.
      const schedule = q.schedule === undefined ? undefined : await namedSchedule(ctx, owner ?? p.user, q.schedule);
      const page = await store.listTaskSummaries({
        state: q.state,
        namePrefix: q.name,
        owner,
        scheduleId: schedule?.id,
        createdAfter: q.createdAfter ? Date.parse(q.createdAfter) : undefined,
        createdBefore: q.createdBefore ? Date.parse(q.createdBefore) : undefined,
        idPrefix: q.id?.toUpperCase(),
        cursor: q.cursor,
        order: q.order,
        limit: q.limit ?? 50,
      });
      return { tasks: page.tasks.map(taskSummaryJson), nextCursor: page.nextCursor };
    },
  );

  app.get<{ Params: TaskIdParams }>(
    '/v1/tasks/:id',
    { config: people, schema: { tags: ['tasks'], summary: 'A task with its attempts and events', params: TaskIdParams, response: { 200: Type.Object({ task: TaskSchema, attempts: Type.Array(AttemptSchema), events: Type.Array(EventSchema) }), ...errors } } },
    async (req) => {
      const p = user(req);
      const task = ownedTask(await store.getTask(req.params.id), req.params.id, p);
      const [attempts, events] = await Promise.all([store.listAttempts(task.id), store.listEvents(task.id)]);
      return { task: taskJson(task, p.user), attempts: attempts.map(attemptJson), events: events.map(eventJson) };
    },
  );

  app.post<{ Params: TaskIdParams }>(
    '/v1/tasks/:id/cancel',
    { config: people, schema: { tags: ['tasks'], summary: 'Cancel a task', params: TaskIdParams, response: { 200: TaskEnvelope, ...errors } } },
    async (req) => {
      const p = user(req);
      ownedTask(await store.getTask(req.params.id), req.params.id, p);
      // A running attempt is stopped through the store's cancel signal, by whichever server holds its worker.
      const res = await store.cancelTask(req.params.id, `user:${p.user}`, clock.now());
      return { task: taskJson(res.task, p.user) };
    },
  );

  app.post<{ Params: TaskIdParams }>(
    '/v1/tasks/:id/retry',
    { config: people, schema: { tags: ['tasks'], summary: 'Run a failed or cancelled task again with a fresh retry budget', params: TaskIdParams, response: { 200: TaskEnvelope, ...errors } } },
    async (req) => {
      const p = user(req);
      ownedTask(await store.getTask(req.params.id), req.params.id, p);
      const task = await store.retryTask(req.params.id, `user:${p.user}`, clock.now());
      return { task: taskJson(task, p.user) };
    },
  );

  app.post<{ Params: TaskIdParams; Headers: SubmitHeaders }>(
    '/v1/tasks/:id/rerun',
    {
      config: people,
      schema: {
        tags: ['tasks'],
        summary: 'Run a fresh copy of a task (any state, succeeded included)',
        description:
          'Creates a new task with the same spec (command or script, env, timeout, retry policy, priority, labels, requires, cwd), a new id, ' +
          'owned by the original task\'s owner, and runs it now (state waiting, even if the original was submitted to run later). ' +
          'Its submitted event has detail {"rerunOf": "<id>"}. Owner or admin only (anyone else gets 404, as for retry). ' +
          'An Idempotency-Key works as for submit: 201 when created, 200 with the same new task on a repeat.',
        params: TaskIdParams,
        headers: SubmitHeaders,
        response: {
          201: { description: 'Created', ...TaskEnvelope },
          200: { description: 'A repeat with the same Idempotency-Key: the task it created', ...TaskEnvelope },
          ...errors,
        },
      },
    },
    async (req, reply) => {
      const p = user(req);
      const original = ownedTask(await store.getTask(req.params.id), req.params.id, p);
      const key = req.headers['idempotency-key'];
      // The key is bound to "a rerun of this task": the same key for another task's rerun is a 409.
      const idem = key !== undefined ? { key, requestHash: requestHash({ rerunOf: original.id }) } : undefined;
      const now = clock.now();
      let res;
      try {
        res = await createAndDispatch(store, ctx.scheduler, { id: newTaskId(now), owner: original.owner, spec: specOf(original), actor: `user:${p.user}`, now, idem, opts: { detail: { rerunOf: original.id } } });
      } catch (err) {
        if (idem && err instanceof ConflictError) {
          throw new ConflictError(`Idempotency-Key "${idem.key}" was already used for a different request; use a new key for a new rerun`);
        }
        throw err;
      }
      return reply.code(res.created ? 201 : 200).send({ task: taskJson(res.task, p.user) });
    },
  );

  app.get<{ Params: TaskIdParams; Querystring: LogsQuery }>(
    '/v1/tasks/:id/logs',
    {
      config: people,
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
      // Written by hand rather than through reply.send(stream): the status line
      // goes out at once (a follower of a task with no output yet knows the
      // stream is open), and every write waits for 'drain' when the socket is
      // full, so a slow client holds at most one page of the log here.
      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' });
      res.flushHeaders();
      if (req.method === 'HEAD') return void res.end();
      const abort = new AbortController();
      // Revoking the token (or signing out) ends the stream at once (session-registry.ts). The
      // connection is destroyed rather than the body ended, so the client
      // cannot take it for the normal end of a finished task's log.
      const unregister = ctx.sessions.registerPrincipal(p, () => {
        abort.abort();
        res.destroy();
      });
      res.once('close', () => abort.abort());
      try {
        for await (const chunk of logStream(ctx, task.id, req.query.attempt, follow, abort.signal)) {
          if (!res.write(chunk)) await drained(res);
          if (abort.signal.aborted) break;
        }
        if (!abort.signal.aborted) res.end();
      } catch (err) {
        // Headers are out: all that can be said now is that the stream broke.
        ctx.log.warn({ err, taskId: task.id }, 'log stream failed; closing it');
        res.destroy();
      } finally {
        unregister();
      }
    },
  );
}

/**
 * Yields the task's log bytes; with `follow`, waits for more until the task
 * has ended for good. Memory: one page (LOG_PAGE_CHUNKS chunks) at a time; the
 * next page is read only when the consumer has taken this one.
 */
async function* logStream(ctx: AppContext, taskId: string, attempt: number | undefined, follow: boolean, signal: AbortSignal): AsyncGenerator<Buffer> {
  const PAGE = LOG_PAGE_CHUNKS;
  let after = 0;
  let shownAttempt = 0;
  let last = false;
  for (;;) {
    if (signal.aborted) return;
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

/** Resolves when `res` can take more, or is gone. */
function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/** Terminal, and no attempt still running (a cancelled task's process may still be stopping). */
export async function finished(ctx: Pick<AppContext, 'store'>, taskId: string): Promise<boolean> {
  const task = await ctx.store.getTask(taskId);
  if (!task) return true;
  if (!isTerminal(task.state)) return false;
  if (task.currentAttemptId === null) return true;
  const a = await ctx.store.getAttempt(task.currentAttemptId);
  return !a || a.state !== 'running';
}
