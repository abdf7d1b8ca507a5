/**
 * Three checks on the matched route, before its schema validation (a
 * preValidation hook on every route; unmatched requests go on to their 401
 * or 404 untouched):
 *
 * - An empty path parameter under /v1/ is a 404. A trailing slash after a
 *   list (`/v1/tasks/`) matches the item route with an empty id: no such
 *   path, as docs/api.md says of trailing slashes, rather than a 400 about a
 *   parameter the caller never wrote. (The dashboard's pages are left to the
 *   app, which shows its own "not found" for `/tasks/`.)
 * - An API route without a querystring schema (GET /v1/workers, POST
 *   /v1/tasks, /v1/tasks/batch, an action...) takes no query parameters:
 *   one is a 400 naming it, as an unknown field of a route with a
 *   querystring schema is (`?wait=1` on a submit is refused, not silently
 *   ignored while the caller thinks it waited). An empty query (`?`) is none.
 * - A route without a body schema (cancel, retry, pause, drain, ...) takes no
 *   body: none, or `{}` as many clients send by default. Anything else is a
 *   400 naming its first field (or `body`), refused rather than ignored, as
 *   an unknown field is elsewhere.
 */
import type { FastifyInstance } from 'fastify';
import { InvalidInputError } from '../core/errors.js';

export function installRequestShapeChecks(app: FastifyInstance): void {
  app.addHook('preValidation', async (req, reply) => {
    const route = req.routeOptions;
    if (route.url === undefined) return;
    if (route.url.startsWith('/v1/') && Object.values((req.params ?? {}) as Record<string, unknown>).some((v) => v === '')) {
      return reply.code(404).send({ error: { code: 'not_found', message: `no route ${req.method} ${req.url.split('?')[0]}` } });
    }
    if (route.url.startsWith('/v1/') && route.schema?.querystring === undefined) {
      const first = Object.keys((req.query ?? {}) as Record<string, unknown>)[0];
      if (first !== undefined) throw new InvalidInputError(first, `unknown field (${req.method} ${route.url} takes no query parameters)`);
    }
    const body: unknown = req.body;
    if (route.schema?.body !== undefined || body === undefined) return;
    const isObject = typeof body === 'object' && body !== null && !Array.isArray(body);
    if (isObject && Object.keys(body).length === 0) return;
    const first = isObject ? Object.keys(body)[0] : undefined;
    throw new InvalidInputError(first ?? 'body', `${req.method} ${route.url} takes no body${first !== undefined ? ' (unknown field)' : ''}`);
  });
}
