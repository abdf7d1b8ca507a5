/** TokenStore on PostgreSQL (store/tokens.ts is the contract). */
import { ConflictError } from '../../core/errors.js';
import { tokenFromRow, type TokenRow } from '../rows.js';
import { TOKEN_TOUCH_INTERVAL_MS, type TokenRecord, type TokenStore } from '../tokens.js';
import type { Db } from './db.js';
import { isUniqueViolation } from './pg-errors.js';

/** The advisory lock of createFirstToken: 'DROV' and 2 (the migrations' lock is 'DROV' and 1). */
const FIRST_TOKEN_LOCK: readonly [number, number] = [0x44524f56, 2];

export function postgresTokens(db: Db): TokenStore {
  return {
    async createToken(t: Omit<TokenRecord, 'revokedAt' | 'lastUsedAt'>): Promise<TokenRecord> {
      return db.write(async (tx) => {
        try {
          const r = await tx.query<TokenRow>('INSERT INTO tokens (id, name, "user", role, secret_hash, created_at) VALUES ($1, $2, $3, $4, $5, $6) RETURNING *', [
            t.id,
            t.name,
            t.user,
            t.role,
            t.secretHash,
            t.createdAt,
          ]);
          return tokenFromRow(r.rows[0]!);
        } catch (e) {
          if (isUniqueViolation(e)) throw new ConflictError(`token ${t.id} (or its secret) already exists`);
          throw e;
        }
      });
    },

    async createFirstToken(t: Omit<TokenRecord, 'revokedAt' | 'lastUsedAt'>): Promise<TokenRecord | null> {
      return db.write(async (tx) => {
        // Serialises the servers starting together; the INSERT's snapshot is taken after the lock, so it
        // sees the token a server that held it before committed (READ COMMITTED).
        await tx.query('SELECT pg_advisory_xact_lock($1::int, $2::int)', [...FIRST_TOKEN_LOCK]);
        const r = await tx.query<TokenRow>(
          'INSERT INTO tokens (id, name, "user", role, secret_hash, created_at) SELECT $1, $2, $3, $4, $5, $6 WHERE NOT EXISTS (SELECT 1 FROM tokens) RETURNING *',
          [t.id, t.name, t.user, t.role, t.secretHash, t.createdAt],
        );
        return r.rows[0] ? tokenFromRow(r.rows[0]) : null;
      });
    },

    async getToken(id: string): Promise<TokenRecord | null> {
      return db.read(async (q) => {
        const row = (await q.query<TokenRow>('SELECT * FROM tokens WHERE id = $1', [id])).rows[0];
        return row ? tokenFromRow(row) : null;
      });
    },

    async listTokens(): Promise<TokenRecord[]> {
      return db.read(async (q) => (await q.query<TokenRow>('SELECT * FROM tokens ORDER BY created_at, id')).rows.map(tokenFromRow));
    },

    async revokeToken(id: string, now: number): Promise<boolean> {
      return db.write(async (tx) => (await tx.query('UPDATE tokens SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL', [now, id])).rowCount === 1);
    },

    /** All tokens ever created, revoked ones included. */
    async countTokens(): Promise<number> {
      return db.read(async (q) => (await q.query<{ n: number }>('SELECT count(*) AS n FROM tokens')).rows[0]!.n);
    },

    /**
     * One guarded UPDATE in autocommit: of several servers touching one token
     * at once, the row lock queues them and the re-checked guard lets the
     * first through, so the row is written at most about once a minute. A lost
     * connection leaves the outcome unknown, which is harmless here.
     */
    async touchToken(id: string, now: number): Promise<void> {
      await db.single(async (q) => {
        await q.query('UPDATE tokens SET last_used_at = $2 WHERE id = $1 AND (last_used_at IS NULL OR last_used_at <= $2::bigint - $3::bigint)', [
          id,
          now,
          TOKEN_TOUCH_INTERVAL_MS,
        ]);
      });
    },
  };
}
