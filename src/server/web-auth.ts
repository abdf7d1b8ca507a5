/**
 * Dashboard sign-in: the session cookie, one-time sign-in codes, and the
 * same-origin rule for state-changing cookie requests.
 *
 * Contract:
 * - A session is `drover_session=<32 random bytes, base64url>`: HttpOnly,
 *   SameSite=Strict, Path=/, Max-Age 12 h (+ Secure over https). The store
 *   keeps only sha256(value) (web_sessions), bound to the token that signed in;
 *   a session is good while its row exists, has not expired and its token is
 *   not revoked (auth.ts checks all three on every request).
 * - A sign-in code is 32 random bytes (base64url) for one token, valid 10
 *   minutes, used at most once (the store deletes it in the statement that
 *   reads it). It travels in a URL fragment (`/sign-in#code=...`), which no
 *   browser sends to a server or puts in a Referer.
 * - A request authenticated by the cookie whose method changes something (not
 *   GET/HEAD/OPTIONS) must carry `Origin` equal to the request's own origin
 *   (scheme://Host): SameSite=Strict already keeps the cookie off cross-site
 *   requests, this also refuses same-site-but-other-origin ones (another port
 *   or subdomain). Bearer requests need no Origin: a page cannot make a
 *   browser attach an Authorization header to another origin's request.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type {} from '@fastify/cookie'; // its types: req.cookies, reply.setCookie / clearCookie (the plugin is registered in app.ts)
import { ForbiddenError } from '../core/errors.js';
import type { WebSessionStore } from '../store/web-sessions.js';

export const SESSION_COOKIE = 'drover_session';
export const SESSION_TTL_MS = 12 * 3600_000;
export const LOGIN_CODE_TTL_MS = 10 * 60_000;

/** 32 bytes in base64url without padding: 43 characters. Session values and sign-in codes both have this shape. */
export const WEB_SECRET_PATTERN = '^[A-Za-z0-9_-]{43}$';
const WEB_SECRET_RE = new RegExp(WEB_SECRET_PATTERN);

export function newWebSecret(): string {
  return randomBytes(32).toString('base64url');
}

export function isWebSecret(s: string): boolean {
  return WEB_SECRET_RE.test(s);
}

/** What the store keeps for a session value or a code. */
export function webSecretHash(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

/**
 * The session cookie's attributes. Set and cleared with @fastify/cookie
 * (reply.setCookie / reply.clearCookie; the Cookie header is parsed by it into
 * req.cookies), which writes them as
 * `drover_session=<value>; Max-Age=43200; Path=/; HttpOnly; SameSite=Strict`
 * (+ `; Secure`); clearing adds `Max-Age=0` and an `Expires` in 1970.
 */
export function sessionCookieOptions(secure: boolean) {
  return { httpOnly: true, sameSite: 'strict', path: '/', maxAge: SESSION_TTL_MS / 1000, secure } as const;
}

/**
 * The `drover_session` cookie the request carries, or null (req.cookies, from
 * @fastify/cookie: the first cookie of that exact name; quotes are kept and a
 * `%XX` escape is decoded, so only a well-formed value, which needs neither,
 * passes the caller's isWebSecret check).
 */
export function sessionCookieOf(req: FastifyRequest): string | null {
  return req.cookies[SESSION_COOKIE] ?? null;
}

/** Starts the session `value` in this browser (Secure over https). */
export function setSessionCookie(req: FastifyRequest, reply: FastifyReply, value: string): FastifyReply {
  return reply.setCookie(SESSION_COOKIE, value, sessionCookieOptions(isHttps(req)));
}

/** Makes the browser drop the session cookie: the same attributes, an empty value, Max-Age=0. */
export function clearSessionCookie(req: FastifyRequest, reply: FastifyReply): FastifyReply {
  return reply.clearCookie(SESSION_COOKIE, sessionCookieOptions(isHttps(req)));
}

/** The request came over TLS (the server terminates it; no proxy headers are trusted). */
export function isHttps(req: FastifyRequest): boolean {
  return req.protocol === 'https';
}

/** `scheme://host[:port]` of the request as the client addressed it, or null without a Host header. */
export function ownOrigin(req: FastifyRequest): string | null {
  const host = req.headers.host;
  if (!host) return null;
  return `${isHttps(req) ? 'https' : 'http'}://${host.toLowerCase()}`;
}

/** Methods that change nothing, so need no Origin check (HTTP semantics; the API keeps to them). */
export function isSafeMethod(method: string): boolean {
  return method === 'GET' || method === 'HEAD' || method === 'OPTIONS';
}

/**
 * Throws ForbiddenError (403) unless `Origin` names the request's own origin.
 * `what` says why the check applies, for the message.
 */
export function requireSameOrigin(req: FastifyRequest, what: string): void {
  const own = ownOrigin(req);
  const origin = req.headers.origin;
  if (origin === undefined) {
    throw new ForbiddenError(`Origin: missing; ${what} must come from the dashboard's own origin${own ? ` (${own})` : ''}`);
  }
  if (own === null || origin.toLowerCase() !== own) {
    throw new ForbiddenError(`Origin: ${JSON.stringify(origin.slice(0, 200))} is not this server's origin${own ? ` (${own})` : ''}; ${what} must come from the dashboard itself`);
  }
}

export interface LoginCode {
  code: string;
  /** The dashboard path that signs in with it (the code in the fragment). */
  path: string;
  expiresAt: number;
}

/** Makes a sign-in code for `tokenId` (the caller has checked the token may sign in). */
export async function mintLoginCode(store: Pick<WebSessionStore, 'createLoginCode'>, tokenId: string, now: number): Promise<LoginCode> {
  const code = newWebSecret();
  const expiresAt = now + LOGIN_CODE_TTL_MS;
  await store.createLoginCode(webSecretHash(code), tokenId, expiresAt);
  return { code, path: `/sign-in#code=${code}`, expiresAt };
}
