/** Store contract, web sessions: dashboard sessions and one-time sign-in codes, bound to a token. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConflictError, NotFoundError } from '../../src/core/errors.js';
import { Harness, T0, type Opened } from './contract-harness.js';

const HOUR = 3_600_000;
/** sha256-hex-like values (the store keeps only hashes; it does not hash itself). */
const hash = (c: string) => c.repeat(64).slice(0, 64);

export function runWebSessionContract(name: string, open: Opened): void {
  describe(`Store contract, web sessions: ${name}`, () => {
    const h = Harness.use(open);
    const token = (id: string, user = 'alice') => h.store.createToken({ id, name: id, user, role: 'user', secretHash: hash(id.slice(-1)), createdAt: T0 });

    it('create, get until it expires, delete (sign-out)', async () => {
      await token('tok1');
      const rec = { idHash: hash('a'), tokenId: 'tok1', createdAt: T0, expiresAt: T0 + 12 * HOUR };
      await h.store.createWebSession(rec);
      assert.deepEqual(await h.store.getWebSession(hash('a'), T0), rec);
      assert.deepEqual(await h.store.getWebSession(hash('a'), T0 + 12 * HOUR - 1), rec);
      // Expired at its expiresAt (exclusive), without anyone deleting it.
      assert.equal(await h.store.getWebSession(hash('a'), T0 + 12 * HOUR), null);
      assert.equal(await h.store.getWebSession(hash('b'), T0), null);
      assert.equal(await h.store.deleteWebSession(hash('a')), true);
      assert.equal(await h.store.deleteWebSession(hash('a')), false);
      assert.equal(await h.store.getWebSession(hash('a'), T0), null);
    });

    it('a session needs a known token; an id hash is used once', async () => {
      await assert.rejects(h.store.createWebSession({ idHash: hash('a'), tokenId: 'nope', createdAt: T0, expiresAt: T0 + HOUR }), NotFoundError);
      await token('tok1');
      await h.store.createWebSession({ idHash: hash('a'), tokenId: 'tok1', createdAt: T0, expiresAt: T0 + HOUR });
      await assert.rejects(h.store.createWebSession({ idHash: hash('a'), tokenId: 'tok1', createdAt: T0 + 1, expiresAt: T0 + 2 * HOUR }), ConflictError);
      assert.equal((await h.store.getWebSession(hash('a'), T0))?.expiresAt, T0 + HOUR);
    });

    it('deleteWebSessionsOfToken ends every session of that token only', async () => {
      await token('tok1');
      await token('tok2', 'bob');
      for (const [c, tok] of [['a', 'tok1'], ['b', 'tok1'], ['c', 'tok2']] as const) {
        await h.store.createWebSession({ idHash: hash(c), tokenId: tok, createdAt: T0, expiresAt: T0 + HOUR });
      }
      assert.equal(await h.store.deleteWebSessionsOfToken('tok1'), 2);
      assert.equal(await h.store.deleteWebSessionsOfToken('tok1'), 0);
      assert.equal(await h.store.getWebSession(hash('a'), T0), null);
      assert.equal(await h.store.getWebSession(hash('b'), T0), null);
      assert.equal((await h.store.getWebSession(hash('c'), T0))?.tokenId, 'tok2');
    });

    it('a sign-in code is single use and expires', async () => {
      await token('tok1');
      await h.store.createLoginCode(hash('1'), 'tok1', T0 + 600_000);
      await h.store.createLoginCode(hash('2'), 'tok1', T0 + 600_000);
      assert.equal(await h.store.consumeLoginCode(hash('1'), T0 + 1), 'tok1');
      assert.equal(await h.store.consumeLoginCode(hash('1'), T0 + 2), null, 'used');
      assert.equal(await h.store.consumeLoginCode(hash('9'), T0), null, 'unknown');
      // Expired at its expiresAt (exclusive), and an expired code is not consumed by the failed attempt.
      assert.equal(await h.store.consumeLoginCode(hash('2'), T0 + 600_000), null, 'expired');
      assert.equal(await h.store.consumeLoginCode(hash('2'), T0 + 599_999), 'tok1');
      await assert.rejects(h.store.createLoginCode(hash('3'), 'nope', T0 + 600_000), NotFoundError);
      await h.store.createLoginCode(hash('4'), 'tok1', T0 + 600_000);
      await assert.rejects(h.store.createLoginCode(hash('4'), 'tok1', T0 + 700_000), ConflictError);
    });

    it('concurrent uses of one code: exactly one gets the token', async () => {
      await token('tok1');
      await h.store.createLoginCode(hash('1'), 'tok1', T0 + 600_000);
      const got = await Promise.all(Array.from({ length: 8 }, () => h.store.consumeLoginCode(hash('1'), T0 + 1)));
      assert.deepEqual(
        got.filter((g) => g !== null),
        ['tok1'],
      );
    });

    it('pruneWebSessions deletes expired sessions and codes only', async () => {
      await token('tok1');
      await h.store.createWebSession({ idHash: hash('a'), tokenId: 'tok1', createdAt: T0, expiresAt: T0 + 10 });
      await h.store.createWebSession({ idHash: hash('b'), tokenId: 'tok1', createdAt: T0, expiresAt: T0 + 20 });
      await h.store.createLoginCode(hash('1'), 'tok1', T0 + 10);
      await h.store.createLoginCode(hash('2'), 'tok1', T0 + 20);
      assert.equal(await h.store.pruneWebSessions(T0 + 10), 2);
      assert.equal(await h.store.pruneWebSessions(T0 + 10), 0);
      assert.equal((await h.store.getWebSession(hash('b'), T0 + 19))?.idHash, hash('b'));
      assert.equal(await h.store.consumeLoginCode(hash('2'), T0 + 19), 'tok1');
      assert.equal(await h.store.pruneWebSessions(T0 + 20), 1);
    });
  });
}
