/**
 * A cron firer that stalls INSIDE its firing transaction (its process paused
 * by SIGSTOP, a VM freeze, a long GC) on PostgreSQL. fireSchedule holds the
 * `leaders` row FOR SHARE from its first statement to COMMIT, so that a
 * takeover waits for a firing it could not see (schedules.ts, step 1); the
 * contract here is that such a stalled transaction cannot hold the row past
 * the lease's expiry: the database ends it, another server takes the lease
 * within its TTL (plus slack), the stalled firing changes nothing, and when
 * its server resumes its retry is refused (`not_leader`).
 *
 * The stall is made deterministic by a TCP proxy between the firer's store
 * and PostgreSQL that stops forwarding (both ways) right after the firer's
 * lease check went out: from the database's side exactly what a paused
 * process looks like (an open connection, idle in transaction).
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, describe, it } from 'node:test';
import { firstFireAfter } from '../../src/core/cron/next-fire.js';
import { parseSchedule } from '../../src/core/cron/schedule.js';
import { newTaskId } from '../../src/core/ids.js';
import { openPostgresStore } from '../../src/store/postgres/postgres-store.js';
import type { FireResult } from '../../src/store/schedules.js';
import { createTestDatabase, dropAllTestDatabases, PG_SKIP_REASON, requirePostgres } from '../support/postgres.js';
import { makeSpec } from './contract.js';

const PG = await requirePostgres();
const LEASE = 'cron';
const TTL_MS = 2000;
/** Scheduling delay on a loaded machine on top of the lease's own bound. */
const SLACK_MS = 1500;

after(async () => {
  if (PG) await dropAllTestDatabases();
});

/**
 * A proxy to PostgreSQL that, once armed, forwards the first client chunk
 * matching `trigger` and then stops forwarding on that connection in both
 * directions, as if the client process had stopped. Other connections go on.
 */
async function startStallProxy(target: URL, trigger: (chunk: string) => boolean): Promise<{ url(db: URL): string; stalled: Promise<void>; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  let armed = true;
  let onStall!: () => void;
  const stalled = new Promise<void>((resolve) => (onStall = resolve));
  const srv = net.createServer((down) => {
    const up = net.connect(Number(target.port || 5432), target.hostname);
    sockets.add(down).add(up);
    let frozen = false;
    down.on('data', (d: Buffer) => {
      if (frozen) return;
      up.write(d);
      if (armed && trigger(d.toString('latin1'))) {
        armed = false;
        frozen = true;
        onStall();
      }
    });
    up.on('data', (d: Buffer) => {
      if (!frozen) down.write(d);
    });
    for (const s of [down, up]) {
      s.on('error', () => {});
      s.on('close', () => {
        down.destroy();
        up.destroy();
        sockets.delete(s);
      });
    }
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const port = (srv.address() as net.AddressInfo).port;
  return {
    url(db: URL) {
      const u = new URL(db);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    stalled,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => srv.close(() => resolve()));
    },
  };
}

describe('PostgreSQL: a cron firer stalled inside its firing transaction', { skip: PG ? false : PG_SKIP_REASON }, () => {
  it('does not hold the lease row past the lease: another server takes over within the TTL, the stalled firing commits nothing and is refused on resume', async (t) => {
    const db = await createTestDatabase();
    // The firer's lease check is the only statement naming the leaders table FOR SHARE.
    const proxy = await startStallProxy(new URL(db.url), (chunk) => chunk.includes('FROM leaders') && chunk.includes('FOR SHARE'));
    const a = openPostgresStore(proxy.url(new URL(db.url)), { poolSize: 2, applicationName: 'drover-test-stalled' });
    const b = openPostgresStore(db.url, { poolSize: 2 });
    let firing: Promise<FireResult | Error> | null = null;
    try {
      const now = Date.now();
      const s = parseSchedule({ expr: '* * * * * *' });
      const rec = await b.createSchedule(newTaskId(now), 'u', { name: 'stall', expr: s.expr, tz: s.tz, overlap: 'allow', catchup: 'all', maxCatchup: 10, template: makeSpec({ name: 'stall' }) }, now - 5000, firstFireAfter(s, now - 5000));
      const slot = rec.nextFireAt!;
      const epochA = await a.acquireLeadershipEpoch(LEASE, 'a', now, TTL_MS);
      assert.equal(epochA, 1);
      const leasedAt = Date.now();

      firing = a
        .fireSchedule({ scheduleId: rec.id, leader: { name: LEASE, holder: 'a', epoch: epochA! }, expectedLastSlotAt: null, fire: [{ slot, taskId: newTaskId(now) }], skipped: [], lastSlotAt: slot, nextFireAt: slot + 1000, now })
        .catch((e: Error) => e);
      await proxy.stalled;

      // b tries as its tick would (every 100 ms here); each try may wait on the stalled row lock.
      const deadline = leasedAt + TTL_MS + SLACK_MS;
      let epochB: number | null = null;
      while (epochB === null) {
        const left = deadline - Date.now();
        assert.ok(left > 0, `b took the lease within the TTL (${TTL_MS} ms) + ${SLACK_MS} ms`);
        epochB = await Promise.race([
          b.acquireLeadershipEpoch(LEASE, 'b', Date.now(), TTL_MS),
          new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`b's lease take still waiting after ${Date.now() - leasedAt} ms: the stalled firing holds the leaders row`)), left)),
        ]);
        if (epochB === null) await new Promise((r) => setTimeout(r, 100));
      }
      const tookMs = Date.now() - leasedAt;
      assert.equal(epochB, 2);
      t.diagnostic(`b took the lease ${tookMs} ms after a took it (TTL ${TTL_MS} ms) while a's firing was stalled`);
      assert.ok(tookMs >= TTL_MS - 100, `not before the lease expired (${tookMs} ms)`);

      // The stalled firing committed nothing: the slot is free, and b fires it once.
      assert.equal((await b.getSchedule(rec.id))!.lastSlotAt, null);
      const fired = await b.fireSchedule({ scheduleId: rec.id, leader: { name: LEASE, holder: 'b', epoch: epochB }, expectedLastSlotAt: null, fire: [{ slot, taskId: newTaskId(Date.now()) }], skipped: [], lastSlotAt: slot, nextFireAt: slot + 1000, now: Date.now() });
      assert.equal(fired.ok, true);

      // a "resumes": its connection was ended by the database; the store retries the
      // transaction on a new one, whose lease check refuses it.
      const resumed = await firing;
      assert.deepEqual(resumed, { ok: false, reason: 'not_leader' }, String(resumed));
      const runs = await b.scheduleRuns(rec.id, 10);
      assert.deepEqual(runs.map((r) => [r.slotAt, r.outcome]), [[slot, 'fired']]);
    } finally {
      await proxy.close();
      await firing;
      await a.close();
      await b.close();
      await db.drop();
    }
  });
});
