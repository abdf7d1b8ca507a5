/** Worker listing (admin) and the agents' WebSocket endpoint (role worker only). */
import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import { WORKER_CONNECT_PATH } from '../../core/protocol.js';
import { NotFoundError } from '../../core/errors.js';
import { principalOf } from '../auth.js';
import type { AppContext } from '../context.js';
import { ErrorSchema } from '../schemas.js';
import { WorkerSession } from '../worker-session.js';

const WorkerSchema = Type.Object({
  id: Type.String(),
  hostname: Type.String(),
  slots: Type.Integer(),
  labels: Type.Record(Type.String(), Type.String()),
  state: Type.String(),
  connectedAt: Type.String(),
  lastSeenAt: Type.String(),
  running: Type.Integer(),
});

export function workerRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.get('/v1/workers', { config: { auth: ['admin'] }, schema: { tags: ['workers'], summary: 'List workers', response: { 200: Type.Object({ workers: Type.Array(WorkerSchema) }), 401: ErrorSchema, 403: ErrorSchema } } }, async () => {
    // Connected here, or (several servers) connected elsewhere and heard from within the lease.
    const live = new Map(ctx.scheduler.workers().map((l) => [l.workerId, l.runningCount]));
    const draining = new Set(ctx.scheduler.workers().filter((l) => l.draining).map((l) => l.workerId));
    const rows = await ctx.store.listWorkers();
    const now = ctx.clock.now();
    const connected = (w: (typeof rows)[number]) => live.has(w.id) || (w.state === 'connected' && now - w.lastSeenAt < ctx.scheduler.opts.leaseMs);
    return {
      workers: rows.map((w) => ({
        ...w,
        state: draining.has(w.id) ? 'draining' : connected(w) ? 'connected' : 'disconnected',
        connectedAt: new Date(w.connectedAt).toISOString(),
        lastSeenAt: new Date(w.lastSeenAt).toISOString(),
        running: live.get(w.id) ?? 0,
      })),
    };
  });

  app.post<{ Params: { id: string } }>(
    '/v1/workers/:id/drain',
    {
      config: { auth: ['admin'] },
      schema: {
        tags: ['workers'],
        summary: 'Drain a worker: no new work; running attempts finish within its drain timeout, the rest run elsewhere',
        params: Type.Object({ id: Type.String({ pattern: '^[A-Za-z0-9._:-]{1,100}$' }) }, { additionalProperties: false }),
        response: { 200: Type.Object({ workerId: Type.String(), draining: Type.Boolean() }), 400: ErrorSchema, 401: ErrorSchema, 403: ErrorSchema, 404: ErrorSchema },
      },
    },
    async (req) => {
      const p = principalOf(req);
      // Through the store, so the server holding the worker's connection (any of them) delivers it.
      if (!(await ctx.store.requestDrain(req.params.id, `drained by ${p.user}`))) throw new NotFoundError('worker', req.params.id);
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
