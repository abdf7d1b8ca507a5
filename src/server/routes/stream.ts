/**
 * GET /v1/stream: Server-Sent Events of task and worker changes for the
 * dashboard (docs/api.md, "Stream"). One shared tail of the store's change
 * feed per server (change-feed.ts); this file is the HTTP side: start
 * position, framing, backpressure, keepalive, limits and revocation.
 *
 * Start position: the `Last-Event-ID` header (EventSource sends it when it
 * reconnects), else `?cursor=`, else the tail's position. A malformed one is
 * a 400 naming the header or the parameter; an expired one is not an error:
 * the stream opens and says `reset`.
 *
 * Events: `hello` (id = the start position), `changes` (id = the cursor after
 * the batch; each task once with its current summary; users: only their own
 * tasks and no workers), `reset` (id = the position to continue from: the
 * client re-reads what it shows). Every KEEPALIVE_MS a `: ping` comment, with
 * an `id:` line when the subscriber's position moved without an event for it.
 *
 * Backpressure: the socket's buffer is the only queue. When a write returns
 * false the subscriber stops receiving (change-feed.ts: blocked) and, on
 * 'drain', catches up from its position.
 */
import type { FastifyInstance } from 'fastify';
import { InvalidInputError } from '../../core/errors.js';
import { principalOf } from '../auth.js';
import { ChangeFeed, StreamCapError, type FeedEvent, type FeedSource, type Subscription } from '../change-feed.js';
import type { AppContext } from '../context.js';
import { ErrorSchema, StreamHeaders, StreamQuery } from '../schemas.js';
import { taskSummaryJson, type TaskSummaryJson } from '../serialize.js';
import { sseEvent, sseKeepalive, sseRetry } from '../sse.js';
import { workerViews, type WorkerJson } from '../worker-views.js';
import { workerViewDeps } from './workers.js';

export const KEEPALIVE_MS = 15_000;
/** EventSource's reconnect delay: short, since a resume costs little (the ring or one indexed read). */
export const RECONNECT_MS = 1000;

export const CLOSED_BY_SERVER = 'server shutting down';

/** The store (and this server's worker views) as the feed's source. */
export function storeFeedSource(ctx: AppContext): FeedSource<TaskSummaryJson, WorkerJson> {
  const deps = workerViewDeps(ctx);
  return {
    head: () => ctx.store.feedHead(),
    read: (after, limit, owner) => ctx.store.readChanges(after, limit, owner),
    async load(taskIds, workerIds) {
      const [tasks, workers] = await Promise.all([
        taskIds.length ? ctx.store.getTaskSummaries(taskIds) : Promise.resolve([]),
        workerIds.length ? workerViews(deps, null, workerIds) : Promise.resolve([]),
      ]);
      return { tasks: tasks.map(taskSummaryJson), workers };
    },
  };
}

type Ev = FeedEvent<TaskSummaryJson, WorkerJson>;

function frame(ev: Ev, now: number): string {
  switch (ev.type) {
    case 'hello':
      return sseEvent('hello', ev.cursor, { cursor: ev.cursor, serverTime: new Date(now).toISOString() });
    case 'changes':
      return sseEvent('changes', ev.cursor, { cursor: ev.cursor, tasks: ev.tasks, workers: ev.workers });
    case 'reset':
      return sseEvent('reset', ev.cursor, { cursor: ev.cursor, reason: ev.reason });
  }
}

