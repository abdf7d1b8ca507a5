/** Worker listing (admins and users), drain (admin) and the agents' WebSocket endpoint (role worker only). */
import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import { WORKER_CONNECT_PATH } from '../../core/protocol.js';
import { NotFoundError } from '../../core/errors.js';
import { principalOf } from '../auth.js';
import type { AppContext } from '../context.js';
import { WORKER_ID_PATTERN } from '../pattern-rules.js';
import { ErrorSchema, WorkerSchema } from '../schemas.js';
import { workerViews, type WorkerViewDeps } from '../worker-views.js';
import { WorkerSession } from '../worker-session.js';

/** The view deps of this server (worker-views.ts): the store, its own live links, its clock and lease. */
export function workerViewDeps(ctx: AppContext): WorkerViewDeps {
  return { store: ctx.store, links: () => ctx.scheduler.workers(), now: () => ctx.clock.now(), leaseMs: ctx.scheduler.opts.leaseMs };
}

export function workerRoutes(app: FastifyInstance, ctx: AppContext): void {
  const deps = workerViewDeps(ctx);
  app.get(
    '/v1/workers',
    {
      config: { auth: ['admin', 'user'] },
      schema: {
        tags: ['workers'],
        summary: 'List workers with their state and running attempts (a user sees only their own tasks among them; slotsUsed counts all)',
        response: { 200: Type.Object({ workers: Type.Array(WorkerSchema) }), 401: ErrorSchema, 403: ErrorSchema },
      },
    },
    async (req) => {
      const p = principalOf(req);
      return { workers: await workerViews(deps, p.role === 'admin' ? null : p.user) };
    },
  );

  app.post<{ Params: { id: string } }>(
    '/v1/workers/:id/drain',
    {
      config: { auth: ['admin'] },
      schema: {
        tags: ['workers'],
        summary: 'Drain a worker: no new work; running attempts finish within its drain timeout, the rest run elsewhere',
        params: Type.Object({ id: Type.String({ pattern: WORKER_ID_PATTERN }) }, { additionalProperties: false }),
        response: { 200: Type.Object({ workerId: Type.String(), draining: Type.Boolean() }), 400: ErrorSchema, 401: ErrorSchema, 403: ErrorSchema, 404: ErrorSchema },
      },
    },
    async (req) => {
      const p = principalOf(req);
      // Through the store, so the server holding the worker's connection (any of them) delivers it.
      if (!(await ctx.store.requestDrain(req.params.id, `drained by ${p.user}`, ctx.clock.now()))) throw new NotFoundError('worker', req.params.id);
      return { workerId: req.params.id, draining: true };
    },
  );

  app.get(WORKER_CONNECT_PATH, { websocket: true, config: { auth: ['worker'] }, schema: { hide: true } }, (socket, req) => {
    // The auth hook admitted only worker tokens to this route before the
    // upgrade (auth.ts). Checked again here, where a mistake would hand other
    // users' tasks (and their env) to the caller: defence in depth (and the
    // session checks it a third time).
    if (req.principal?.role !== 'worker') {
      ctx.log.warn({ remote: req.ip, role: req.principal?.role ?? null }, 'worker socket without a worker token; closing it');
      socket.close(1008, 'only worker tokens may connect as a worker');
      return;
    }
    // The session registers itself in ctx.sessions under its token, so a revoke closes it.
    new WorkerSession(socket, req.ip, req.principal, ctx);
  });
}
