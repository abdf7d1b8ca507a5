/**
 * A log reader that stops reading must not make the server read the rest of
 * the log into memory: the logs route waits for 'drain' on a full socket and
 * holds one page (LOG_PAGE_CHUNKS chunks) at a time. A real server process on
 * SQLite; the log (64 MiB) is written straight to the store, as the worker's
 * server would have.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { request, type IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { LOG_LIMITS } from '../../src/core/protocol.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { startCluster, type Cluster } from './harness.js';

const CHUNKS = 1024;
const LOG_BYTES = CHUNKS * LOG_LIMITS.maxChunkBytes; // 64 MiB

/** Resident memory of a process, in bytes (Linux). */
function rss(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  assert.ok(m, 'no VmRSS');
  return Number(m[1]) * 1024;
}

describe('e2e: log streams honour backpressure', () => {
  let c: Cluster;
  let taskId: string;
  before(async () => {
    c = await startCluster({ workers: 0 });
    const sub = await c.api.req('POST', '/v1/tasks', { command: 'true', requires: { probe: 'backpressure' } });
    assert.equal(sub.status, 201, sub.text);
    taskId = sub.body.task.id;
    const store = openSqliteStore(join(c.dir, 'drover.db'));
    try {
      const claim = await store.claimNext({ id: 'probe-worker', labels: { probe: 'backpressure' } }, Date.now(), 600_000);
      assert.ok(claim && claim.task.id === taskId);
      for (let seq = 0; seq < CHUNKS; seq += 64) {
        const chunks = Array.from({ length: 64 }, (_, i) => ({ seq: seq + i, stream: 'stdout' as const, data: Buffer.alloc(LOG_LIMITS.maxChunkBytes, 97 + ((seq + i) % 26)) }));
        assert.ok(await store.appendLogs(claim.attempt.id, claim.attempt.fencingToken, 'probe-worker', chunks, Date.now()));
      }
    } finally {
      await store.close();
    }
  });
  after(async () => c?.close());

  it('a paused reader holds the server at about a page; resumed, it gets every byte in order', async () => {
    const pid = c.server.child.pid!;
    const baseline = rss(pid);
    const u = new URL(c.url);
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = request({ hostname: u.hostname, port: u.port, path: `/v1/tasks/${taskId}/logs`, headers: { authorization: `Bearer ${c.api.token}` }, agent: false }, resolve);
      req.on('error', reject);
      req.end();
    });
    assert.equal(res.statusCode, 200);
    res.pause();
    // Nothing to await here: the point is what the server does NOT do while
    // the reader is paused. Give it time to do it if it were going to.
    await new Promise((r) => setTimeout(r, 1500));
    const grown = rss(pid) - baseline;
    assert.ok(grown < 32 * 1024 * 1024, `server grew by ${Math.round(grown / 1048576)} MiB for a paused reader of a ${LOG_BYTES / 1048576} MiB log`);

    let total = 0;
    let ordered = true;
    for await (const d of res as AsyncIterable<Buffer>) {
      for (let i = 0; i < d.length; i += 4096) {
        const at = total + i;
        const chunk = Math.floor(at / LOG_LIMITS.maxChunkBytes);
        if (d[i] !== 97 + (chunk % 26)) ordered = false;
      }
      total += d.length;
    }
    assert.equal(total, LOG_BYTES);
    assert.ok(ordered, 'bytes out of order');
  });
});
