/**
 * Fault 6: a network partition between one agent and the server.
 *
 * Agent A runs in a network namespace made for this case (`ip netns add`),
 * joined to the host by a veth pair with link-local addresses
 * (169.254.X.Y/30) that exist only on the two ends created here. The server
 * listens on the host end's address; agent B and the test reach it from the
 * host. The partition is `ip link set <A's end> down` inside A's namespace:
 * from then on A's packets go nowhere and the server's to A are dropped, and
 * neither side sees its TCP connection close. Healing sets it up again.
 * Everything (namespace, veth, processes) is removed in `after`.
 *
 * Two tasks run on A when the partition starts: `long` (its first attempt
 * sleeps 60 s) and `ender` (its first attempt ends during the partition, so
 * A holds an exit report the server must never accept).
 *
 * Pass criterion:
 * - both tasks run again on B within lease + MARGIN_MS of the partition, their
 *   first attempts ended `lost` without using a retry;
 * - A stops `long`'s first process by itself while still partitioned, within
 *   lease + MARGIN_MS of the partition (self-fencing: kill(pid, 0) → ESRCH);
 * - after the partition heals, A reconnects; nothing it reports changes the
 *   tasks: each ends `succeeded` with exactly one succeeded attempt, the
 *   result names the new attempt, and no first-attempt process is running.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startCluster, type Cluster } from '../e2e/harness.js';
import { FAULTS_SKIP, FAST_SERVER_ARGS, LEASE_MS, alive, call, closeCluster, pidScript, procState, readPids, secs, settle, taskDetail, until, waitFileSh } from './support.js';

const MARGIN_MS = 2_000;

function ip(...args: string[]): string {
  return execFileSync('ip', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** A free link-local /30: host end .Y+1, namespace end .Y+2. */
function pickSubnet(): { host: string; peer: string } {
  for (let i = 0; i < 50; i++) {
    const x = randomInt(1, 255);
    if (x === 169) continue; // 169.254.169.254 is the cloud metadata address
    const y = randomInt(0, 64) * 4;
    const net = `169.254.${x}.${y}`;
    if (ip('-4', 'addr', 'show', 'to', `${net}/30`).trim() === '' && !ip('-4', 'route', 'show', 'to', 'match', `${net}/30`).includes(`169.254.${x}.`)) {
      return { host: `169.254.${x}.${y + 1}`, peer: `169.254.${x}.${y + 2}` };
    }
  }
  throw new Error('no free 169.254.X.Y/30 found');
}

