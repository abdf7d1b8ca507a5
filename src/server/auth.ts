/**
 * Bearer tokens. A secret is `drv_` + 32 random bytes (base64url); the store
 * keeps only sha256(secret). The token's id is the first 16 hex digits of
 * that hash, so a presented secret is found with one primary-key lookup and
 * any string works as a token (DROVER_ADMIN_TOKEN may be chosen by the user).
 * The full hash is then compared in constant time.
 *
 * A request is authenticated by `Authorization: Bearer` when that header is
 * present, else by the dashboard's session cookie (web-auth.ts), whose
 * session is checked together with its token through the same short cache.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ForbiddenError, InvalidInputError, UnauthorizedError } from '../core/errors.js';
import type { Role, Store, TokenRecord, WebSessionRecord } from '../store/store.js';
import { TOKEN_TOUCH_INTERVAL_MS } from '../store/tokens.js';
import type { Logger } from './scheduler.js';
import { isSafeMethod, isWebSecret, requireSameOrigin, SESSION_COOKIE, sessionCookieOf, webSecretHash } from './web-auth.js';

export interface Principal {
  tokenId: string;
  user: string;
  role: Role;
  /** How the request proved it: the Authorization header, or the dashboard's session cookie. */
  via: 'bearer' | 'cookie';
  /** Cookie only: sha256 of the session value (the web_sessions key; streams register under `web:<it>`). */
  sessionIdHash?: string;
  /** Cookie only: when the session ends. */
  sessionExpiresAt?: number;
}

/**
 * Who may call a route: 'public' (no token: /healthz, the dashboard's sign-in,
 * pages and assets), or the roles
 * whose tokens may. Every route declares it in `config.auth`; a route without
 * it cannot be registered (see installAuth).
 */
export type RouteAccess = 'public' | readonly Role[];

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
  }
  interface FastifyContextConfig {
    auth?: RouteAccess;
    /** Set by installAuth from the route's `websocket` option: the one kind of route that may be upgraded. */
    websocket?: boolean;
  }
}

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

export function tokenIdOf(secret: string): string {
  return hashSecret(secret).slice(0, 16);
}

export function newSecret(): string {
  return `drv_${randomBytes(32).toString('base64url')}`;
}

export interface Tokens {
  create(name: string, role: Role, user: string, secret?: string): Promise<{ id: string; secret: string; record: TokenRecord }>;
  /** The store's first token (store createFirstToken): null when it has one already. */
  createFirst(name: string, role: Role, user: string, secret?: string): Promise<{ id: string; secret: string; record: TokenRecord } | null>;
  verify(secret: string): Promise<TokenRecord | null>;
  /**
   * A dashboard session by the hash of its cookie value, with its token: null
   * unless the session exists, has not expired, and its token is not revoked.
   */
  session(idHash: string): Promise<{ session: WebSessionRecord; token: TokenRecord } | null>;
  /** Drops a token, and the sessions it signed in, from this server's cache at once (after a revoke here). */
  forget(id: string): void;
  /** Drops one session from this server's cache at once (after a sign-out here). */
  forgetSession(idHash: string): void;
}

/**
 * How long a verified token is trusted without asking the store again. Every
 * API call would otherwise cost a store read before its real work (on
 * PostgreSQL a pooled round trip). A revoke through this server takes effect
 * at once; through another server of the same database, within this bound.
 */
export const TOKEN_CACHE_MS = 1000;
const TOKEN_CACHE_MAX = 10_000;

/** Most token ids whose last touch this server remembers (the map is cleared beyond it; a clear costs at most one extra write per token). */
const TOUCHED_MAX = 10_000;

