/** Tokens on SQLite (store/tokens.ts). Only hashes of secrets are stored. */
import { ConflictError } from '../../core/errors.js';
import { tokenFromRow, type TokenRow } from '../rows.js';
import { TOKEN_TOUCH_INTERVAL_MS, type TokenRecord, type TokenStore } from '../tokens.js';
import type { SqliteDb } from './db.js';
import { isUniqueViolation } from './sqlite-errors.js';

export function sqliteTokens(d: SqliteDb): TokenStore {
  return {
    async createToken(t: Omit<TokenRecord, 'revokedAt' | 'lastUsedAt'>): Promise<TokenRecord> {
      return d.write(() => {
        try {
          const row = d
            .q('INSERT INTO tokens (id, name, user, role, secret_hash, created_at) VALUES (?, ?, ?, ?, ?, ?) RETURNING *')
            .get(t.id, t.name, t.user, t.role, t.secretHash, t.createdAt) as TokenRow;
          return tokenFromRow(row);
        } catch (e) {
          if (isUniqueViolation(e)) throw new ConflictError(`token ${t.id} (or its secret) already exists`);
          throw e;
        }
      });
    },

    async createFirstToken(t: Omit<TokenRecord, 'revokedAt' | 'lastUsedAt'>): Promise<TokenRecord | null> {
      return d.write(() => {
        const row = d
          .q('INSERT INTO tokens (id, name, user, role, secret_hash, created_at) SELECT ?, ?, ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM tokens) RETURNING *')
          .get(t.id, t.name, t.user, t.role, t.secretHash, t.createdAt) as TokenRow | undefined;
        return row ? tokenFromRow(row) : null;
      });
    },

    async getToken(id: string): Promise<TokenRecord | null> {
      return d.read(() => {
        const row = d.q('SELECT * FROM tokens WHERE id = ?').get(id) as TokenRow | undefined;
        return row ? tokenFromRow(row) : null;
      });
    },

    async listTokens(): Promise<TokenRecord[]> {
      return d.read(() => (d.q('SELECT * FROM tokens ORDER BY created_at, id').all() as TokenRow[]).map(tokenFromRow));
    },

    async revokeToken(id: string, now: number): Promise<boolean> {
      return d.write(() => d.q('UPDATE tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL').run(now, id).changes === 1);
    },

    /** All tokens ever created, revoked ones included. */
    async countTokens(): Promise<number> {
      return d.read(() => (d.q('SELECT count(*) AS n FROM tokens').get() as { n: number }).n);
    },

    /** One guarded UPDATE: a token used less than the interval ago is not written again (nor moved back by an earlier `now`). */
    async touchToken(id: string, now: number): Promise<void> {
      await d.write(() => {
        d.q('UPDATE tokens SET last_used_at = @now WHERE id = @id AND (last_used_at IS NULL OR last_used_at <= @now - @interval)').run({
          id,
          now,
          interval: TOKEN_TOUCH_INTERVAL_MS,
        });
      });
    },
  };
}
