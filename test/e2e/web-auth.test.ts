/**
 * Dashboard sign-in against a real `drover server` on SQLite: sessions by
 * token and by one-time code, the cookie's flags, the Origin rule for
 * cookie requests that change something, sign-out, and revocation ending
 * sessions (through the API, and written straight to the store as another
 * server would).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { newWebSecret, webSecretHash } from '../../src/server/web-auth.js';
import { startCluster, type Cluster } from './harness.js';
import { cookieParts, openHeld, rawRequest, sessionFromSetCookie, setCookieLines, type RawOptions } from './web-auth-client.js';

const HOUR = 3600_000;
/** The bound the issue sets for a revoke to end what is open. */
const REVOKE_BOUND_MS = 1000;

describe('e2e: dashboard sign-in', () => {
  let c: Cluster;
  let origin: string;
  let user: { id: string; secret: string };

  const newToken = async (name: string, role: 'user' | 'admin' | 'worker' = 'user') => {
    const r = await c.api.req('POST', '/v1/tokens', { name, role });
    assert.equal(r.status, 201, r.text);
    return { id: r.body.token.id as string, secret: r.body.secret as string };
  };
  const req = (method: string, path: string, opts: RawOptions = {}) => rawRequest(c.url, method, path, opts);
  /** Signs in (from the dashboard's own origin); returns the answer and the cookie to send back. */
  const signIn = async (body: unknown, opts: RawOptions = {}) => {
    const r = await req('POST', '/v1/session', { origin, ...opts, body });
    const value = sessionFromSetCookie(r.headers['set-cookie']);
    return { r, value, cookie: value === null ? '' : `drover_session=${value}` };
  };
  /** A direct handle on the server's database file: what another server (or the sweeper) would write. */
  const withStore = async <T>(fn: (s: ReturnType<typeof openSqliteStore>) => Promise<T>): Promise<T> => {
    const s = openSqliteStore(join(c.dir, 'drover.db'));
    try {
      return await fn(s);
    } finally {
      await s.close();
    }
  };

  before(async () => {
    c = await startCluster({ workers: 0 });
    origin = c.url;
    user = await newToken('web-user');
  });
  after(async () => c?.close());

  it('a token signs in: 200 {user, role, expiresAt}, an HttpOnly SameSite=Strict cookie for 12 h, not cached', async () => {
    const t0 = Date.now();
    const { r, value, cookie } = await signIn({ token: user.secret });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(Object.keys(r.body).sort(), ['expiresAt', 'role', 'user']);
    assert.equal(r.body.user, 'web-user');
    assert.equal(r.body.role, 'user');
    const exp = Date.parse(r.body.expiresAt);
    assert.ok(exp >= t0 + 12 * HOUR - 1000 && exp <= Date.now() + 12 * HOUR + 1000, r.body.expiresAt);
    const lines = setCookieLines(r.headers['set-cookie']);
    assert.equal(lines.length, 1);
    assert.match(value!, /^[A-Za-z0-9_-]{43}$/);
    assert.deepEqual(cookieParts(lines[0]!), { pair: `drover_session=${value}`, attributes: ['HttpOnly', 'Max-Age=43200', 'Path=/', 'SameSite=Strict'] }, 'no Secure over plain http');
    assert.equal(r.headers['cache-control'], 'no-store');

    // The cookie alone authenticates; /v1/me says how.
    const me = await req('GET', '/v1/me', { cookie });
    assert.equal(me.status, 200, me.text);
    assert.deepEqual(me.body, { user: 'web-user', role: 'user', via: 'cookie', tokenId: user.id, expiresAt: r.body.expiresAt });
    const list = await req('GET', '/v1/tasks', { cookie });
    assert.equal(list.status, 200, list.text);
    // Among other cookies, in any position.
    assert.equal((await req('GET', '/v1/me', { cookie: `theme=dark; ${cookie}; x=1` })).status, 200);

    // The store keeps sha256 of the value, bound to the token.
    const row = await withStore((s) => s.getWebSession(webSecretHash(value!), Date.now()));
    assert.equal(row?.tokenId, user.id);
    assert.equal(row?.expiresAt, exp);
  });

  it('an X-Forwarded-Proto header does not make the cookie Secure (no proxy is trusted), and Bearer /v1/me has no expiry', async () => {
    const { r } = await signIn({ token: user.secret }, { headers: { 'x-forwarded-proto': 'https' } });
    assert.equal(r.status, 200, r.text);
    assert.ok(!setCookieLines(r.headers['set-cookie'])[0]!.includes('Secure'));
    const me = await req('GET', '/v1/me', { token: user.secret });
    assert.deepEqual(me.body, { user: 'web-user', role: 'user', via: 'bearer', tokenId: user.id, expiresAt: null });
  });

  it('an admin token signs in as admin and reaches admin routes with the cookie', async () => {
    const { r, cookie } = await signIn({ token: c.api.token });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.role, 'admin');
    assert.equal((await req('GET', '/v1/tokens', { cookie })).status, 200);
    const asUser = await signIn({ token: user.secret });
    assert.equal((await req('GET', '/v1/tokens', { cookie: asUser.cookie })).status, 403);
  });

  it('refused sign-ins: unknown or revoked token 401, worker token 403, and no cookie is set', async () => {
    const revoked = await newToken('web-revoked');
    assert.equal((await c.api.req('DELETE', `/v1/tokens/${revoked.id}`)).status, 200);
    const cases: Array<[string, unknown, number, RegExp]> = [
      ['unknown token', { token: 'drv_nope' }, 401, /^invalid or revoked token$/],
      ['revoked token', { token: revoked.secret }, 401, /^invalid or revoked token$/],
      ['worker token', { token: c.workerToken }, 403, /^worker tokens cannot sign in to the dashboard$/],
    ];
    for (const [what, body, status, message] of cases) {
      const { r, value } = await signIn(body);
      assert.equal(r.status, status, `${what}: ${r.text}`);
      assert.match(r.body.error.message, message, what);
      assert.equal(value, null, `${what} set a cookie`);
    }
  });

  it('bad bodies: 400 naming the field, and nothing is created', async () => {
    const code = newWebSecret();
    const cases: Array<[string, unknown, string, string]> = [
      ['neither', {}, 'body', 'send exactly one of token or code'],
      ['both', { token: user.secret, code }, 'body', 'send exactly one of token or code'],
      ['unknown field', { token: user.secret, remember: true }, 'remember', 'unknown field'],
      ['empty token', { token: '' }, 'token', 'must not be empty'],
      ['token not a string', { token: 42 }, 'token', 'must be string'],
      ['token too long', { token: 'x'.repeat(4097) }, 'token', 'must be at most 4096 characters'],
      ['malformed code', { code: 'short' }, 'code', 'malformed'],
      ['code with a bad character', { code: `${code.slice(0, 42)}=` }, 'code', 'malformed'],
      ['not an object', [user.secret], 'body', 'must be object'],
    ];
    for (const [what, body, field, reason] of cases) {
      const { r, value } = await signIn(body);
      assert.equal(r.status, 400, `${what}: ${r.text}`);
      assert.equal(r.body.error.code, 'invalid_input', what);
      assert.equal(r.body.error.field, field, what);
      assert.equal(r.body.error.reason, reason, what);
      assert.equal(value, null);
    }
    const notJson = await req('POST', '/v1/session', { origin, body: '{"token":', headers: {} });
    assert.equal(notJson.status, 400);
    const text = await req('POST', '/v1/session', { origin, body: 'token=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    assert.equal(text.status, 415);
  });

  it('sign-in needs the server\'s own Origin (login CSRF): missing or another origin is 403, before the body is looked at', async () => {
    const other = new URL(c.url);
    other.port = String(Number(other.port) + 1);
    for (const [what, o] of [
      ['missing', undefined],
      ['another site', 'http://evil.example'],
      ['another port', other.origin],
      ['https instead of http', c.url.replace('http:', 'https:')],
      ['opaque (null)', 'null'],
      ['with a path', `${c.url}/`],
    ] as const) {
      const r = await req('POST', '/v1/session', { ...(o !== undefined ? { origin: o } : {}), body: { token: user.secret } });
      assert.equal(r.status, 403, `${what}: ${r.text}`);
      assert.equal(r.body.error.code, 'forbidden');
      assert.match(r.body.error.message, /^Origin: /, what);
      assert.equal(sessionFromSetCookie(r.headers['set-cookie']), null);
      // Refused before validation: a bad body gets the same 403.
      const bad = await req('POST', '/v1/session', { ...(o !== undefined ? { origin: o } : {}), body: { nonsense: 1 } });
      assert.equal(bad.status, 403, what);
    }
    // A Bearer header does not replace the Origin rule of a sign-in.
    const bearer = await req('POST', '/v1/session', { token: user.secret, body: { token: user.secret } });
    assert.equal(bearer.status, 403);
  });

  it('a cookie request that changes something needs the same Origin; GET does not; Bearer needs none', async () => {
    const { cookie } = await signIn({ token: user.secret });
    const count = async () => (await c.api.req('GET', '/v1/tasks', undefined, user.secret)).body.tasks.length;
    const before = await count();
    for (const [what, o] of [
      ['missing', undefined],
      ['another site', 'http://evil.example'],
      ['null', 'null'],
    ] as const) {
      const r = await req('POST', '/v1/tasks', { cookie, ...(o !== undefined ? { origin: o } : {}), body: { command: 'true' } });
      assert.equal(r.status, 403, `${what}: ${r.text}`);
      assert.match(r.body.error.message, /^Origin: /);
    }
    assert.equal(await count(), before, 'a refused request created nothing');

    const ok = await req('POST', '/v1/tasks', { cookie, origin, body: { command: 'true' } });
    assert.equal(ok.status, 201, ok.text);
    assert.equal(ok.body.task.owner, 'web-user');
    assert.equal((await req('GET', '/v1/tasks', { cookie })).status, 200, 'GET needs no Origin');
    assert.equal((await req('HEAD', '/v1/tasks', { cookie })).status, 200, 'HEAD needs no Origin');
    const bearer = await req('POST', '/v1/tasks', { token: user.secret, body: { command: 'true' } });
    assert.equal(bearer.status, 201, 'Bearer needs no Origin');
    // The cancel and login-code routes are guarded the same way.
    const cancel = await req('POST', `/v1/tasks/${ok.body.task.id}/cancel`, { cookie });
    assert.equal(cancel.status, 403);
    assert.equal((await req('POST', '/v1/login-codes', { cookie })).status, 403);
    // A cookie on an unknown path with an unsafe method: refused before the 404 too.
    assert.equal((await req('POST', '/v1/nothing', { cookie })).status, 403);
    assert.equal((await req('POST', '/v1/nothing', { cookie, origin })).status, 404);
  });

  it('a bad Bearer header is not rescued by a good cookie; a good one wins over it', async () => {
    const { cookie } = await signIn({ token: user.secret });
    assert.equal((await req('GET', '/v1/me', { cookie, token: 'drv_nope' })).status, 401);
    assert.equal((await req('GET', '/v1/me', { cookie, headers: { authorization: 'Basic eDp5' } })).status, 401);
    const me = await req('GET', '/v1/me', { cookie, token: c.api.token });
    assert.equal(me.body.via, 'bearer');
    assert.equal(me.body.user, 'admin');
  });

  it('unknown, malformed, expired and signed-out cookies are 401; unknown paths 401 without a session, 404 with one', async () => {
    const expired = newWebSecret();
    await withStore((s) => s.createWebSession({ idHash: webSecretHash(expired), tokenId: user.id, createdAt: Date.now() - 13 * HOUR, expiresAt: Date.now() - HOUR }));
    for (const [what, cookie] of [
      ['unknown', `drover_session=${newWebSecret()}`],
      ['malformed', 'drover_session=abc'],
      ['empty', 'drover_session='],
      ['expired', `drover_session=${expired}`],
      ['the hash instead of the value', `drover_session=${webSecretHash(newWebSecret())}`],
    ] as const) {
      const r = await req('GET', '/v1/me', { cookie });
      assert.equal(r.status, 401, `${what}: ${r.text}`);
      assert.equal(r.body.error.code, 'unauthorized');
    }
    const { cookie } = await signIn({ token: user.secret });
    assert.equal((await req('GET', '/v1/nothing-here', { cookie })).status, 404);
    assert.equal((await req('GET', '/v1/nothing-here', { cookie: 'drover_session=abc' })).status, 401);
  });

  it('a one-time code from POST /v1/login-codes signs in once; used, unknown and expired codes are 401', async () => {
    const t0 = Date.now();
    const made = await req('POST', '/v1/login-codes', { token: user.secret });
    assert.equal(made.status, 201, made.text);
    assert.deepEqual(Object.keys(made.body).sort(), ['code', 'expiresAt', 'path']);
    assert.match(made.body.code, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(made.body.path, `/sign-in#code=${made.body.code}`);
    const exp = Date.parse(made.body.expiresAt);
    assert.ok(exp >= t0 + 600_000 - 1000 && exp <= Date.now() + 600_000 + 1000, made.body.expiresAt);
    assert.equal(made.headers['cache-control'], 'no-store');

    const first = await signIn({ code: made.body.code });
    assert.equal(first.r.status, 200, first.r.text);
    assert.equal(first.r.body.user, 'web-user');
    assert.equal(first.r.body.role, 'user');
    assert.equal((await req('GET', '/v1/me', { cookie: first.cookie })).body.via, 'cookie');

    const again = await signIn({ code: made.body.code });
    assert.equal(again.r.status, 401, 'a code is single use');
    assert.match(again.r.body.error.message, /sign-in code/);
    assert.equal(again.value, null);
    assert.equal((await signIn({ code: newWebSecret() })).r.status, 401, 'unknown code');

    const old = newWebSecret();
    await withStore((s) => s.createLoginCode(webSecretHash(old), user.id, Date.now() - 1));
    assert.equal((await signIn({ code: old })).r.status, 401, 'expired code');
  });

  it('codes: made with the cookie (and the Origin) too; the code is for the caller\'s own token; a revoked token\'s code is refused', async () => {
    const { cookie } = await signIn({ token: c.api.token });
    const made = await req('POST', '/v1/login-codes', { cookie, origin });
    assert.equal(made.status, 201, made.text);
    const used = await signIn({ code: made.body.code });
    assert.equal(used.r.body.user, 'admin');
    assert.equal(used.r.body.role, 'admin');

    const doomed = await newToken('web-doomed');
    const code = (await req('POST', '/v1/login-codes', { token: doomed.secret })).body.code;
    assert.equal((await c.api.req('DELETE', `/v1/tokens/${doomed.id}`)).status, 200);
    const r = await signIn({ code });
    assert.equal(r.r.status, 401);
    assert.equal(r.value, null);

    // Worker tokens reach neither route.
    assert.equal((await req('POST', '/v1/login-codes', { token: c.workerToken })).status, 403);
    assert.equal((await req('GET', '/v1/me', { token: c.workerToken })).status, 403);
    assert.equal((await req('POST', '/v1/login-codes')).status, 401);
  });

  it('two concurrent uses of one code: exactly one session', async () => {
    const code = (await req('POST', '/v1/login-codes', { token: user.secret })).body.code;
    const results = await Promise.all(Array.from({ length: 8 }, () => signIn({ code })));
    assert.deepEqual(results.map((x) => x.r.status).sort(), [200, 401, 401, 401, 401, 401, 401, 401]);
  });

  it('sign-out: 204, the cookie cleared, the session gone (here and in the store); other sessions of the token stay', async () => {
    const a = await signIn({ token: user.secret });
    const b = await signIn({ token: user.secret });
    const noOrigin = await req('DELETE', '/v1/session', { cookie: a.cookie });
    assert.equal(noOrigin.status, 403, 'sign-out is a cookie request that changes something');
    assert.equal((await req('GET', '/v1/me', { cookie: a.cookie })).status, 200);

    const out = await req('DELETE', '/v1/session', { cookie: a.cookie, origin });
    assert.equal(out.status, 204, out.text);
    assert.equal(out.text, '');
    const cleared = setCookieLines(out.headers['set-cookie']);
    assert.equal(cleared.length, 1);
    // Max-Age=0 drops it; the Expires in the past is @fastify/cookie's (for clients that predate Max-Age).
    assert.deepEqual(cookieParts(cleared[0]!), { pair: 'drover_session=', attributes: ['Expires=Thu, 01 Jan 1970 00:00:00 GMT', 'HttpOnly', 'Max-Age=0', 'Path=/', 'SameSite=Strict'] });
    assert.equal((await req('GET', '/v1/me', { cookie: a.cookie })).status, 401);
    assert.equal(await withStore((s) => s.getWebSession(webSecretHash(a.value!), Date.now())), null);
    assert.equal((await req('GET', '/v1/me', { cookie: b.cookie })).status, 200, 'another session of the same token');
    assert.equal((await req('DELETE', '/v1/session', { cookie: a.cookie, origin })).status, 401, 'twice');

    const bearer = await req('DELETE', '/v1/session', { token: user.secret });
    assert.equal(bearer.status, 400);
    assert.equal(bearer.body.error.field, 'drover_session');
  });

  it('signing in again ends the session the browser held before', async () => {
    const first = await signIn({ token: user.secret });
    const second = await signIn({ token: user.secret }, { cookie: first.cookie });
    assert.equal(second.r.status, 200);
    assert.notEqual(second.value, first.value);
    assert.equal((await req('GET', '/v1/me', { cookie: first.cookie })).status, 401);
    assert.equal((await req('GET', '/v1/me', { cookie: second.cookie })).status, 200);
  });

  it('a revoke through the API ends the token\'s sessions at once, and its open long-lived request', async () => {
    const t = await newToken('web-revoke-api');
    const { cookie, value } = await signIn({ token: t.secret });
    const task = await req('POST', '/v1/tasks', { cookie, origin, body: { command: 'sleep', args: ['60'] } });
    assert.equal(task.status, 201, task.text);
    const follow = await openStream(c.url, `/v1/tasks/${task.body.task.id}/logs?follow=1`, cookie);
    assert.equal(follow.status, 200);

    const t0 = Date.now();
    assert.equal((await c.api.req('DELETE', `/v1/tokens/${t.id}`)).status, 200);
    assert.equal((await req('GET', '/v1/me', { cookie })).status, 401, 'at once');
    const end = await follow.done;
    assert.ok(end.at - t0 < REVOKE_BOUND_MS, `stream ended ${end.at - t0} ms after the revoke`);
    assert.equal(end.clean, false, 'cut, not ended like a finished log');
    assert.equal(await withStore((s) => s.getWebSession(webSecretHash(value!), Date.now())), null, 'the row is deleted');
  });

  it('a revoke written straight to the store (another server) ends the sessions and the stream within a second', async () => {
    const t = await newToken('web-revoke-store');
    const { cookie } = await signIn({ token: t.secret });
    assert.equal((await req('GET', '/v1/me', { cookie })).status, 200); // now in the server's cache
    const task = await req('POST', '/v1/tasks', { cookie, origin, body: { command: 'sleep', args: ['60'] } });
    const follow = await openStream(c.url, `/v1/tasks/${task.body.task.id}/logs?follow=1`, cookie);
    assert.equal(follow.status, 200);

    const t0 = Date.now();
    assert.equal(await withStore((s) => s.revokeToken(t.id, Date.now())), true);
    const end = await follow.done;
    assert.ok(end.at - t0 < REVOKE_BOUND_MS, `stream ended ${end.at - t0} ms after the revoke`);
    // The cookie is refused once the server's cache (TOKEN_CACHE_MS = 1 s) has let go: poll with a deadline.
    let status = 0;
    while (Date.now() - t0 < 3000) {
      status = (await req('GET', '/v1/me', { cookie })).status;
      if (status === 401) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(status, 401);
    assert.ok(Date.now() - t0 < REVOKE_BOUND_MS + 500, `cookie refused ${Date.now() - t0} ms after the revoke`);
  });

  it('a session deleted straight in the store (sign-out on another server) is refused within a second', async () => {
    const { cookie, value } = await signIn({ token: user.secret });
    assert.equal((await req('GET', '/v1/me', { cookie })).status, 200);
    const t0 = Date.now();
    assert.equal(await withStore((s) => s.deleteWebSession(webSecretHash(value!))), true);
    let status = 0;
    while (Date.now() - t0 < 3000) {
      status = (await req('GET', '/v1/me', { cookie })).status;
      if (status === 401) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(status, 401);
    assert.ok(Date.now() - t0 < REVOKE_BOUND_MS + 500, `refused ${Date.now() - t0} ms after`);
  });
});

/** Opens `GET path` with a cookie, the body left streaming. */
const openStream = (base: string, path: string, cookie: string) => openHeld(base, path, { cookie });