export function tokenService(store: Store, now: () => number, log?: Logger): Tokens {
  const cache = new Map<string, { rec: TokenRecord; until: number }>();
  // Sessions by id hash, each with its token as read together (both re-read
  // after TOKEN_CACHE_MS, so a revoke or sign-out elsewhere applies within it).
  const sessions = new Map<string, { session: WebSessionRecord; token: TokenRecord; until: number }>();
  // When this server last asked the store to set lastUsedAt, per token id: the
  // cached record's lastUsedAt does not move, so without this every cache hit
  // after the first minute would write again.
  const touched = new Map<string, number>();
  /**
   * lastUsedAt: written at most once per TOKEN_TOUCH_INTERVAL_MS per token by
   * this server (and the store's guarded UPDATE keeps several servers to about
   * once a minute too). Fire and forget: a failed write must not fail the
   * request it describes.
   */
  const touch = (rec: TokenRecord, at: number) => {
    const last = Math.max(rec.lastUsedAt ?? -Infinity, touched.get(rec.id) ?? -Infinity);
    if (at - last < TOKEN_TOUCH_INTERVAL_MS) return;
    if (touched.size >= TOUCHED_MAX) touched.clear();
    touched.set(rec.id, at);
    void (async () => {
      try {
        await store.touchToken(rec.id, at);
      } catch (err) {
        log?.warn({ err, tokenId: rec.id }, 'could not record the token\'s lastUsedAt');
      }
    })();
  };
  return {
    async create(name, role, user, secret = newSecret()) {
      const secretHash = hashSecret(secret);
      const record = await store.createToken({ id: secretHash.slice(0, 16), name, user, role, secretHash, createdAt: now() });
      return { id: record.id, secret, record };
    },
    async createFirst(name, role, user, secret = newSecret()) {
      const secretHash = hashSecret(secret);
      const record = await store.createFirstToken({ id: secretHash.slice(0, 16), name, user, role, secretHash, createdAt: now() });
      return record ? { id: record.id, secret, record } : null;
    },
    async verify(secret) {
      if (!secret) return null;
      const hash = hashSecret(secret);
      const hit = cache.get(hash);
      if (hit && hit.until > now()) {
        touch(hit.rec, now());
        return hit.rec;
      }
      const rec = await store.getToken(hash.slice(0, 16));
      if (!rec || rec.revokedAt !== null) {
        cache.delete(hash);
        return null;
      }
      const ok = timingSafeEqual(Buffer.from(rec.secretHash, 'hex'), Buffer.from(hash, 'hex'));
      if (!ok) return null;
      if (cache.size >= TOKEN_CACHE_MAX) cache.clear();
      cache.set(hash, { rec, until: now() + TOKEN_CACHE_MS });
      touch(rec, now());
      return rec;
    },
    async session(idHash) {
      const t = now();
      const hit = sessions.get(idHash);
      if (hit && hit.until > t && hit.session.expiresAt > t) {
        touch(hit.token, t);
        return { session: hit.session, token: hit.token };
      }
      sessions.delete(idHash);
      const session = await store.getWebSession(idHash, t);
      if (!session) return null;
      const token = await store.getToken(session.tokenId);
      if (!token || token.revokedAt !== null) return null;
      if (sessions.size >= TOKEN_CACHE_MAX) sessions.clear();
      sessions.set(idHash, { session, token, until: t + TOKEN_CACHE_MS });
      touch(token, t);
      return { session, token };
    },
    forget(id) {
      for (const [hash, v] of cache) if (v.rec.id === id) cache.delete(hash);
      for (const [hash, v] of sessions) if (v.token.id === id) sessions.delete(hash);
    },
    forgetSession(idHash) {
      sessions.delete(idHash);
    },
  };
}

/**
 * Reads `Authorization: Bearer <secret>` if present, else the session cookie;
 * throws UnauthorizedError (401) if neither is there or the one used is not
 * good. A bad Authorization header is never rescued by a good cookie: the
 * caller said who it is, and it is not that.
 */
export async function authenticate(req: FastifyRequest, tokens: Tokens): Promise<Principal> {
  const h = req.headers.authorization;
  if (h) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
    if (!m) throw new UnauthorizedError('malformed Authorization header: expected "Bearer <token>"');
    const rec = await tokens.verify(m[1]!);
    if (!rec) throw new UnauthorizedError('invalid or revoked token');
    return { tokenId: rec.id, user: rec.user, role: rec.role, via: 'bearer' };
  }
  const cookie = sessionCookieOf(req);
  if (cookie === null) throw new UnauthorizedError('missing Authorization header: send "Authorization: Bearer <token>" (or sign in to the dashboard)');
  if (!isWebSecret(cookie)) throw new UnauthorizedError(`malformed ${SESSION_COOKIE} cookie: sign in again`);
  const idHash = webSecretHash(cookie);
  const found = await tokens.session(idHash);
  if (!found) throw new UnauthorizedError('the dashboard session has ended (signed out, expired, or its token was revoked): sign in again');
  const { token, session } = found;
  return { tokenId: token.id, user: token.user, role: token.role, via: 'cookie', sessionIdHash: idHash, sessionExpiresAt: session.expiresAt };
}