export function streamRoutes(app: FastifyInstance, ctx: AppContext): ChangeFeed<TaskSummaryJson, WorkerJson> {
  const feed = new ChangeFeed(storeFeedSource(ctx), { onError: (err) => ctx.log.warn({ err }, 'change feed: a read failed; retrying') });
  // Any store news may be a change: read soon (the feed batches them). Worker rows that change without a signal are found by the poll.
  const unsubscribe = ctx.store.onSignal((sig) => {
    if (sig.kind !== 'cancel') feed.poke();
  });
  /** Each open stream's closer, for shutdown. */
  const open = new Set<(reason: string) => void>();
  app.addHook('preClose', async () => {
    feed.stop();
    unsubscribe();
    for (const close of [...open]) close(CLOSED_BY_SERVER);
  });
  // One event is encoded once, whichever streams it goes to (admins share every batch's event; a user's streams share theirs).
  const encoded = new WeakMap<Ev, string>();
  const encode = (ev: Ev) => {
    let s = encoded.get(ev);
    if (s === undefined) encoded.set(ev, (s = frame(ev, ctx.clock.now())));
    return s;
  };

  app.get<{ Querystring: StreamQuery; Headers: StreamHeaders }>(
    '/v1/stream',
    {
      config: { auth: ['admin', 'user'] },
      schema: {
        tags: ['stream'],
        summary: 'Server-sent events: task and worker changes after a cursor (hello, changes, reset; a ping comment every 15 s)',
        querystring: StreamQuery,
        headers: StreamHeaders,
        response: {
          200: { description: 'text/event-stream', content: { 'text/event-stream': { schema: { type: 'string' } } } },
          400: ErrorSchema,
          401: ErrorSchema,
          403: ErrorSchema,
          429: ErrorSchema,
          503: ErrorSchema,
        },
      },
    },
    async (req, reply) => {
      const p = principalOf(req);
      const header = req.headers['last-event-id'];
      const cursor = header ?? req.query.cursor ?? null;
      const res = reply.raw;
      const headers = {
        ...(reply.getHeaders() as Record<string, string>),
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        'x-accel-buffering': 'no',
      };
      if (req.method === 'HEAD') {
        reply.hijack();
        res.writeHead(200, headers);
        return void res.end();
      }

      let started = false;
      let ended = false;
      let lastId: string | null = null;
      let sub: Subscription | null = null;
      let ping: NodeJS.Timeout | null = null;
      const unregister: Array<() => void> = [];
      const cleanup = () => {
        if (ended) return;
        ended = true;
        if (ping) clearInterval(ping);
        sub?.close();
        for (const u of unregister) u();
        open.delete(close);
      };
      /** Ends the stream on purpose (revoke, sign-out, shutdown, a failed catch-up): the client reconnects from its last id. */
      const close = (_reason: string) => {
        cleanup();
        if (started) res.end();
        else res.destroy();
      };
      res.once('close', cleanup);
      open.add(close);
      // Revoking the token, or ending the dashboard session, closes the stream.
      unregister.push(ctx.sessions.registerPrincipal(p, close));

      const start = () => {
        if (started) return;
        started = true;
        reply.hijack();
        res.writeHead(200, headers);
        res.write(sseRetry(RECONNECT_MS));
      };
      const sink = {
        send(ev: Ev): boolean {
          if (ended) return true; // being torn down: nothing more is written
          start();
          lastId = ev.cursor;
          return res.write(encode(ev));
        },
        fail(err: unknown) {
          ctx.log.warn({ err }, 'stream: catching up failed; closing the stream (the client resumes from its last id)');
          close('catch-up failed');
        },
      };
      try {
        sub = await feed.subscribe({ owner: p.role === 'admin' ? null : p.user, key: p.tokenId, cursor, sink });
      } catch (err) {
        cleanup();
        if (started) return void res.end();
        if (err instanceof InvalidInputError && err.field === 'cursor') throw new InvalidInputError(header !== undefined ? 'Last-Event-ID' : 'cursor', err.reason);
        if (err instanceof StreamCapError) {
          return reply.code(err.scope === 'token' ? 429 : 503).send({ error: { code: err.scope === 'token' ? 'too_many_streams' : 'unavailable', message: err.message } });
        }
        throw err;
      }
      if (ended) return void sub.close(); // the client left while the cursor was checked
      res.on('drain', () => sub?.drained());
      ping = setInterval(() => {
        if (ended || res.writableNeedDrain) return;
        const pos = sub!.position;
        res.write(sseKeepalive(pos !== lastId ? pos : null));
        lastId = pos;
      }, KEEPALIVE_MS);
      ping.unref();
    },
  );
  return feed;
}
