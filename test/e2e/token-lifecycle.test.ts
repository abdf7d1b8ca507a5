/**
 * Tokens against a real server process on SQLite: a revoke ends the token's
 * open log streams within a second, whether it went through this server's
 * API or straight to the store (as another server of the same database would
 * write it); `lastUsedAt` is written when a token is used and shown by
 * `drover token ls`.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { WebSocket } from 'ws';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { createTestDatabase, PG_SKIP_REASON, requirePostgres, type TestDatabase } from '../support/postgres.js';
import { Api, BIN, startCluster, startProc, type Cluster } from './harness.js';
import { openHeld } from './web-auth-client.js';

const PG = await requirePostgres();

/** The bound the issue sets: a revoked token's streams are gone within a second. */
const REVOKE_BOUND_MS = 1000;


/** Opens `GET path` and resolves once the status line is in, leaving the body streaming. */
/** Opens `GET path` with a bearer token, the body left streaming. */
const openStream = (base: string, path: string, token: string) => openHeld(base, path, { authorization: `Bearer ${token}` });

/** A worker WebSocket with `token`, open; `closed` resolves with when it closed. */
async function openWorkerSocket(base: string, token: string): Promise<{ closed: Promise<{ code: number; at: number }> }> {
  const ws = new WebSocket(`${base.replace(/^http/, 'ws')}/v1/workers/connect`, { headers: { authorization: `Bearer ${token}` } });
  const closed = new Promise<{ code: number; at: number }>((resolve) => ws.once('close', (code) => resolve({ code, at: Date.now() })));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
    ws.once('error', reject);
  });
  return { closed };
}

function drover(c: Cluster, args: string[], token = c.api.token): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, DROVER_URL: c.url, DROVER_TOKEN: token }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

describe('e2e: token lifecycle', () => {
  let c: Cluster;
  before(async () => {
    // No worker: a submitted task stays waiting, so its followed log stays open until something ends it.
    c = await startCluster({ workers: 0 });
  });
  after(async () => c?.close());

  const newUser = async (name: string) => {
    const r = await c.api.req('POST', '/v1/tokens', { name, role: 'user' });
    assert.equal(r.status, 201, r.text);
    return { id: r.body.token.id as string, secret: r.body.secret as string };
  };

  it('a revoke through the API ends the token\'s log follow stream at once', async () => {
    const u = await newUser('follower-api');
    const mine = await c.api.req('POST', '/v1/tasks', { command: 'sleep', args: ['60'] }, u.secret);
    assert.equal(mine.status, 201, mine.text);
    const follow = await openStream(c.url, `/v1/tasks/${mine.body.task.id}/logs?follow=1`, u.secret);
    assert.equal(follow.status, 200);

    const t0 = Date.now();
    const rev = await c.api.req('DELETE', `/v1/tokens/${u.id}`);
    assert.equal(rev.status, 200, rev.text);
    const end = await follow.done;
    assert.ok(end.at - t0 < REVOKE_BOUND_MS, `stream ended ${end.at - t0} ms after the revoke`);
    assert.equal(end.clean, false, 'a revoked stream is cut, not ended like a finished task\'s log');
    const again = await c.api.req('GET', '/v1/tasks', undefined, u.secret);
    assert.equal(again.status, 401);
  });

  it('a revoke written straight to the store (another server) ends the stream within a second', async () => {
    const u = await newUser('follower-store');
    const mine = await c.api.req('POST', '/v1/tasks', { command: 'sleep', args: ['60'] }, u.secret);
    assert.equal(mine.status, 201, mine.text);
    const follow = await openStream(c.url, `/v1/tasks/${mine.body.task.id}/logs?follow=1`, u.secret);
    assert.equal(follow.status, 200);

    // The same database file, opened by this process: the server hears no signal of it.
    const other = openSqliteStore(join(c.dir, 'drover.db'));
    try {
      const t0 = Date.now();
      assert.equal(await other.revokeToken(u.id, Date.now()), true);
      const end = await follow.done;
      assert.ok(end.at - t0 < REVOKE_BOUND_MS, `stream ended ${end.at - t0} ms after the revoke`);
      assert.equal(end.clean, false);
    } finally {
      await other.close();
    }
  });

  it('a revoke closes the token\'s worker WebSocket sessions within a second (API and store)', async () => {
    for (const via of ['api', 'store'] as const) {
      const t = await c.api.req('POST', '/v1/tokens', { name: `worker-${via}`, role: 'worker' });
      assert.equal(t.status, 201, t.text);
      const sock = await openWorkerSocket(c.url, t.body.secret);
      const t0 = Date.now();
      if (via === 'api') {
        assert.equal((await c.api.req('DELETE', `/v1/tokens/${t.body.token.id}`)).status, 200);
      } else {
        const other = openSqliteStore(join(c.dir, 'drover.db'));
        try {
          assert.equal(await other.revokeToken(t.body.token.id, Date.now()), true);
        } finally {
          await other.close();
        }
      }
      const end = await sock.closed;
      assert.ok(end.at - t0 < REVOKE_BOUND_MS, `${via}: socket closed ${end.at - t0} ms after the revoke`);
    }
  });

  it('streams of other tokens stay open when one token is revoked', async () => {
    const a = await newUser('keeps-a');
    const b = await newUser('keeps-b');
    const ta = await c.api.req('POST', '/v1/tasks', { command: 'sleep', args: ['60'] }, a.secret);
    const tb = await c.api.req('POST', '/v1/tasks', { command: 'sleep', args: ['60'] }, b.secret);
    const fa = await openStream(c.url, `/v1/tasks/${ta.body.task.id}/logs?follow=1`, a.secret);
    const fb = await openStream(c.url, `/v1/tasks/${tb.body.task.id}/logs?follow=1`, b.secret);
    assert.equal((await c.api.req('DELETE', `/v1/tokens/${a.id}`)).status, 200);
    await fa.done;
    // b's stream ends only when its task does: cancel it, and the follow ends cleanly.
    const cancel = await c.api.req('POST', `/v1/tasks/${tb.body.task.id}/cancel`, undefined, b.secret);
    assert.equal(cancel.status, 200, cancel.text);
    const endB = await fb.done;
    assert.equal(endB.clean, true);
  });

  it('lastUsedAt is written when a token is used, and drover token ls shows it', async () => {
    const u = await newUser('used-later');
    const listed = async () => (await c.api.req('GET', '/v1/tokens')).body.tokens.find((t: any) => t.id === u.id);
    assert.equal((await listed()).lastUsedAt, null);

    const before = Date.now();
    assert.equal((await c.api.req('GET', '/v1/tasks', undefined, u.secret)).status, 200);
    // Written after the answer (fire and forget): poll the listing briefly.
    let rec = await listed();
    for (let i = 0; rec.lastUsedAt === null && i < 100; i++) {
      await new Promise((r) => setTimeout(r, 20));
      rec = await listed();
    }
    assert.ok(rec.lastUsedAt, 'lastUsedAt was not written');
    const at = Date.parse(rec.lastUsedAt);
    assert.ok(at >= before - 1000 && at <= Date.now() + 1000, rec.lastUsedAt);

    // Used again at once: not written again (at most once a minute per token).
    assert.equal((await c.api.req('GET', '/v1/tasks', undefined, u.secret)).status, 200);
    assert.equal((await listed()).lastUsedAt, rec.lastUsedAt);

    const ls = await drover(c, ['token', 'ls']);
    assert.equal(ls.code, 0, ls.stderr);
    const header = ls.stdout.split('\n')[0]!;
    assert.match(header, /LAST USED/);
    const line = ls.stdout.split('\n').find((l) => l.startsWith(u.id))!;
    assert.ok(line.includes(rec.lastUsedAt.replace(/\.\d{3}Z$/, 'Z')), line);
    const never = await newUser('never-used');
    const ls2 = await drover(c, ['token', 'ls', '--json']);
    assert.equal(JSON.parse(ls2.stdout).tokens.find((t: any) => t.id === never.id).lastUsedAt, null);
  });
});

