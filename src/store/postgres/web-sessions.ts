/**
 * Dashboard sessions and one-time sign-in codes on PostgreSQL
 * (store/web-sessions.ts). Only sha256 hashes of the secrets are stored;
 * every read and consume compares the expiry with the caller's `now` (like
 * the tokens' times, these are the calling server's clock, not a lease).
 */
import { ConflictError, NotFoundError } from '../../core/errors.js';
import { webSessionFromRow, type WebSessionRow } from '../rows.js';
import type { WebSessionRecord, WebSessionStore } from '../web-sessions.js';
import type { Db } from './db.js';
import { isUniqueViolation } from './pg-errors.js';

export function postgresWebSessions(db: Db): WebSessionStore {
  /**
   * INSERT ... SELECT ... WHERE the token exists (one statement): an unknown
   * token is NotFoundError, not a foreign-key failure.
   */
  const insertBound = async (sql: string, params: unknown[], tokenId: string, what: string) => {
    const r = await db.write(async (tx) => {
      try {
        return await tx.query(sql, params);
      } catch (e) {
        if (isUniqueViolation(e)) throw new ConflictError(`${what} already exists`);
        throw e;
      }
    });
    if (r.rowCount === 0) throw new NotFoundError('token', tokenId);
  };
  return {
    async createWebSession(rec: WebSessionRecord): Promise<void> {
      await insertBound(
        'INSERT INTO web_sessions (id_hash, token_id, created_at, expires_at) SELECT $1, id, $2, $3 FROM tokens WHERE id = $4',
        [rec.idHash, rec.createdAt, rec.expiresAt, rec.tokenId],
        rec.tokenId,
        'this web session',
      );
    },

    async getWebSession(idHash: string, now: number): Promise<WebSessionRecord | null> {
      return db.read(async (q) => {
        const row = (await q.query<WebSessionRow>('SELECT * FROM web_sessions WHERE id_hash = $1 AND expires_at > $2', [idHash, now])).rows[0];
        return row ? webSessionFromRow(row) : null;
      });
    },

    async deleteWebSession(idHash: string): Promise<boolean> {
      return db.write(async (tx) => (await tx.query('DELETE FROM web_sessions WHERE id_hash = $1', [idHash])).rowCount === 1);
    },

    async deleteWebSessionsOfToken(tokenId: string): Promise<number> {
      return db.write(async (tx) => (await tx.query('DELETE FROM web_sessions WHERE token_id = $1', [tokenId])).rowCount ?? 0);
    },

    async createLoginCode(codeHash: string, tokenId: string, expiresAt: number): Promise<void> {
      await insertBound('INSERT INTO login_codes (code_hash, token_id, expires_at) SELECT $1, id, $2 FROM tokens WHERE id = $3', [codeHash, expiresAt, tokenId], tokenId, 'this sign-in code');
    },

    /**
     * One guarded DELETE: the row lock makes two concurrent uses of a code
     * queue, and the second finds the row gone (READ COMMITTED re-check), so
     * exactly one gets the token id.
     */
    async consumeLoginCode(codeHash: string, now: number): Promise<string | null> {
      return db.write(
        async (tx) =>
          (await tx.query<{ token_id: string }>('DELETE FROM login_codes WHERE code_hash = $1 AND expires_at > $2 RETURNING token_id', [codeHash, now])).rows[0]?.token_id ?? null,
      );
    },

    async pruneWebSessions(now: number): Promise<number> {
      return db.write(async (tx) => {
        const r = await tx.query<{ n: number }>(
          `WITH s AS (DELETE FROM web_sessions WHERE expires_at <= $1 RETURNING 1), c AS (DELETE FROM login_codes WHERE expires_at <= $1 RETURNING 1)
           SELECT (SELECT count(*) FROM s) + (SELECT count(*) FROM c) AS n`,
          [now],
        );
        return r.rows[0]!.n;
      });
    },
  };
}
