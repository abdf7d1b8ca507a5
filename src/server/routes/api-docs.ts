/**
 * `GET /docs/api`: the API reference as one HTML page, rendered from this
 * server's OpenAPI document (api-reference-html.ts) on the first request and
 * kept (the routes do not change while the server runs); `GET /docs/api.css`
 * its stylesheet. Both public, like /openapi.json: they show the API's shape,
 * no data. Not in the OpenAPI document themselves (schema.hide).
 */
import type { FastifyInstance } from 'fastify';
import { API_REFERENCE_CSS, renderApiReference } from '../api-reference-html.js';

export function apiDocsRoutes(app: FastifyInstance): void {
  let page: string | null = null;
  const common = { schema: { hide: true }, config: { auth: 'public' as const } };
  app.get('/docs/api', common, async (_req, reply) => {
    page ??= renderApiReference(app.swagger() as unknown as Record<string, unknown>);
    return reply.header('content-type', 'text/html; charset=utf-8').header('cache-control', 'no-cache').send(page);
  });
  app.get('/docs/api.css', common, async (_req, reply) =>
    reply.header('content-type', 'text/css; charset=utf-8').header('cache-control', 'no-cache').send(API_REFERENCE_CSS),
  );
}
