/**
 * Dashboard sign-in (docs/api.md, "Sessions"); the rules are in web-auth.ts.
 *
 *   POST   /v1/session      public; {token} or {code}; same Origin required   → 200 + Set-Cookie
 *   DELETE /v1/session      cookie sessions; ends this session                → 204 + cookie cleared
 *   GET    /v1/me           who is calling, and how                           → 200
 *   POST   /v1/login-codes  a one-time sign-in code for the caller's token    → 201
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import { ForbiddenError, InvalidInputError, UnauthorizedError } from '../../core/errors.js';
import type { TokenRecord } from '../../store/store.js';
import { principalOf } from '../auth.js';
import type { AppContext } from '../context.js';
import { ErrorSchema } from '../schemas.js';
import { SIGNED_OUT_REASON, webSessionKey } from '../session-registry.js';
import {
  isWebSecret,
  mintLoginCode,
  requireSameOrigin,
  SESSION_COOKIE,
  SESSION_TTL_MS,
  clearSessionCookie,
  sessionCookieOf,
  setSessionCookie,
  newWebSecret,
  WEB_SECRET_PATTERN,
  webSecretHash,
} from '../web-auth.js';

/** Exactly one of the two (checked in the handler, which can say so; a schema union could only name one branch's field). */
const SignInBody = Type.Object(
  {
    token: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 })),
    code: Type.Optional(Type.String({ pattern: WEB_SECRET_PATTERN })),
  },
  { additionalProperties: false },
);
type SignInBody = Static<typeof SignInBody>;

const Role = Type.Union([Type.Literal('admin'), Type.Literal('user')]);
const SignedIn = Type.Object({ user: Type.String(), role: Role, expiresAt: Type.String({ format: 'date-time' }) });
const Me = Type.Object({
  user: Type.String(),
  role: Role,
  via: Type.Union([Type.Literal('cookie'), Type.Literal('bearer')]),
  /** The id of the token behind this call (a session's: the token it was opened with), as `GET /v1/tokens` lists it. */
  tokenId: Type.String(),
  expiresAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
});
const LoginCodeJson = Type.Object({ code: Type.String(), path: Type.String(), expiresAt: Type.String({ format: 'date-time' }) });

const errors = { 400: ErrorSchema, 401: ErrorSchema, 403: ErrorSchema };
const people = { auth: ['admin', 'user'] } as const;

export const WORKER_SIGN_IN_MESSAGE = 'worker tokens cannot sign in to the dashboard';

/** Responses that carry or describe a credential are never stored by a cache. */
function noStore(reply: FastifyReply): FastifyReply {
  return reply.header('cache-control', 'no-store');
}

export function sessionRoutes(app: FastifyInstance, ctx: AppContext): void {
  const { store, clock } = ctx;

  /** The token a sign-in names: by its secret, or by a code (used up here, whatever follows). */
  const signInToken = async (body: SignInBody): Promise<TokenRecord> => {
    if (body.token !== undefined) {
      const rec = await ctx.tokens.verify(body.token);
      if (!rec) throw new UnauthorizedError('invalid or revoked token');
      return rec;
    }
    const tokenId = await store.consumeLoginCode(webSecretHash(body.code!), clock.now());
    if (tokenId === null) throw new UnauthorizedError('unknown, already used or expired sign-in code: get a new link (drover dev prints one) or sign in with a token');
    const rec = await store.getToken(tokenId);
    if (!rec || rec.revokedAt !== null) throw new UnauthorizedError('the sign-in code\'s token has been revoked');
    return rec;
  };

  /** Ends a session here and everywhere it is open on this server. */
  const endSession = async (idHash: string) => {
    await store.deleteWebSession(idHash);
    ctx.tokens.forgetSession(idHash);
    ctx.sessions.closeToken(webSessionKey(idHash), SIGNED_OUT_REASON);
  };

  app.post<{ Body: SignInBody }>(
    '/v1/session',
    {
      config: { auth: 'public' },
      // Before the body is read: a sign-in from another origin (login CSRF) is refused whatever it sends.
      onRequest: async (req: FastifyRequest) => requireSameOrigin(req, 'signing in'),
      schema: {
        tags: ['session'],
        summary: 'Sign in to the dashboard with a token or a one-time code; sets the session cookie',
        description:
          'Body: exactly one of `token` (a token secret) or `code` (from POST /v1/login-codes). Needs an `Origin` header naming this server. ' +
          `Sets \`${SESSION_COOKIE}\` (HttpOnly, SameSite=Strict, ${SESSION_TTL_MS / 3600_000} h). Worker tokens are refused (403).`,
        security: [],
        body: SignInBody,
        response: { 200: SignedIn, ...errors },
      },
    },
    async (req, reply) => {
      const body = req.body;
      if ((body.token === undefined) === (body.code === undefined)) throw new InvalidInputError('body', 'send exactly one of token or code');
      const token = await signInToken(body);
      if (token.role === 'worker') throw new ForbiddenError(WORKER_SIGN_IN_MESSAGE);

      const now = clock.now();
      const secret = newWebSecret();
      const expiresAt = now + SESSION_TTL_MS;
      await store.createWebSession({ idHash: webSecretHash(secret), tokenId: token.id, createdAt: now, expiresAt });
      // A session this browser held before is unreachable once the new cookie replaces it: end it rather than leave it to expire.
      const previous = sessionCookieOf(req);
      if (previous !== null && isWebSecret(previous)) await endSession(webSecretHash(previous));

      setSessionCookie(req, noStore(reply), secret);
      return { user: token.user, role: token.role, expiresAt: new Date(expiresAt).toISOString() };
    },
  );

  app.delete(
    '/v1/session',
    {
      config: people,
      schema: { tags: ['session'], summary: 'Sign out: ends this dashboard session and its open streams, clears the cookie', response: { 204: Type.Null(), ...errors } },
    },
    async (req, reply) => {
      const p = principalOf(req);
      if (p.via !== 'cookie' || p.sessionIdHash === undefined) {
        throw new InvalidInputError(SESSION_COOKIE, 'no dashboard session to end: this request was authenticated with a Bearer token');
      }
      await endSession(p.sessionIdHash);
      return clearSessionCookie(req, noStore(reply)).code(204).send();
    },
  );

  app.get(
    '/v1/me',
    { config: people, schema: { tags: ['session'], summary: 'The caller: user, role, and whether a session cookie or a Bearer token authenticated it', response: { 200: Me, ...errors } } },
    async (req, reply) => {
      const p = principalOf(req);
      noStore(reply);
      return { user: p.user, role: p.role, via: p.via, tokenId: p.tokenId, expiresAt: p.sessionExpiresAt !== undefined ? new Date(p.sessionExpiresAt).toISOString() : null };
    },
  );

  app.post(
    '/v1/login-codes',
    {
      config: people,
      schema: {
        tags: ['session'],
        summary: 'A one-time dashboard sign-in code for the caller\'s own token (10 minutes, single use)',
        description: '`path` is the dashboard link that signs in with it; the code is in the fragment, which browsers never send to a server.',
        response: { 201: LoginCodeJson, ...errors },
      },
    },
    async (req, reply) => {
      const p = principalOf(req);
      const made = await mintLoginCode(store, p.tokenId, clock.now());
      return noStore(reply).code(201).send({ code: made.code, path: made.path, expiresAt: new Date(made.expiresAt).toISOString() });
    },
  );
}
