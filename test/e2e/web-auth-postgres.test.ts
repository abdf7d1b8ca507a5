/**
 * Dashboard sessions across two `drover server` processes on one PostgreSQL
 * database: a session or a code made through one server works through the
 * other (they live in the store), once; a sign-out or a revoke through one
 * server is honoured by the other within a second.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { createTestDatabase, PG_SKIP_REASON, requirePostgres, type TestDatabase } from '../support/postgres.js';
import { Api, startCluster, startProc, type Cluster } from './harness.js';
import { rawRequest, sessionFromSetCookie, type RawOptions } from './web-auth-client.js';

const PG = await requirePostgres();
const BOUND_MS = 1000;

describe('e2e: dashboard sessions on PostgreSQL, two servers', { skip: PG ? false : PG_SKIP_REASON }, () => {
  let db: TestDatabase;
  let c: Cluster;
  let a: string;
  let b: string;

  before(async () => {
    db = await createTestDatabase();
    c = await startCluster({ workers: 0, db: db.url });
    a = c.url;
    const { match } = await startProc(['server', '--db', db.url, '--host', '127.0.0.1', '--port', '0'], { DROVER_ADMIN_TOKEN: c.api.token }, /listening on (http:\/\/127\.0\.0\.1:\d+)/);
    b = match![1]!;
  });
  after(async () => {
    await c?.close();
    await db?.drop();
  });

  const newUser = async (name: string) => {
    const r = await c.api.req('POST', '/v1/tokens', { name, role: 'user' });
    assert.equal(r.status, 201, r.text);
    return { id: r.body.token.id as string, secret: r.body.secret as string };
  };
  /** Signs in through `server` from its own origin. */
  const signIn = async (server: string, body: unknown) => {
    const r = await rawRequest(server, 'POST', '/v1/session', { origin: server, body });
    return { r, cookie: `drover_session=${sessionFromSetCookie(r.headers['set-cookie'])}` };
  };
  const me = (server: string, opts: RawOptions) => rawRequest(server, 'GET', '/v1/me', opts);
  /** Polls until `server` refuses the cookie; returns when, relative to t0. */
  const refusedAfter = async (server: string, cookie: string, t0: number): Promise<number> => {
    for (;;) {
      const r = await me(server, { cookie });
      if (r.status === 401) return Date.now() - t0;
      assert.equal(r.status, 200, r.text);
      if (Date.now() - t0 > 5000) throw new Error('the cookie was never refused');
      await new Promise((res) => setTimeout(res, 20));
    }
  };

  it('a session made through one server works through the other; a code minted on one is used once on the other', async () => {
    const u = await newUser('pg-web-1');
    const s = await signIn(a, { token: u.secret });
    assert.equal(s.r.status, 200, s.r.text);
    const there = await me(b, { cookie: s.cookie });
    assert.equal(there.status, 200, there.text);
    assert.equal(there.body.user, 'pg-web-1');
    assert.equal(there.body.via, 'cookie');

    const code = (await rawRequest(a, 'POST', '/v1/login-codes', { token: u.secret })).body.code;
    const used = await signIn(b, { code });
    assert.equal(used.r.status, 200, used.r.text);
    assert.equal((await signIn(a, { code })).r.status, 401, 'single use across servers');
  });

  it('a sign-out through one server is honoured by the other within a second', async () => {
    const u = await newUser('pg-web-2');
    const s = await signIn(a, { token: u.secret });
    assert.equal((await me(a, { cookie: s.cookie })).status, 200); // cached on A now
    const t0 = Date.now();
    const out = await rawRequest(b, 'DELETE', '/v1/session', { cookie: s.cookie, origin: b });
    assert.equal(out.status, 204, out.text);
    const ms = await refusedAfter(a, s.cookie, t0);
    assert.ok(ms < BOUND_MS + 200, `refused ${ms} ms after the sign-out`);
  });

  it('a revoke through one server ends the token\'s sessions, and its open stream, on the other within a second', async () => {
    const u = await newUser('pg-web-3');
    const s = await signIn(a, { token: u.secret });
    const task = await rawRequest(a, 'POST', '/v1/tasks', { cookie: s.cookie, origin: a, body: { command: 'sleep', args: ['60'] } });
    assert.equal(task.status, 201, task.text);
    const follow = await openStream(a, `/v1/tasks/${task.body.task.id}/logs?follow=1`, s.cookie);
    assert.equal(follow.status, 200);

    const t0 = Date.now();
    assert.equal((await new Api(b, c.api.token).req('DELETE', `/v1/tokens/${u.id}`)).status, 200);
    const end = await follow.done;
    assert.ok(end.at - t0 < BOUND_MS, `stream ended ${end.at - t0} ms after the revoke`);
    const ms = await refusedAfter(a, s.cookie, t0);
    assert.ok(ms < BOUND_MS + 200, `cookie refused ${ms} ms after the revoke`);
    assert.equal((await me(b, { cookie: s.cookie })).status, 401, 'at once on the server that revoked');
  });
});

/** Opens `GET path` with a cookie; resolves once the status line is in, the body left streaming. */
function openStream(base: string, path: string, cookie: string): Promise<{ status: number; done: Promise<{ at: number }> }> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const r = request({ hostname: u.hostname, port: u.port, path, headers: { cookie }, agent: false }, (res) => {
      const done = new Promise<{ at: number }>((settle) => {
        const finish = () => settle({ at: Date.now() });
        res.on('close', finish);
        res.on('error', finish);
        res.resume();
      });
      resolve({ status: res.statusCode ?? 0, done });
    });
    r.on('error', reject);
    r.end();
  });
}