/** After authentication: a cookie request that changes something must come from this server's own origin (web-auth.ts). */
function checkCsrf(req: FastifyRequest, p: Principal): void {
  if (p.via === 'cookie' && !isSafeMethod(req.method)) requireSameOrigin(req, 'a request signed in with the dashboard\'s session cookie that changes something');
}

/**
 * The principal the auth hook admitted to this route (installAuth). Throws
 * only if called on a public route, which is a programming error.
 */
export function principalOf(req: FastifyRequest): Principal {
  const p = req.principal;
  if (!p) throw new UnauthorizedError('not authenticated');
  return p;
}

/**
 * The request came as an HTTP upgrade (Node's 'upgrade' event, which
 * @fastify/websocket routes through Fastify): IncomingMessage.upgrade, set by
 * Node's parser though missing from its type.
 */
function isUpgrade(req: FastifyRequest): boolean {
  return (req.raw as { upgrade?: boolean }).upgrade === true;
}

/** The 403 message: what the route needs, and what the token is. */
function forbiddenMessage(auth: readonly Role[], role: Role): string {
  if (role === 'worker') return 'worker tokens may only connect as a worker (GET /v1/workers/connect)';
  if (auth.length === 1 && auth[0] === 'worker') return `only worker tokens may connect as a worker; the token has role ${role}`;
  return `this needs role ${auth.join(' or ')}; the token has role ${role}`;
}

/**
 * The one authorization decision of every request, made on the route the
 * router MATCHED (req.routeOptions), never on the raw URL: whatever spelling
 * reached a route (percent-encoding, query strings), the route's own declared
 * access applies.
 *
 *   no route matched     → authenticate (401 without a valid token), then the 404
 *   config.auth 'public' → no token needed (and no upgrade)
 *   config.auth [roles]  → authenticate (401), then the role must be listed (403),
 *                          then a cookie request that changes something needs its own Origin (403)
 *   an upgrade request   → only to a websocket route (after the checks above; else 400)
 *
 * Routes must declare `config.auth`: registering one without it throws, so a
 * new route cannot be open by omission. The router must not widen matching
 * (buildApp sets ignoreTrailingSlash, ignoreDuplicateSlashes and
 * useSemicolonDelimiter off, caseSensitive on); if it ever did, the decision
 * would still follow the matched route.
 */
export function installAuth(app: FastifyInstance, tokens: Tokens): void {
  app.addHook('onRoute', (route) => {
    const auth = route.config?.auth;
    const valid = auth === 'public' || (Array.isArray(auth) && auth.length > 0 && auth.every((r) => r === 'admin' || r === 'user' || r === 'worker'));
    if (!valid) throw new Error(`route ${String(route.method)} ${route.url} declares no access: set config.auth to 'public' or a list of roles`);
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    route.config = { ...route.config, websocket: route.websocket === true && methods.every((m) => m === 'GET') };
  });

  app.addHook('onRequest', async (req) => {
    const route = req.routeOptions;
    if (route.url === undefined) {
      // Unmatched: who asks decides between 401 and the 404 that follows.
      checkCsrf(req, (req.principal = await authenticate(req, tokens)));
      return;
    }
    const auth = route.config.auth;
    const notWebSocket = () => new InvalidInputError('Upgrade', `${req.method} ${route.url} is not a WebSocket endpoint`);
    if (auth === 'public') {
      if (isUpgrade(req) && !route.config.websocket) throw notWebSocket();
      return;
    }
    if (!auth) throw new ForbiddenError('route declares no access'); // unreachable: onRoute refuses such routes
    const p = await authenticate(req, tokens);
    req.principal = p;
    if (!auth.includes(p.role)) throw new ForbiddenError(forbiddenMessage(auth, p.role));
    checkCsrf(req, p);
    if (isUpgrade(req) && !route.config.websocket) throw notWebSocket();
  });
}
