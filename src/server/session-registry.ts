/**
 * Long-lived connections by the token that opened them, so revoking a token
 * ends them: worker WebSocket sessions (worker-session.ts) and followed log
 * streams (routes/tasks.ts).
 *
 * Contract:
 * - `register(tokenId, close)` → an unregister function. The owner calls it
 *   when the connection ends by itself (calling it twice is harmless).
 * - `closeToken(id, reason)` calls `close(reason)` of every connection of that
 *   token at once and forgets them (the revoke route, after the store write).
 * - A token revoked elsewhere (another server of the same PostgreSQL, or any
 *   direct store write) is found by a re-check of every registered token id
 *   in the store every CHECK_MS: its connections close within CHECK_MS plus
 *   one store read, i.e. within a second.
 * - `close(reason)` is called at most once per registration and must not
 *   throw (a throw is logged, and the others still close).
 */
import type { TokenStore } from '../store/tokens.js';
import type { Logger } from './scheduler.js';

/** Ends one connection; `reason` is for its peer and the log (e.g. a WebSocket close reason). */
export type CloseSession = (reason: string) => void;

export interface SessionRegistry {
  register(tokenId: string, close: CloseSession): () => void;
  /** Closes every connection opened with this token; returns how many. */
  closeToken(tokenId: string, reason?: string): number;
  /** Connections registered now (all tokens). */
  readonly size: number;
  /** Stops the periodic re-check (server shutdown). Connections are not closed here. */
  stop(): void;
}

/**
 * How often registered token ids are re-read from the store. Half a second,
 * not one: the "closed within a second of a revoke" bound must also cover the
 * store read and the close itself.
 */
export const SESSION_CHECK_MS = 500;

export const REVOKED_REASON = 'token revoked';

export function sessionRegistry(store: Pick<TokenStore, 'getToken'>, log: Logger, opts: { checkMs?: number } = {}): SessionRegistry {
  const checkMs = opts.checkMs ?? SESSION_CHECK_MS;
  const byToken = new Map<string, Set<{ close: CloseSession }>>();
  let timer: NodeJS.Timeout | null = null;
  let checking = false;
  let stopped = false;

  const closeToken = (tokenId: string, reason = REVOKED_REASON): number => {
    const set = byToken.get(tokenId);
    if (!set) return 0;
    byToken.delete(tokenId);
    for (const entry of set) {
      try {
        entry.close(reason);
      } catch (err) {
        log.warn({ err, tokenId }, 'closing a session of a revoked token failed');
      }
    }
    syncTimer();
    return set.size;
  };

  /** One pass: every registered token that is gone or revoked in the store is closed. */
  const check = async () => {
    if (checking) return; // a slow store: the next tick starts when this pass ended
    checking = true;
    try {
      await Promise.all(
        [...byToken.keys()].map(async (id) => {
          try {
            const rec = await store.getToken(id);
            if (!rec || rec.revokedAt !== null) {
              const n = closeToken(id);
              if (n) log.info({ tokenId: id, sessions: n }, 'token revoked elsewhere: closed its sessions');
            }
          } catch (err) {
            // The store is unreachable: keep the sessions (their own requests fail anyway) and try again next tick.
            log.warn({ err, tokenId: id }, 'could not re-check a token of an open session');
          }
        }),
      );
    } finally {
      checking = false;
    }
  };

  /** The timer runs only while something is registered, and never keeps the process alive. */
  function syncTimer(): void {
    if (byToken.size && !timer && !stopped) {
      timer = setInterval(() => void check(), checkMs);
      timer.unref();
    } else if (!byToken.size && timer) {
      clearInterval(timer);
      timer = null;
    }
  }

  return {
    register(tokenId, close) {
      let set = byToken.get(tokenId);
      if (!set) byToken.set(tokenId, (set = new Set()));
      const entry = { close };
      set.add(entry);
      syncTimer();
      return () => {
        const s = byToken.get(tokenId);
        if (!s?.delete(entry)) return;
        if (!s.size) byToken.delete(tokenId);
        syncTimer();
      };
    },
    closeToken,
    get size() {
      let n = 0;
      for (const s of byToken.values()) n += s.size;
      return n;
    },
    stop() {
      stopped = true;
      if (timer) clearInterval(timer);
      timer = null;
    },
  };
}
