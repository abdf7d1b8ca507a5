/**
 * The session registry with dashboard sessions, on a real SQLite store: a
 * connection opened with the session cookie is registered under its token
 * and under `web:<sessionIdHash>`, so a revoke and a sign-out both close it,
 * once; a session deleted or expired in the store (another server's
 * sign-out, the clock) is found by the periodic re-check.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { hashSecret } from '../../src/server/auth.js';
import { REVOKED_REASON, SIGNED_OUT_REASON, sessionRegistry, webSessionKey, type SessionRegistry } from '../../src/server/session-registry.js';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite/sqlite-store.js';

const T0 = 1_700_000_000_000;
const log = pino({ level: 'silent' });

/** Resolves with the reasons `close` was called with, once `n` calls came (or after `ms`). */
function closes(): { close: (reason: string) => void; calls: string[]; next(ms?: number): Promise<string | null> } {
  const calls: string[] = [];
  let wake: (() => void) | null = null;
  return {
    calls,
    close: (reason) => {
      calls.push(reason);
      wake?.();
    },
    next(ms = 2000) {
      if (calls.length) return Promise.resolve(calls[0]!);
      return new Promise((resolve) => {
        const t = setTimeout(() => resolve(null), ms);
        wake = () => {
          clearTimeout(t);
          resolve(calls[0]!);
        };
      });
    },
  };
}

describe('session registry: dashboard sessions', () => {
  let store: SqliteStore;
  let now = T0;
  let reg: SessionRegistry;
  let n = 0;

  /** A token and a session of it in the store. */
  const session = async (expiresAt = T0 + 3600_000) => {
    const secret = `drv_registry_${++n}`;
    const h = hashSecret(secret);
    const tokenId = h.slice(0, 16);
    await store.createToken({ id: tokenId, name: `t${n}`, user: `u${n}`, role: 'user', secretHash: h, createdAt: T0 });
    const idHash = hashSecret(`session-${n}`);
    await store.createWebSession({ idHash, tokenId, createdAt: T0, expiresAt });
    return { tokenId, idHash };
  };

  before(async () => {
    store = openSqliteStore(':memory:');
    await store.migrate();
    reg = sessionRegistry(store, log, { checkMs: 20, now: () => now });
  });
  after(async () => {
    reg.stop();
    await store.close();
  });

  it('registerPrincipal without a session is a plain token registration', async () => {
    const { tokenId } = await session();
    const c = closes();
    const unregister = reg.registerPrincipal({ tokenId }, c.close);
    assert.equal(reg.size, 1);
    unregister();
    assert.equal(reg.size, 0);
  });

  it('revoke (closeToken of the token) closes a cookie connection once, and forgets its session key', async () => {
    const { tokenId, idHash } = await session();
    const c = closes();
    reg.registerPrincipal({ tokenId, sessionIdHash: idHash }, c.close);
    assert.equal(reg.size, 2, 'under both keys');
    assert.equal(reg.closeToken(tokenId), 1);
    assert.deepEqual(c.calls, [REVOKED_REASON]);
    assert.equal(reg.size, 0);
    assert.equal(reg.closeToken(webSessionKey(idHash), SIGNED_OUT_REASON), 0);
    assert.deepEqual(c.calls, [REVOKED_REASON], 'not closed twice');
  });

  it('sign-out (closeToken of the session key) closes it once; the token\'s other connections stay', async () => {
    const { tokenId, idHash } = await session();
    const mine = closes();
    const bearer = closes();
    reg.registerPrincipal({ tokenId, sessionIdHash: idHash }, mine.close);
    const unregisterBearer = reg.registerPrincipal({ tokenId }, bearer.close);
    assert.equal(reg.closeToken(webSessionKey(idHash), SIGNED_OUT_REASON), 1);
    assert.deepEqual(mine.calls, [SIGNED_OUT_REASON]);
    assert.deepEqual(bearer.calls, []);
    assert.equal(reg.size, 1);
    assert.equal(reg.closeToken(tokenId), 1);
    assert.deepEqual(mine.calls, [SIGNED_OUT_REASON]);
    assert.deepEqual(bearer.calls, [REVOKED_REASON]);
    unregisterBearer(); // harmless after the close
    assert.equal(reg.size, 0);
  });

  it('the returned function unregisters both keys', async () => {
    const { tokenId, idHash } = await session();
    const c = closes();
    const unregister = reg.registerPrincipal({ tokenId, sessionIdHash: idHash }, c.close);
    unregister();
    unregister();
    assert.equal(reg.size, 0);
    assert.equal(reg.closeToken(tokenId) + reg.closeToken(webSessionKey(idHash)), 0);
    assert.deepEqual(c.calls, []);
  });

  it('a session deleted in the store (sign-out elsewhere) is closed by the re-check; a live one is kept', async () => {
    const gone = await session();
    const kept = await session();
    const a = closes();
    const b = closes();
    reg.registerPrincipal({ tokenId: gone.tokenId, sessionIdHash: gone.idHash }, a.close);
    const unregisterB = reg.registerPrincipal({ tokenId: kept.tokenId, sessionIdHash: kept.idHash }, b.close);
    assert.equal(await store.deleteWebSession(gone.idHash), true);
    assert.equal(await a.next(), SIGNED_OUT_REASON);
    // Several check periods later the live one is still open.
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(b.calls, []);
    assert.deepEqual(a.calls, [SIGNED_OUT_REASON]);
    unregisterB();
    assert.equal(reg.size, 0);
  });

  it('an expired session is closed by the re-check (the registry\'s clock)', async () => {
    const s = await session(T0 + 60_000);
    const c = closes();
    reg.registerPrincipal({ tokenId: s.tokenId, sessionIdHash: s.idHash }, c.close);
    await new Promise((r) => setTimeout(r, 60));
    assert.deepEqual(c.calls, [], 'not expired yet');
    now = T0 + 60_000;
    assert.equal(await c.next(), SIGNED_OUT_REASON);
    now = T0;
  });

  it('a token revoked in the store closes its cookie connections (once) by the re-check', async () => {
    const s = await session();
    const c = closes();
    reg.registerPrincipal({ tokenId: s.tokenId, sessionIdHash: s.idHash }, c.close);
    assert.equal(await store.revokeToken(s.tokenId, T0 + 1), true);
    assert.equal(await c.next(), REVOKED_REASON);
    await new Promise((r) => setTimeout(r, 60));
    assert.deepEqual(c.calls, [REVOKED_REASON]);
    assert.equal(reg.size, 0);
  });
});