describe('e2e: a revoke through another server (PostgreSQL)', { skip: PG ? false : PG_SKIP_REASON }, () => {
  let db: TestDatabase;
  let c: Cluster;
  let other: Api;
  before(async () => {
    db = await createTestDatabase();
    c = await startCluster({ workers: 0, db: db.url });
    const { match } = await startProc(['server', '--db', db.url, '--host', '127.0.0.1', '--port', '0'], { DROVER_ADMIN_TOKEN: c.api.token }, /listening on (http:\/\/127\.0\.0\.1:\d+)/);
    other = new Api(match![1]!, c.api.token);
  });
  after(async () => {
    await c?.close();
    await db?.drop();
  });

  it('ends the follow stream and the worker socket held by the first server within a second', async () => {
    const u = await c.api.req('POST', '/v1/tokens', { name: 'pg-follower', role: 'user' });
    const w = await c.api.req('POST', '/v1/tokens', { name: 'pg-worker', role: 'worker' });
    const task = await c.api.req('POST', '/v1/tasks', { command: 'sleep', args: ['60'] }, u.body.secret);
    assert.equal(task.status, 201, task.text);
    const follow = await openStream(c.url, `/v1/tasks/${task.body.task.id}/logs?follow=1`, u.body.secret);
    assert.equal(follow.status, 200);
    const sock = await openWorkerSocket(c.url, w.body.secret);

    const t0 = Date.now();
    assert.equal((await other.req('DELETE', `/v1/tokens/${u.body.token.id}`)).status, 200);
    assert.equal((await other.req('DELETE', `/v1/tokens/${w.body.token.id}`)).status, 200);
    const [end, closed] = await Promise.all([follow.done, sock.closed]);
    assert.ok(end.at - t0 < REVOKE_BOUND_MS, `stream ended ${end.at - t0} ms after the revoke`);
    assert.equal(end.clean, false);
    assert.ok(closed.at - t0 < REVOKE_BOUND_MS, `socket closed ${closed.at - t0} ms after the revoke`);
  });
});
