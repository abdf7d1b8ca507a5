/**
 * Long-lived connections by the credential that opened them, so revoking a
 * token or signing out ends them: worker WebSocket sessions
 * (worker-session.ts), followed log streams (routes/tasks.ts) and the
 * dashboard's streams.
 *
 * Keys: a token id, or `web:<sessionIdHash>` for a dashboard session
 * (webSessionKey). A connection made with the session cookie registers under
 * both (registerPrincipal), so either ending closes it.
 *
 * Contract:
 * - `register(key, close)` → an unregister function. The owner calls it
 *   when the connection ends by itself (calling it twice is harmless).
 * - `closeToken(key, reason)` calls `close(reason)` of every connection
 *   under that key at once and forgets them (the revoke route after the store
 *   write; sign-out with the session's key).
 * - A token revoked elsewhere (another server of the same PostgreSQL, or any
 *   direct store write), or a session ended or expired elsewhere, is found by
 *   a re-check of every registered key in the store every CHECK_MS: its
 *   connections close within CHECK_MS plus one store read, i.e. within a second.
 * - `close(reason)` is called at most once per connection, whichever of its
 *   keys closed it, and must not throw (a throw is logged, and the others
 *   still close).
 */
import type { TokenStore } from '../store/tokens.js';
import type { WebSessionStore } from '../store/web-sessions.js';
import type { Logger } from './scheduler.js';

/** Ends one connection; `reason` is for its peer and the log (e.g. a WebSocket close reason). */
export type CloseSession = (reason: string) => void;

/** The registry key of a dashboard session. */
export function webSessionKey(sessionIdHash: string): string {
  return `web:${sessionIdHash}`;
}

/** Who opened a connection: a Principal (auth.ts) has these fields. */
export interface ConnectionOwner {
  tokenId: string;
  sessionIdHash?: string | undefined;
}

export interface SessionRegistry {
  register(key: string, close: CloseSession): () => void;
  /**
   * Registers a connection under its token id and, when it was opened with the
   * session cookie, under its session's key too: revoke and sign-out both end
   * it, `close` runs once. The returned function unregisters both.
   */
  registerPrincipal(owner: ConnectionOwner, close: CloseSession): () => void;
  /** Closes every connection registered under this key (a token id, or webSessionKey); returns how many. */
  closeToken(key: string, reason?: string): number;
  /** Connections registered now (all tokens). */
  readonly size: number;
  /** Stops the periodic re-check (server shutdown). Connections are not closed here. */
  stop(): void;
}

/**
 * How often registered keys are re-read from the store. Half a second,
 * not one: the "closed within a second of a revoke" bound must also cover the
 * store read and the close itself.
 */
export const SESSION_CHECK_MS = 500;

export const REVOKED_REASON = 'token revoked';
export const SIGNED_OUT_REASON = 'signed out';

const WEB_PREFIX = 'web:';

export function sessionRegistry(
  store: Pick<TokenStore, 'getToken'> & Pick<WebSessionStore, 'getWebSession'>,
  log: Logger,
  opts: { checkMs?: number; now?: () => number } = {},
): SessionRegistry {
  const checkMs = opts.checkMs ?? SESSION_CHECK_MS;
  const now = opts.now ?? Date.now;
  const byToken = new Map<string, Set<{ close: CloseSession }>>();
  let timer: NodeJS.Timeout | null = null;
  let checking = false;
  let stopped = false;

  const closeToken = (key: string, reason = REVOKED_REASON): number => {
    const set = byToken.get(key);
    if (!set) return 0;
    byToken.delete(key);
    for (const entry of set) {
      try {
        entry.close(reason);
      } catch (err) {
        log.warn({ err, key }, 'closing a connection of a revoked token or ended session failed');
      }
    }
    syncTimer();
    return set.size;
  };

  /** Whether the credential behind a key still holds: a token not revoked, a dashboard session not ended or expired. */
  const stillGood = async (key: string): Promise<boolean> => {
    if (key.startsWith(WEB_PREFIX)) return (await store.getWebSession(key.slice(WEB_PREFIX.length), now())) !== null;
    const rec = await store.getToken(key);
    return rec !== null && rec.revokedAt === null;
  };

  /** One pass: every registered key whose token or session is gone in the store is closed. */
  const check = async () => {
    if (checking) return; // a slow store: the next tick starts when this pass ended
    checking = true;
    try {
      await Promise.all(
        [...byToken.keys()].map(async (key) => {
          try {
            if (!(await stillGood(key))) {
              const web = key.startsWith(WEB_PREFIX);
              const n = closeToken(key, web ? SIGNED_OUT_REASON : REVOKED_REASON);
              if (n) log.info({ key, sessions: n }, web ? 'dashboard session ended elsewhere: closed its connections' : 'token revoked elsewhere: closed its sessions');
            }
          } catch (err) {
            // The store is unreachable: keep the sessions (their own requests fail anyway) and try again next tick.
            log.warn({ err, key }, 'could not re-check the credential of an open session');
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

  const register = (key: string, close: CloseSession): (() => void) => {
    let set = byToken.get(key);
    if (!set) byToken.set(key, (set = new Set()));
    const entry = { close };
    set.add(entry);
    syncTimer();
    return () => {
      const s = byToken.get(key);
      if (!s?.delete(entry)) return;
      if (!s.size) byToken.delete(key);
      syncTimer();
    };
  };

  return {
    register,
    registerPrincipal(owner, close) {
      if (owner.sessionIdHash === undefined) return register(owner.tokenId, close);
      let closed = false;
      const unregisters: Array<() => void> = [];
      const unregisterAll = () => {
        for (const u of unregisters) u();
      };
      const once: CloseSession = (reason) => {
        if (closed) return;
        closed = true;
        unregisterAll(); // the other key must not keep (or close again) what is closed
        close(reason);
      };
      unregisters.push(register(owner.tokenId, once), register(webSessionKey(owner.sessionIdHash), once));
      return unregisterAll;
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
