/**
 * Dashboard sessions and one-time sign-in codes on SQLite (store/web-sessions.ts).
 * Only sha256 hashes of the secrets are stored; every read and consume
 * compares the expiry with the caller's `now`.
 */
import { ConflictError, NotFoundError } from '../../core/errors.js';
import { webSessionFromRow, type WebSessionRow } from '../rows.js';
import type { WebSessionRecord, WebSessionStore } from '../web-sessions.js';
import type { SqliteDb } from './db.js';
import { isUniqueViolation } from './sqlite-errors.js';

export function sqliteWebSessions(d: SqliteDb): WebSessionStore {
  /** INSERT ... SELECT ... WHERE the token exists: an unknown token is NotFoundError, not a foreign-key failure. */
  const insertBound = (sql: string, params: unknown[], tokenId: string, what: string) => {
    try {
      if (d.q(sql).run(...params).changes === 0) throw new NotFoundError('token', tokenId);
    } catch (e) {
      if (isUniqueViolation(e)) throw new ConflictError(`${what} already exists`);
      throw e;
    }
  };
  return {
    async createWebSession(rec: WebSessionRecord): Promise<void> {
      await d.write(() =>
        insertBound(
          'INSERT INTO web_sessions (id_hash, token_id, created_at, expires_at) SELECT ?, id, ?, ? FROM tokens WHERE id = ?',
          [rec.idHash, rec.createdAt, rec.expiresAt, rec.tokenId],
          rec.tokenId,
          'this web session',
        ),
      );
    },

    async getWebSession(idHash: string, now: number): Promise<WebSessionRecord | null> {
      return d.read(() => {
        const row = d.q('SELECT * FROM web_sessions WHERE id_hash = ? AND expires_at > ?').get(idHash, now) as WebSessionRow | undefined;
        return row ? webSessionFromRow(row) : null;
      });
    },

    async deleteWebSession(idHash: string): Promise<boolean> {
      return d.write(() => d.q('DELETE FROM web_sessions WHERE id_hash = ?').run(idHash).changes === 1);
    },

    async deleteWebSessionsOfToken(tokenId: string): Promise<number> {
      return d.write(() => d.q('DELETE FROM web_sessions WHERE token_id = ?').run(tokenId).changes);
    },

    async createLoginCode(codeHash: string, tokenId: string, expiresAt: number): Promise<void> {
      await d.write(() =>
        insertBound('INSERT INTO login_codes (code_hash, token_id, expires_at) SELECT ?, id, ? FROM tokens WHERE id = ?', [codeHash, expiresAt, tokenId], tokenId, 'this sign-in code'),
      );
    },

    /** One guarded DELETE: of two concurrent uses of a code, one gets the token id and the other null. */
    async consumeLoginCode(codeHash: string, now: number): Promise<string | null> {
      return d.write(() => {
        const row = d.q('DELETE FROM login_codes WHERE code_hash = ? AND expires_at > ? RETURNING token_id').get(codeHash, now) as { token_id: string } | undefined;
        return row?.token_id ?? null;
      });
    },

    async pruneWebSessions(now: number): Promise<number> {
      return d.write(
        () => d.q('DELETE FROM web_sessions WHERE expires_at <= ?').run(now).changes + d.q('DELETE FROM login_codes WHERE expires_at <= ?').run(now).changes,
      );
    },
  };
}
