/**
 * Bearer tokens. A secret is `drv_` + 32 random bytes (base64url); the store
 * keeps only sha256(secret). The token's id is the first 16 hex digits of
 * that hash, so a presented secret is found with one primary-key lookup and
 * any string works as a token (DROVER_ADMIN_TOKEN may be chosen by the user).
 * The full hash is then compared in constant time.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { ForbiddenError, UnauthorizedError } from '../core/errors.js';
import type { Role, Store, TokenRecord } from '../store/store.js';

export interface Principal {
  tokenId: string;
  user: string;
  role: Role;
}

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
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
  verify(secret: string): Promise<TokenRecord | null>;
  /** Drops a token from this server's cache at once (after a revoke here). */
  forget(id: string): void;
}

/**
 * How long a verified token is trusted without asking the store again. Every
 * API call would otherwise cost a store read before its real work (on
 * PostgreSQL a pooled round trip). A revoke through this server takes effect
 * at once; through another server of the same database, within this bound.
 */
export const TOKEN_CACHE_MS = 1000;
const TOKEN_CACHE_MAX = 10_000;

export function tokenService(store: Store, now: () => number): Tokens {
  const cache = new Map<string, { rec: TokenRecord; until: number }>();
  return {
    async create(name, role, user, secret = newSecret()) {
      const secretHash = hashSecret(secret);
      const record = await store.createToken({ id: secretHash.slice(0, 16), name, user, role, secretHash, createdAt: now() });
      return { id: record.id, secret, record };
    },
    async verify(secret) {
      if (!secret) return null;
      const hash = hashSecret(secret);
      const hit = cache.get(hash);
      if (hit && hit.until > now()) return hit.rec;
      const rec = await store.getToken(hash.slice(0, 16));
      if (!rec || rec.revokedAt !== null) {
        cache.delete(hash);
        return null;
      }
      const ok = timingSafeEqual(Buffer.from(rec.secretHash, 'hex'), Buffer.from(hash, 'hex'));
      if (!ok) return null;
      if (cache.size >= TOKEN_CACHE_MAX) cache.clear();
      cache.set(hash, { rec, until: now() + TOKEN_CACHE_MS });
      return rec;
    },
    forget(id) {
      for (const [hash, v] of cache) if (v.rec.id === id) cache.delete(hash);
    },
  };
}

/** Reads `Authorization: Bearer <secret>`; throws UnauthorizedError (401) if absent or unknown. */
export async function authenticate(req: FastifyRequest, tokens: Tokens): Promise<Principal> {
  const h = req.headers.authorization;
  if (!h) throw new UnauthorizedError('missing Authorization header: send "Authorization: Bearer <token>"');
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
  if (!m) throw new UnauthorizedError('malformed Authorization header: expected "Bearer <token>"');
  const rec = await tokens.verify(m[1]!);
  if (!rec) throw new UnauthorizedError('invalid or revoked token');
  return { tokenId: rec.id, user: rec.user, role: rec.role };
}

/** Route guard: the principal must have one of `roles`. */
export function requireRole(req: FastifyRequest, ...roles: Role[]): Principal {
  const p = req.principal;
  if (!p) throw new UnauthorizedError('not authenticated');
  if (!roles.includes(p.role)) throw new ForbiddenError(`this needs role ${roles.join(' or ')}; the token has role ${p.role}`);
  return p;
}
