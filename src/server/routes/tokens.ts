/**
 * Token management (admin only). A secret is returned once, at creation; only
 * its hash is stored. A revoke takes effect at once on this server (token
 * cache, open sessions and log streams, dashboard sessions) and within a
 * second on the others (auth.ts TOKEN_CACHE_MS; session-registry.ts re-check;
 * a dashboard session is only good while its token is).
 */
import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import { NotFoundError } from '../../core/errors.js';
import type { AppContext } from '../context.js';
import { ErrorSchema, TokenCreateBody, TokenIdParams, TokenSchema } from '../schemas.js';
import { tokenJson } from '../serialize.js';

const errors = { 400: ErrorSchema, 401: ErrorSchema, 403: ErrorSchema, 404: ErrorSchema };
const admin = { auth: ['admin'] } as const;

export function tokenRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.post<{ Body: TokenCreateBody }>(
    '/v1/tokens',
    { config: admin, schema: { tags: ['tokens'], summary: 'Create a token', body: TokenCreateBody, response: { 201: Type.Object({ token: TokenSchema, secret: Type.String() }), ...errors } } },
    async (req, reply) => {
      const { name, role = 'user', user = name } = req.body;
      const created = await ctx.tokens.create(name, role, user);
      return reply.code(201).send({ token: tokenJson(created.record), secret: created.secret });
    },
  );

  app.get('/v1/tokens', { config: admin, schema: { tags: ['tokens'], summary: 'List tokens', response: { 200: Type.Object({ tokens: Type.Array(TokenSchema) }), ...errors } } }, async () => {
    return { tokens: (await ctx.store.listTokens()).map(tokenJson) };
  });

  app.delete<{ Params: { id: string } }>(
    '/v1/tokens/:id',
    {
      config: admin,
      schema: { tags: ['tokens'], summary: 'Revoke a token; closes its worker sessions, log streams and dashboard sessions', params: TokenIdParams, response: { 200: Type.Object({ token: TokenSchema }), ...errors } },
    },
    async (req) => {
      const ok = await ctx.store.revokeToken(req.params.id, ctx.clock.now());
      // Both at once, after the store write: no new request passes the cache,
      // and what is already open ends now (a second revoke closes nothing new).
      ctx.tokens.forget(req.params.id);
      ctx.sessions.closeToken(req.params.id);
      // The token's dashboard sessions are already refused (their token is checked on every request): delete the rows too.
      await ctx.store.deleteWebSessionsOfToken(req.params.id);
      const rec = await ctx.store.getToken(req.params.id);
      if (!rec || (!ok && rec.revokedAt === null)) throw new NotFoundError('token', req.params.id);
      return { token: tokenJson(rec) };
    },
  );
}
