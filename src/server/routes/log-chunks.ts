/**
 * A task's log in pages of chunks, for viewers that must not load a whole
 * log (docs/api.md, "Log chunks"):
 *   neither before nor after  the last `limit` chunks: a log opens at its end;
 *   before=N                  the `limit` chunks just before chunk N: page backwards;
 *   after=N [&wait=ms]        the chunks after N; with `wait`, a long-poll that
 *                             answers when a chunk arrives, the task ends, or
 *                             `wait` ms pass (the live tail).
 * Chunks are in ascending id order. `atStart`: no chunk of the task precedes
 * the first one returned. `running`: more output may still come (the task is
 * not terminal, or its last attempt is still stopping); it is read BEFORE the
 * chunks, so `running: false` means the answer holds the log's true end.
 */
import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import { InvalidInputError, UnauthorizedError } from '../../core/errors.js';
import { principalOf } from '../auth.js';
import type { AppContext } from '../context.js';
import { ErrorSchema, LOG_CHUNKS_MAX, LogChunkSchema, LogChunksQuery, TaskIdParams } from '../schemas.js';
import { logChunkJson } from '../serialize.js';
import { finished, ownedTask } from './tasks.js';

const Page = Type.Object({ chunks: Type.Array(LogChunkSchema), atStart: Type.Boolean(), running: Type.Boolean() });

export function logChunkRoutes(app: FastifyInstance, ctx: AppContext): void {
  const { store } = ctx;
  /** Long-polls in progress, ended when the server closes (else it would wait for each one's timeout). */
  const waiting = new Set<AbortController>();
  app.addHook('preClose', async () => {
    for (const a of waiting) a.abort();
  });

  app.get<{ Params: TaskIdParams; Querystring: LogChunksQuery }>(
    '/v1/tasks/:id/log-chunks',
    {
      config: { auth: ['admin', 'user'] },
      schema: {
        tags: ['tasks'],
        summary: 'The task\'s log as pages of chunks: the end, a page before a chunk, or a long-poll for what follows a chunk',
        params: TaskIdParams,
        querystring: LogChunksQuery,
        response: { 200: Page, 400: ErrorSchema, 401: ErrorSchema, 403: ErrorSchema, 404: ErrorSchema },
      },
    },
    async (req, reply) => {
      const p = principalOf(req);
      const q = req.query;
      if (q.before !== undefined && q.after !== undefined) throw new InvalidInputError('before', 'give before or after, not both');
      if (q.wait !== undefined && q.after === undefined) throw new InvalidInputError('wait', 'only with after: a long-poll waits for the chunks after a position');
      const task = ownedTask(await store.getTask(req.params.id), req.params.id, p);
      const limit = q.limit ?? LOG_CHUNKS_MAX;

      if (q.after === undefined) {
        const running = !(await finished(ctx, task.id));
        // One more than asked: whether anything precedes the page, without another query.
        const got = await store.readLogsBefore(task.id, q.before ?? null, limit + 1);
        const atStart = got.length <= limit;
        return { chunks: (atStart ? got : got.slice(1)).map(logChunkJson), atStart, running };
      }

      const after = q.after;
      const atStart = async () => after === 0 || (await store.readLogsBefore(task.id, after + 1, 1)).length === 0;
      const deadline = performance.now() + (q.wait ?? 0);
      const abort = new AbortController();
      let revoked: string | null = null;
      const onClose = () => abort.abort();
      reply.raw.once('close', onClose);
      // A revoke (or sign-out) ends the wait at once: the answer is then a 401.
      const unregister = ctx.sessions.registerPrincipal(p, (reason) => {
        revoked = reason;
        abort.abort();
      });
      waiting.add(abort);
      try {
        for (;;) {
          const running = !(await finished(ctx, task.id));
          const chunks = await store.readLogs(task.id, after, limit);
          const left = deadline - performance.now();
          if (revoked !== null) throw new UnauthorizedError(`the stream's credentials ended: ${revoked}`);
          if (chunks.length > 0 || !running || left <= 0 || abort.signal.aborted) return { chunks: chunks.map(logChunkJson), atStart: await atStart(), running };
          // Woken by the task's store signal (new output, a state change), else at the deadline.
          await ctx.bus.wait(task.id, Math.ceil(left), abort.signal);
        }
      } finally {
        waiting.delete(abort);
        reply.raw.off('close', onClose);
        unregister();
      }
    },
  );
}
