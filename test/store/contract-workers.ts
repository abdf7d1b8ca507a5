/** Store contract, workers: registration bound to a token, heartbeats, disconnects, drain. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { WorkerRecord } from '../../src/store/store.js';
import { Harness, T0, type Opened } from './contract-harness.js';

export function runWorkerContract(name: string, open: Opened): void {
  describe(`Store contract, workers: ${name}`, () => {
    const h = Harness.use(open);
    const worker = (id: string, o: Partial<Omit<WorkerRecord, 'state' | 'id' | 'drainingAt'>> = {}): Omit<WorkerRecord, 'state' | 'drainingAt'> => ({
      id,
      hostname: 'host',
      slots: 1,
      labels: {},
      connectedAt: T0,
      lastSeenAt: T0,
      ...o,
    });
    const token = (id: string, secret: string) => h.store.createToken({ id, name: id, user: 'ops', role: 'worker', secretHash: secret.repeat(64), createdAt: T0 });
    const get = async (id: string) => (await h.store.listWorkers()).find((w) => w.id === id);

    it('register, list, touch, mark disconnected, re-register', async () => {
      await token('tok1', 'a');
      assert.equal(await h.store.registerWorker(worker('w2', { hostname: 'beta', slots: 2, labels: { os: 'linux' } }), 'tok1'), true);
      assert.equal(await h.store.registerWorker(worker('w1', { hostname: 'alpha', slots: 4, connectedAt: T0 + 1, lastSeenAt: T0 + 1 }), 'tok1'), true);
      assert.deepEqual(await h.store.listWorkers(), [
        { id: 'w1', hostname: 'alpha', slots: 4, labels: {}, connectedAt: T0 + 1, lastSeenAt: T0 + 1, state: 'connected', drainingAt: null },
        { id: 'w2', hostname: 'beta', slots: 2, labels: { os: 'linux' }, connectedAt: T0, lastSeenAt: T0, state: 'connected', drainingAt: null },
      ]);
      await h.store.touchWorker('w1', T0 + 30);
      await h.store.touchWorker('unknown', T0 + 30);
      assert.equal((await get('w1'))?.lastSeenAt, T0 + 30);
      assert.equal((await get('w2'))?.lastSeenAt, T0);
      await h.store.markWorkerDisconnected('w2', T0 + 50);
      await h.store.markWorkerDisconnected('unknown', T0 + 50);
      const w2 = await get('w2');
      assert.deepEqual([w2?.state, w2?.lastSeenAt], ['disconnected', T0 + 50]);
      assert.equal(await h.store.registerWorker(worker('w2', { hostname: 'beta2', slots: 8, labels: { os: 'linux', gpu: '1' }, connectedAt: T0 + 100, lastSeenAt: T0 + 100 }), 'tok1'), true);
      assert.deepEqual(await get('w2'), {
        id: 'w2',
        hostname: 'beta2',
        slots: 8,
        labels: { os: 'linux', gpu: '1' },
        connectedAt: T0 + 100,
        lastSeenAt: T0 + 100,
        state: 'connected',
        drainingAt: null,
      });
      assert.equal((await h.store.listWorkers()).length, 2);
    });

    it('a registration that says draining keeps the drain (its first time); any other ends it', async () => {
      await token('tok1', 'a');
      assert.equal(await h.store.registerWorker(worker('w1'), 'tok1'), true);
      assert.equal(await h.store.requestDrain('w1', 'test', T0 + 5), true);
      assert.equal((await get('w1'))?.drainingAt, T0 + 5);
      // The drained agent moves to another server: its hello says draining.
      assert.equal(await h.store.registerWorker(worker('w1', { connectedAt: T0 + 9, lastSeenAt: T0 + 9 }), 'tok1', true), true);
      assert.equal((await get('w1'))?.drainingAt, T0 + 5);
      // A new worker that starts draining (SIGTERM before its first server) is draining from its hello.
      assert.equal(await h.store.registerWorker(worker('w2', { connectedAt: T0 + 20, lastSeenAt: T0 + 20 }), 'tok1', true), true);
      assert.equal((await get('w2'))?.drainingAt, T0 + 20);
      // A restarted agent says hello without it: taking work again.
      assert.equal(await h.store.registerWorker(worker('w1', { connectedAt: T0 + 30, lastSeenAt: T0 + 30 }), 'tok1'), true);
      assert.equal((await get('w1'))?.drainingAt, null);
    });

    it('a worker id is bound to the token that first registered it', async () => {
      await token('tok1', 'a');
      await token('tok2', 'b');
      assert.equal(await h.store.registerWorker(worker('w1', { hostname: 'first' }), 'tok1'), true);
      // Another live token cannot take the id over, connected or not; nothing changes.
      assert.equal(await h.store.registerWorker(worker('w1', { hostname: 'impostor', connectedAt: T0 + 5, lastSeenAt: T0 + 5 }), 'tok2'), false);
      assert.equal((await get('w1'))?.hostname, 'first');
      await h.store.markWorkerDisconnected('w1', T0 + 6);
      assert.equal(await h.store.registerWorker(worker('w1', { hostname: 'impostor', connectedAt: T0 + 7, lastSeenAt: T0 + 7 }), 'tok2'), false);
      assert.deepEqual([(await get('w1'))?.hostname, (await get('w1'))?.state], ['first', 'disconnected']);
      // The same token re-registers (a reconnect).
      assert.equal(await h.store.registerWorker(worker('w1', { hostname: 'again', connectedAt: T0 + 8, lastSeenAt: T0 + 8 }), 'tok1'), true);
      assert.deepEqual([(await get('w1'))?.hostname, (await get('w1'))?.state], ['again', 'connected']);
      // Once the bound token is revoked, another token may take the id, and is then the one bound.
      await h.store.revokeToken('tok1', T0 + 9);
      assert.equal(await h.store.registerWorker(worker('w1', { hostname: 'new owner', connectedAt: T0 + 10, lastSeenAt: T0 + 10 }), 'tok2'), true);
      assert.equal((await get('w1'))?.hostname, 'new owner');
      await token('tok3', 'c');
      assert.equal(await h.store.registerWorker(worker('w1', { hostname: 'third' }), 'tok3'), false);
      assert.equal(await h.store.registerWorker(worker('w1', { hostname: 'still tok2' }), 'tok2'), true);
    });

    it('concurrent registrations of one new id by two tokens: exactly one wins', async () => {
      await token('tok1', 'a');
      await token('tok2', 'b');
      const wins = await Promise.all([
        h.store.registerWorker(worker('w1', { hostname: 'one' }), 'tok1'),
        h.store.registerWorker(worker('w1', { hostname: 'two' }), 'tok2'),
      ]);
      assert.equal(wins.filter(Boolean).length, 1);
      assert.equal((await get('w1'))?.hostname, wins[0] ? 'one' : 'two');
    });

    it('requestDrain is false for an unknown worker', async () => {
      await token('tok1', 'a');
      assert.equal(await h.store.requestDrain('nope', 'maintenance', T0), false);
      await h.store.registerWorker(worker('w1'), 'tok1');
      assert.equal(await h.store.requestDrain('w1', 'maintenance', T0), true);
    });

    it('requestDrain records drainingAt (the first request’s time); a registration clears it', async () => {
      await token('tok1', 'a');
      await h.store.registerWorker(worker('w1'), 'tok1');
      await h.store.registerWorker(worker('w2'), 'tok1');
      assert.equal((await get('w1'))?.drainingAt, null);
      assert.equal(await h.store.requestDrain('w1', 'maintenance', T0 + 5), true);
      assert.equal((await get('w1'))?.drainingAt, T0 + 5);
      assert.equal((await get('w2'))?.drainingAt, null);
      // Asked again: still draining since the first request.
      assert.equal(await h.store.requestDrain('w1', 'again', T0 + 9), true);
      assert.equal((await get('w1'))?.drainingAt, T0 + 5);
      // Heartbeats and the disconnect keep it; the worker that says hello again is not draining.
      await h.store.touchWorker('w1', T0 + 10);
      await h.store.markWorkerDisconnected('w1', T0 + 11);
      assert.deepEqual([(await get('w1'))?.state, (await get('w1'))?.drainingAt], ['disconnected', T0 + 5]);
      assert.equal(await h.store.registerWorker(worker('w1', { connectedAt: T0 + 20, lastSeenAt: T0 + 20 }), 'tok1'), true);
      assert.deepEqual([(await get('w1'))?.state, (await get('w1'))?.drainingAt], ['connected', null]);
      // A registration refused (another live token) changes nothing, drainingAt included.
      await token('tok2', 'b');
      await h.store.requestDrain('w1', 'maintenance', T0 + 30);
      assert.equal(await h.store.registerWorker(worker('w1'), 'tok2'), false);
      assert.equal((await get('w1'))?.drainingAt, T0 + 30);
    });
  });
}
