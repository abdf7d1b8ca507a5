/**
 * The error answers every route can give because of the layers around it,
 * added to each documented route's `schema.response` in one place (an
 * onRoute hook, installed before @fastify/swagger reads the routes), so the
 * OpenAPI document lists every status a client must handle, and a new route
 * gets them without repeating them:
 *
 *   any documented route        503 (the store cannot answer: database down, disk full)
 *   not config.auth 'public'    401 (no, unknown or revoked token or session),
 *                               403 (role not allowed; a cookie request from another origin)
 *   params, querystring, headers or a body schema   400 (names the field)
 *   under /v1/                  400 (a query parameter the route does not take; request-shape.ts)
 *   POST, PUT, PATCH, DELETE    400 (malformed JSON), 413 (body over the route's limit),
 *                               415 (a body that is not application/json)
 *   a path parameter (`:id`)    404 (no such thing, or not the caller's),
 *                               414 (the parameter over the router's 100 characters)
 *
 * Statuses a route answers for reasons of its own (409, 410, 429) stay in the
 * route's schema. Every error status gets a description (the status's meaning
 * here), also those the route declared without one. The answers' shape is
 * ErrorSchema (error-handler.ts makes every error that shape).
 */
import type { FastifyInstance, RouteOptions } from 'fastify';
import { ErrorSchema } from './schemas.js';

export const ERROR_DESCRIPTIONS: Readonly<Record<number, string>> = {
  400: 'Bad input: `error.field` names the field, `error.reason` says why',
  401: 'Not authenticated: no token, or an unknown or revoked one (or no valid dashboard session)',
  403: "Authenticated, but this role may not call this route (or a cookie request came from another origin)",
  404: 'Not found, or not visible to the caller (another user\'s task is 404, not 403)',
  409: 'Conflict with the current state (e.g. an Idempotency-Key reused with another body, a task in a state that does not allow this)',
  410: 'Gone: the cursor is older than the retained changes; re-read and resume from the head',
  413: "Body too large: over the route's limit (1 MiB; POST /v1/tasks/batch has its own)",
  414: 'A path segment is over 100 characters (`error.field` is `path`)',
  415: 'Unsupported media type: send Content-Type: application/json',
  429: 'Too many requests: this token holds too many open streams',
  503: 'Unavailable: the store cannot answer right now (database unreachable, disk full); retry later',
};

const WITH_BODY = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

type Responses = Record<string, unknown>;

/** The statuses the layers around `route` can answer (see the table above). */
export function layerStatuses(route: Pick<RouteOptions, 'method' | 'url' | 'schema' | 'config'>): number[] {
  const methods = (Array.isArray(route.method) ? route.method : [route.method]).map((m) => String(m).toUpperCase());
  const schema = (route.schema ?? {}) as Record<string, unknown>;
  const auth = (route.config as { auth?: unknown } | undefined)?.auth;
  const out = new Set<number>([503]);
  if (auth !== 'public') {
    out.add(401);
    out.add(403);
  }
  if (schema.params || schema.querystring || schema.headers || schema.body || route.url.startsWith('/v1/')) out.add(400);
  if (methods.some((m) => WITH_BODY.has(m))) {
    out.add(400);
    out.add(413);
    out.add(415);
  }
  if (route.url.includes('/:')) {
    out.add(404);
    out.add(414);
  }
  return [...out].sort((a, b) => a - b);
}

function withDescription(schema: unknown, status: number): unknown {
  const description = ERROR_DESCRIPTIONS[status];
  if (!description || typeof schema !== 'object' || schema === null || 'description' in schema) return schema;
  return { ...schema, description };
}

/** Installs the hook; call before registering @fastify/swagger and any route. */
export function documentErrorStatuses(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    const schema = route.schema as (Record<string, unknown> & { hide?: boolean; response?: Responses }) | undefined;
    if (!schema || schema.hide) return;
    const response: Responses = { ...(schema.response ?? {}) };
    for (const status of layerStatuses(route)) if (!(String(status) in response)) response[String(status)] = ErrorSchema;
    for (const key of Object.keys(response)) {
      const status = Number(key);
      if (status >= 400) response[key] = withDescription(response[key], status);
    }
    route.schema = { ...schema, response };
  });
}
