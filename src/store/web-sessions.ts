/**
 * Dashboard sign-in: cookie sessions and one-time sign-in codes, both bound
 * to the token that signed in (so revoking the token ends them: the server
 * checks the token on every request made with a session). The store keeps
 * only sha256 hashes of session secrets and codes.
 */
export interface WebSessionRecord {
  /** sha256 (hex) of the cookie's secret. */
  idHash: string;
  tokenId: string;
  createdAt: number;
  expiresAt: number;
}

export interface WebSessionStore {
  createWebSession(rec: WebSessionRecord): Promise<void>;
  /** The session if it exists and has not expired at `now`. */
  getWebSession(idHash: string, now: number): Promise<WebSessionRecord | null>;
  /** Sign-out. True if it existed. */
  deleteWebSession(idHash: string): Promise<boolean>;
  /** Ends every session of a token (on revoke); returns how many. */
  deleteWebSessionsOfToken(tokenId: string): Promise<number>;
  createLoginCode(codeHash: string, tokenId: string, expiresAt: number): Promise<void>;
  /**
   * Single use: one guarded statement deletes the code and returns its token
   * id, or null if it is unknown, already used, or expired at `now`.
   */
  consumeLoginCode(codeHash: string, now: number): Promise<string | null>;
  /** Deletes expired sessions and codes; returns how many. */
  pruneWebSessions(now: number): Promise<number>;
}
