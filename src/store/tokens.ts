/** Bearer tokens (server/auth.ts makes and checks them; the store keeps hashes only). */
export type Role = 'admin' | 'user' | 'worker';

export interface TokenRecord {
  id: string;
  name: string;
  /** The user the token acts for; tasks it submits belong to this user. */
  user: string;
  role: Role;
  /** sha256 of the secret, hex. The secret itself is never stored. */
  secretHash: string;
  createdAt: number;
  revokedAt: number | null;
  /** Written by touchToken, at most once a minute per token. */
  lastUsedAt: number | null;
}

/** Tokens last used less than this long ago are not written again (touchToken). */
export const TOKEN_TOUCH_INTERVAL_MS = 60_000;

export interface TokenStore {
  createToken(t: Omit<TokenRecord, 'revokedAt' | 'lastUsedAt'>): Promise<TokenRecord>;
  /**
   * The first token of an empty store: created only if the store has no
   * token at all (revoked ones count), else null. Of several servers calling
   * it at once on one database, at most one creates (PostgreSQL: under a
   * transaction-level advisory lock; SQLite: its single writer), so only one
   * prints a first admin token.
   */
  createFirstToken(t: Omit<TokenRecord, 'revokedAt' | 'lastUsedAt'>): Promise<TokenRecord | null>;
  getToken(id: string): Promise<TokenRecord | null>;
  listTokens(): Promise<TokenRecord[]>;
  /** False when no such token or already revoked. */
  revokeToken(id: string, now: number): Promise<boolean>;
  countTokens(): Promise<number>;
  /**
   * Sets lastUsedAt = now unless it was set less than TOKEN_TOUCH_INTERVAL_MS
   * before `now` (one guarded UPDATE, so concurrent servers write it at most
   * about once a minute). No-op for an unknown token.
   */
  touchToken(id: string, now: number): Promise<void>;
}
