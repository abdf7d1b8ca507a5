/**
 * Builds the HTTP server: validation with closed schemas, one error shape,
 * one authorization decision per request on the matched route (auth.ts
 * installAuth; every route declares `config.auth`), the OpenAPI document
 * built from the route schemas, and the workers' WebSocket endpoint.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import cookie from '@fastify/cookie';
import websocket from '@fastify/websocket';
import swagger from '@fastify/swagger';
import { installAuth } from './auth.js';
import type { AppContext } from './context.js';
import { handleError, handleFrameworkError } from './error-handler.js';
import { installJsonBodyParser } from './json-body.js';
import { installRequestShapeChecks } from './request-shape.js';
import { logChunkRoutes } from './routes/log-chunks.js';
import { statsRoutes } from './routes/stats.js';
import { streamRoutes } from './routes/stream.js';
import { taskRoutes } from './routes/tasks.js';
import { taskBatchRoutes } from './routes/tasks-batch.js';
import { scheduleRoutes } from './routes/schedules.js';
import { dagRoutes } from './routes/dags.js';
import { cronNextRoutes } from './routes/cron-next.js';
import { tokenRoutes } from './routes/tokens.js';
import { workerRoutes } from './routes/workers.js';
import { sessionRoutes } from './routes/session.js';
import { installSecurityHeaders } from './security-headers.js';
import { documentErrorStatuses } from './openapi-errors.js';
import { apiDocsRoutes } from './routes/api-docs.js';
import { answerMissingFile, defaultWebDist, staticRoutes } from './static-files.js';
import { buildSerializerFactory, lazyValidator } from './lazy-compilers.js';

export const BODY_LIMIT = 1024 * 1024;

function newAjv(coerceTypes: false | 'array'): Ajv {
  const ajv = new Ajv({ coerceTypes, removeAdditional: false, useDefaults: true, allErrors: false, strict: false });
  (addFormats as unknown as (a: Ajv) => void)(ajv);
  return ajv;
}

/**
 * Matching stays exact: one spelling per route (percent-decoding aside, which
 * the router does and the auth decision follows, since it reads the matched
 * route). Spelled out because auth.ts relies on them, whatever Fastify's
 * defaults become. (`useSemicolonDelimiter` is read by find-my-way but not in
 * its type, hence the separate constant.)
 */
const EXACT_ROUTING = { ignoreTrailingSlash: false, ignoreDuplicateSlashes: false, caseSensitive: true, useSemicolonDelimiter: false };

/**
 * `webDist`: the built dashboard (default the package's web/dist; static-files.ts).
 * `logStream`: where Fastify's own log lines (JSON) go, default stdout; `drover dev` passes one
 * that writes human lines to its terminal.
 * `eagerSchemas`: compile every route's validators and serializers while the
 * routes are registered (tests), instead of at each one's first use
 * (lazy-compilers.ts says why that is the default).
 */
export async function buildApp(
  ctx: AppContext,
  opts: { logLevel?: string; webDist?: string; logStream?: { write(line: string): unknown }; eagerSchemas?: boolean } = {},
): Promise<FastifyInstance> {
  const eager = opts.eagerSchemas ?? false;
  const app = Fastify({
    bodyLimit: BODY_LIMIT,
    logger: { level: opts.logLevel ?? 'warn', ...(opts.logStream ? { stream: opts.logStream } : {}) },
    routerOptions: EXACT_ROUTING,
    frameworkErrors: handleFrameworkError,
    schemaController: { compilersFactory: { buildSerializer: buildSerializerFactory(eager) } },
  });
  // Two validators: bodies are JSON and must have the exact types (no "3" for 3);
  // query strings and path params are text and are coerced. Neither drops
  // unknown fields: the closed schemas reject them.
  const strict = newAjv(false);
  const coercing = newAjv('array');
  app.setValidatorCompiler(({ schema, httpPart }) => {
    const compile = () => (httpPart === 'body' ? strict : coercing).compile(schema);
    return eager ? compile() : lazyValidator(compile);
  });
  app.decorateRequest('principal', null);
  app.setErrorHandler(handleError);
  // Bodies are JSON only: a text/plain one is a 415 like any other type (error-handler.ts), not a string
  // that then fails the schema as "must be object".
  app.removeContentTypeParser('text/plain');
  installJsonBodyParser(app); // json-body.ts: Fastify's parse and protections, with an answer that says what is wrong
  installRequestShapeChecks(app); // request-shape.ts: empty path parameters, bodies sent to actions that take none
  app.setNotFoundHandler((req, reply) => {
    // A page or asset whose file @fastify/static did not find (it calls the not-found handler): the route's answer (503 or 404).
    if (answerMissingFile(req, reply)) return;
    void reply.code(404).send({ error: { code: 'not_found', message: `no route ${req.method} ${req.url.split('?')[0]}` } });
  });

  installSecurityHeaders(app); // first: on every response, 401s included
  // Parses the Cookie header into req.cookies in an onRequest hook, so before
  // installAuth's hook reads the session cookie (hooks run in the order they
  // were added); writes reply.setCookie's Set-Cookie headers on send. No routes.
  await app.register(cookie);
  // Before any route is registered (its onRoute check must see every route).
  installAuth(app, ctx.tokens);
  // Before swagger, whose own onRoute hook reads the schemas this one completes.
  documentErrorStatuses(app);

  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: { title: 'Drover API', version: '1', description: 'Self-hosted task scheduler. This document and its rendered form (/docs/api) are public; docs/api.md in the repository explains the API in prose.' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
  });
  await app.register(websocket, { options: { maxPayload: 4 * 1024 * 1024 } });

  app.get('/healthz', { schema: { hide: true }, config: { auth: 'public' } }, async () => ({ ok: true }));
  // Public: the API's shape is no secret (the document holds no data), and a client reads it before it has a token.
  app.get('/openapi.json', { schema: { hide: true }, config: { auth: 'public' } }, async () => app.swagger());
  apiDocsRoutes(app);
  taskRoutes(app, ctx);
  taskBatchRoutes(app, ctx);
  scheduleRoutes(app, ctx);
  cronNextRoutes(app, ctx);
  dagRoutes(app, ctx);
  tokenRoutes(app, ctx);
  workerRoutes(app, ctx);
  logChunkRoutes(app, ctx);
  statsRoutes(app, ctx);
  streamRoutes(app, ctx);
  sessionRoutes(app, ctx);
  await staticRoutes(app, opts.webDist ?? defaultWebDist());
  return app;
}