describe('faults: network partition of one agent', { skip: FAULTS_SKIP }, () => {
  const tag = randomBytes(3).toString('hex');
  const ns = `drvf${tag}`;
  const hostIf = `drvh${tag}`;
  const nsIf = `drvn${tag}`;
  let nsMade = false;
  let vethMade = false;
  let c: Cluster | undefined;
  let pids = '';
  after(async () => {
    await closeCluster(c, pids || undefined).catch(() => {});
    const errors: string[] = [];
    if (vethMade) {
      try {
        ip('link', 'del', hostIf); // removes both ends
      } catch (e) {
        errors.push(String(e));
      }
    }
    if (nsMade) {
      try {
        ip('netns', 'del', ns);
      } catch (e) {
        errors.push(String(e));
      }
    }
    if (errors.length) throw new Error(`cleanup failed: ${errors.join('; ')}`);
  });

  it('requeues after the lease, the partitioned agent stops its own attempts, and after healing nothing old runs or counts', async (t) => {
    const { host, peer } = pickSubnet();
    ip('netns', 'add', ns);
    nsMade = true;
    ip('link', 'add', hostIf, 'type', 'veth', 'peer', 'name', nsIf, 'netns', ns);
    vethMade = true;
    ip('addr', 'add', `${host}/30`, 'dev', hostIf);
    ip('link', 'set', hostIf, 'up');
    ip('-n', ns, 'addr', 'add', `${peer}/30`, 'dev', nsIf);
    ip('-n', ns, 'link', 'set', nsIf, 'up');
    ip('-n', ns, 'link', 'set', 'lo', 'up');
    t.diagnostic(`namespace ${ns}: agent a at ${peer}, server at ${host}`);

    c = await startCluster({ workers: 0, host, serverArgs: FAST_SERVER_ARGS });
    const cl = c;
    pids = join(cl.dir, 'pids');
    mkdirSync(pids);
    await cl.startWorker({ id: 'a', slots: 2, prefix: ['ip', 'netns', 'exec', ns] });
    const go = join(cl.dir, 'go');
    const long = await cl.api.submit({ name: 'long', script: pidScript(pids, 'if [ "$DROVER_ATTEMPT" = 1 ]; then exec sleep 60; fi; exec sleep 0.5') });
    const ender = await cl.api.submit({ name: 'ender', script: pidScript(pids, `if [ "$DROVER_ATTEMPT" = 1 ]; then ${waitFileSh(go)}; fi; exec sleep 0.5`) });
    const first = await until('both first attempts running on a', () => {
      const p = readPids(pids);
      const l = p.find((x) => x.taskId === long && x.attempt === 1);
      const e = p.find((x) => x.taskId === ender && x.attempt === 1);
      return l && e ? { long: l.pid, ender: e.pid } : null;
    }, 15_000);
    for (const id of [long, ender]) assert.equal((await taskDetail(cl.api, id)).attempts[0].workerId, 'a');
    await cl.startWorker({ id: 'b', slots: 2 });
    const aBefore = (await call(cl.api, 'GET', '/v1/workers')).body.workers.find((w: any) => w.id === 'a');

    // Partition.
    ip('-n', ns, 'link', 'set', nsIf, 'down');
    const cutAt = Date.now();
    writeFileSync(go, ''); // `ender`'s first attempt ends now, unreportable

    let requeuedMs = -1;
    let selfFencedMs = -1;
    await until(
      async () => `requeue (${requeuedMs} ms) and a's self-fencing (${selfFencedMs} ms): ${JSON.stringify((await Promise.all([long, ender].map((id) => taskDetail(cl.api, id)))).map((d) => d.attempts))}; long pid ${first.long} state ${procState(first.long)}`,
      async () => {
        if (requeuedMs < 0) {
          const ds = await Promise.all([long, ender].map((id) => taskDetail(cl.api, id)));
          if (ds.every((d) => d.attempts[0]?.state === 'lost' && d.attempts.length >= 2)) requeuedMs = Date.now() - cutAt;
        }
        if (selfFencedMs < 0 && !alive(first.long)) selfFencedMs = Date.now() - cutAt;
        return requeuedMs >= 0 && selfFencedMs >= 0;
      },
      LEASE_MS + MARGIN_MS + 10_000,
      25,
    );
    t.diagnostic(`partitioned: tasks running again on b after ${secs(requeuedMs)}, a stopped its attempt after ${secs(selfFencedMs)} (lease ${secs(LEASE_MS)})`);
    assert.ok(requeuedMs <= LEASE_MS + MARGIN_MS, `requeued after ${secs(requeuedMs)}, bound ${secs(LEASE_MS + MARGIN_MS)}`);
    assert.ok(selfFencedMs <= LEASE_MS + MARGIN_MS, `the partitioned agent stopped its attempt after ${secs(selfFencedMs)}, bound ${secs(LEASE_MS + MARGIN_MS)}`);
    const healedWhileRunning = (await taskDetail(cl.api, long)).task.state === 'running';

    // Heal: A comes back on a new connection.
    ip('-n', ns, 'link', 'set', nsIf, 'up');
    const healedAt = Date.now();
    await until('a to reconnect after the partition healed', async () => {
      const w = (await call(cl.api, 'GET', '/v1/workers')).body.workers.find((x: any) => x.id === 'a');
      return w && w.state === 'connected' && w.connectedAt !== aBefore.connectedAt;
    }, 20_000);
    t.diagnostic(`a reconnected ${secs(Date.now() - healedAt)} after healing (long still running on b then: ${healedWhileRunning})`);

    const done = await settle(cl.api, [long, ender], 30_000);
    for (const id of [long, ender]) {
      const task = done.get(id);
      const d = await taskDetail(cl.api, id);
      const ctx = `${id === long ? 'long' : 'ender'}: ${JSON.stringify({ task, attempts: d.attempts, events: d.events })}`;
      assert.equal(task.state, 'succeeded', ctx);
      assert.deepEqual([d.attempts[0].workerId, d.attempts[0].state], ['a', 'lost'], ctx);
      assert.equal(d.attempts.filter((x) => x.state === 'succeeded').length, 1, ctx);
      const won = d.attempts.find((x) => x.state === 'succeeded');
      assert.equal(won.workerId, 'b', ctx);
      assert.equal(task.result.attempt, won.number, ctx);
      assert.equal(task.retriesUsed, 0, ctx);
      assert.equal(d.events.filter((e) => e.reason === 'attempt_succeeded').length, 1, ctx); // transitions into succeeded; fenced_report events keep from = to
    }
    const leftover = readPids(pids).filter((p) => p.attempt === 1 && alive(p.pid) && procState(p.pid) !== 'Z');
    assert.deepEqual(leftover, [], 'first-attempt processes still running after the partition healed');
  });
});
