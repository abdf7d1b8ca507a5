/** Store contract, tokens: create, read, revoke, and lastUsedAt at most once a minute. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConflictError } from '../../src/core/errors.js';
import { TOKEN_TOUCH_INTERVAL_MS } from '../../src/store/tokens.js';
import { Harness, raceBetweenServers, T0, type ContractHooks, type Opened } from './contract-harness.js';

export function runTokenContract(name: string, open: Opened, hooks: ContractHooks = {}): void {
  describe(`Store contract, tokens: ${name}`, () => {
    const h = Harness.use(open, hooks);

    it('create, get, list, revoke, count', async () => {
      assert.equal(await h.store.countTokens(), 0);
      assert.deepEqual(await h.store.listTokens(), []);
      const a = await h.store.createToken({ id: 'tok_a', name: 'admin bootstrap', user: 'admin', role: 'admin', secretHash: 'a'.repeat(64), createdAt: T0 });
      assert.deepEqual(a, { id: 'tok_a', name: 'admin bootstrap', user: 'admin', role: 'admin', secretHash: 'a'.repeat(64), createdAt: T0, revokedAt: null, lastUsedAt: null });
      const w = await h.store.createToken({ id: 'tok_w', name: 'agents', user: 'admin', role: 'worker', secretHash: 'b'.repeat(64), createdAt: T0 + 1 });
      assert.deepEqual(await h.store.getToken('tok_a'), a);
      assert.equal(await h.store.getToken('nope'), null);
      assert.deepEqual(await h.store.listTokens(), [a, w]);
      assert.equal(await h.store.countTokens(), 2);

      assert.equal(await h.store.revokeToken('tok_w', T0 + 10), true);
      assert.equal((await h.store.getToken('tok_w'))?.revokedAt, T0 + 10);
      assert.equal(await h.store.revokeToken('tok_w', T0 + 20), false);
      assert.equal((await h.store.getToken('tok_w'))?.revokedAt, T0 + 10);
      assert.equal(await h.store.revokeToken('nope', T0 + 20), false);
      assert.equal(await h.store.countTokens(), 2);
      assert.equal((await h.store.getToken('tok_a'))?.revokedAt, null);
    });

    it('createFirstToken: only into a store without any token (a revoked one counts)', async () => {
      const first = await h.store.createFirstToken({ id: 'tok_1', name: 'admin', user: 'admin', role: 'admin', secretHash: '1'.repeat(64), createdAt: T0 });
      assert.equal(first?.id, 'tok_1');
      assert.equal(await h.store.createFirstToken({ id: 'tok_2', name: 'admin', user: 'admin', role: 'admin', secretHash: '2'.repeat(64), createdAt: T0 }), null);
      await h.store.revokeToken('tok_1', T0 + 1);
      assert.equal(await h.store.createFirstToken({ id: 'tok_3', name: 'admin', user: 'admin', role: 'admin', secretHash: '3'.repeat(64), createdAt: T0 }), null);
      assert.deepEqual((await h.store.listTokens()).map((t) => t.id), ['tok_1']);
    });

    raceBetweenServers(hooks, 'createFirstToken from two servers at once: exactly one token', async (sibling) => {
      const other = await sibling(h.store);
      try {
        // Four at once, two on each handle (pool connections of their own).
        const made = await Promise.all(
          [h.store, other, h.store, other].map((s, i) => s.createFirstToken({ id: `race_${i}`, name: 'admin', user: 'admin', role: 'admin', secretHash: String(i).padEnd(64, 'x'), createdAt: T0 })),
        );
        assert.equal(made.filter((m) => m !== null).length, 1);
        assert.equal(await h.store.countTokens(), 1);
      } finally {
        await other.close();
      }
    });

    it('rejects a duplicate id with ConflictError', async () => {
      await h.store.createToken({ id: 'tok_a', name: 'x', user: 'u', role: 'user', secretHash: 'c'.repeat(64), createdAt: T0 });
      await assert.rejects(h.store.createToken({ id: 'tok_a', name: 'y', user: 'u', role: 'user', secretHash: 'd'.repeat(64), createdAt: T0 }), ConflictError);
      assert.equal(await h.store.countTokens(), 1);
    });

    it('touchToken writes lastUsedAt at most once per interval', async () => {
      await h.store.createToken({ id: 'tok', name: 'n', user: 'u', role: 'user', secretHash: 'e'.repeat(64), createdAt: T0 });
      await h.store.createToken({ id: 'other', name: 'n', user: 'u', role: 'user', secretHash: 'f'.repeat(64), createdAt: T0 });
      const used = async () => (await h.store.getToken('tok'))?.lastUsedAt;
      await h.store.touchToken('tok', T0 + 100);
      assert.equal(await used(), T0 + 100, 'the first use is written');
      await h.store.touchToken('tok', T0 + 101);
      await h.store.touchToken('tok', T0 + 100 + TOKEN_TOUCH_INTERVAL_MS - 1);
      assert.equal(await used(), T0 + 100, 'uses within the interval are not written');
      await h.store.touchToken('tok', T0 + 100 + TOKEN_TOUCH_INTERVAL_MS);
      assert.equal(await used(), T0 + 100 + TOKEN_TOUCH_INTERVAL_MS, 'a use one interval later is');
      // An earlier `now` (another server's clock behind) never moves it back.
      await h.store.touchToken('tok', T0);
      assert.equal(await used(), T0 + 100 + TOKEN_TOUCH_INTERVAL_MS);
      assert.equal((await h.store.getToken('other'))?.lastUsedAt, null, 'only that token');
      await h.store.touchToken('nope', T0);
      assert.equal(await h.store.getToken('nope'), null);
    });

    it('concurrent touches of one token write it once', async () => {
      await h.store.createToken({ id: 'tok', name: 'n', user: 'u', role: 'user', secretHash: 'e'.repeat(64), createdAt: T0 });
      await Promise.all(Array.from({ length: 6 }, (_, i) => h.store.touchToken('tok', T0 + 1000 + i)));
      const at = (await h.store.getToken('tok'))?.lastUsedAt;
      assert.ok(at !== null && at !== undefined && at >= T0 + 1000 && at <= T0 + 1005);
      await h.store.touchToken('tok', T0 + 2000);
      assert.equal((await h.store.getToken('tok'))?.lastUsedAt, at);
    });
  });
}
