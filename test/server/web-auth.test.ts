/**
 * The parts of dashboard sign-in and static serving that need no store:
 * the session cookie as @fastify/cookie reads and writes it with our options,
 * the shape of session values and codes, the asset-name rule, the routes and
 * content types of @fastify/static as configured, the CSP. The behaviour
 * against a real server is in test/e2e/web-auth*.test.ts.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import cookie from '@fastify/cookie';
import { CONTENT_SECURITY_POLICY, SECURITY_HEADERS } from '../../src/server/security-headers.js';
import { answerMissingFile, isAssetName, PAGE_ROUTES, staticRoutes } from '../../src/server/static-files.js';
import {
  clearSessionCookie,
  isSafeMethod,
  isWebSecret,
  LOGIN_CODE_TTL_MS,
  newWebSecret,
  SESSION_COOKIE,
  SESSION_TTL_MS,
  sessionCookieOf,
  sessionCookieOptions,
  setSessionCookie,
  webSecretHash,
} from '../../src/server/web-auth.js';

describe('web-auth: session values and codes', () => {
  it('are 32 random bytes in base64url (43 characters), different every time', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 100; i++) {
      const s = newWebSecret();
      assert.match(s, /^[A-Za-z0-9_-]{43}$/);
      assert.equal(Buffer.from(s, 'base64url').length, 32);
      assert.ok(isWebSecret(s));
      seen.add(s);
    }
    assert.equal(seen.size, 100);
  });

  it('isWebSecret refuses anything else', () => {
    for (const bad of ['', 'a'.repeat(42), 'a'.repeat(44), `${'a'.repeat(42)}=`, `${'a'.repeat(42)}+`, `${'a'.repeat(42)}/`, `${'a'.repeat(42)} `, `${'a'.repeat(42)}\n`, `${'a'.repeat(42)}é`]) {
      assert.equal(isWebSecret(bad), false, JSON.stringify(bad));
    }
  });

  it('the store key is sha256 hex of the value', () => {
    assert.equal(webSecretHash('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it('sessions last 12 hours, codes 10 minutes', () => {
    assert.equal(SESSION_TTL_MS, 12 * 3600 * 1000);
    assert.equal(LOGIN_CODE_TTL_MS, 10 * 60 * 1000);
  });
});

describe('web-auth: the cookie (through @fastify/cookie)', () => {
  const v = 'A'.repeat(43);
  let app: FastifyInstance;
  before(async () => {
    app = Fastify();
    await app.register(cookie);
    app.get('/read', async (req) => ({ value: sessionCookieOf(req) }));
    app.post('/set', async (req, reply) => {
      setSessionCookie(req, reply, v);
      return {};
    });
    app.delete('/set', async (req, reply) => {
      clearSessionCookie(req, reply);
      return {};
    });
  });
  after(async () => app?.close());

  /** The Set-Cookie line's attributes, sorted (their order means nothing). */
  const parts = (line: string) => {
    const [pair, ...attributes] = line.split(/;\s*/);
    return { pair, attributes: attributes.sort() };
  };
  const setCookieOf = async (method: 'POST' | 'DELETE') => {
    const r = await app.inject({ method, url: '/set' });
    const h = r.headers['set-cookie'];
    assert.equal(typeof h, 'string', 'exactly one Set-Cookie');
    return parts(h as string);
  };
  const read = async (header?: string) => (await app.inject({ method: 'GET', url: '/read', headers: header === undefined ? {} : { cookie: header } })).json().value;

  it('Set-Cookie carries HttpOnly, SameSite=Strict, Path=/, Max-Age 12 h, and Secure only over https', async () => {
    assert.deepEqual(await setCookieOf('POST'), { pair: `drover_session=${v}`, attributes: ['HttpOnly', 'Max-Age=43200', 'Path=/', 'SameSite=Strict'] });
    // Over https (inject cannot make a TLS request): the same options, serialised by the plugin.
    assert.deepEqual(parts(app.serializeCookie(SESSION_COOKIE, v, sessionCookieOptions(true))), {
      pair: `drover_session=${v}`,
      attributes: ['HttpOnly', 'Max-Age=43200', 'Path=/', 'SameSite=Strict', 'Secure'],
    });
  });

  it('clearing it sets an empty value with Max-Age=0 (and an Expires in the past) and the same attributes', async () => {
    assert.deepEqual(await setCookieOf('DELETE'), {
      pair: 'drover_session=',
      attributes: ['Expires=Thu, 01 Jan 1970 00:00:00 GMT', 'HttpOnly', 'Max-Age=0', 'Path=/', 'SameSite=Strict'],
    });
  });

  it('is read from a Cookie header among others, first one wins, only its exact name', async () => {
    assert.equal(await read(undefined), null);
    assert.equal(await read(''), null);
    assert.equal(await read('a=1; b=2'), null);
    assert.equal(await read(`drover_session=${v}`), v);
    assert.equal(await read(`a=1;drover_session=${v};b=2`), v);
    assert.equal(await read(`a=1;  drover_session = ${v} ; b=2`), v);
    assert.equal(await read(`drover_session=first; drover_session=${v}`), 'first');
    assert.equal(await read('drover_session='), '');
    // Not the same name: a prefix, a suffix, another case.
    assert.equal(await read(`xdrover_session=${v}; drover_sessionx=${v}; DROVER_SESSION=${v}`), null);
    assert.equal(await read('drover_session'), null);
    // Quotes are kept (the value is then not a session value: 401 "malformed"); a %XX escape is decoded.
    assert.equal(await read(`drover_session="${v}"`), `"${v}"`);
    assert.equal(isWebSecret(`"${v}"`), false);
    assert.equal(await read(`drover_session=%41${v.slice(1)}`), v);
  });

  it('safe methods are exactly GET, HEAD and OPTIONS', () => {
    for (const m of ['GET', 'HEAD', 'OPTIONS']) assert.equal(isSafeMethod(m), true, m);
    for (const m of ['POST', 'PUT', 'PATCH', 'DELETE', 'get', 'TRACE', 'CONNECT']) assert.equal(isSafeMethod(m), false, m);
  });
});

describe('static files: names, types, pages', () => {
  it('an asset name is one plain file name', () => {
    for (const ok of ['index-3f2a9c.js', 'app.B6c_x-1.css', 'logo.svg', 'a', 'x..y.js']) assert.equal(isAssetName(ok), true, ok);
    for (const bad of ['', '.', '..', '.env', '../package.json', '..%2Fpackage.json', 'a/b.js', 'a\\b.js', '%2e%2e', 'a b.js', 'a\0.js', 'é.js', 'a'.repeat(256)]) {
      assert.equal(isAssetName(bad), false, JSON.stringify(bad));
    }
  });

  it('the page list is explicit (no catch-all)', () => {
    assert.deepEqual([...PAGE_ROUTES], ['/', '/sign-in', '/tasks', '/tasks/:id', '/workers', '/schedules', '/schedules/new', '/dags', '/dags/:name', '/dag-runs/:id', '/submit']);
    for (const p of PAGE_ROUTES) assert.ok(!p.includes('*'), p);
  });
});

describe('static files: @fastify/static as configured', () => {
  let dir: string;
  let app: FastifyInstance;
  const routes: string[] = [];
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'drover-static-unit-'));
    mkdirSync(join(dir, 'assets'));
    writeFileSync(join(dir, 'index.html'), '<!doctype html>\n');
    for (const name of ['a.js', 'a.mjs', 'a.CSS', 'a.svg', 'a.woff2', 'a.map', 'a.json', 'a.exe', 'noext']) writeFileSync(join(dir, 'assets', name), 'x');
    app = Fastify();
    app.addHook('onRoute', (r) => {
      for (const m of [r.method].flat()) routes.push(`${m} ${r.url}`);
    });
    app.setNotFoundHandler((req, reply) => {
      if (!answerMissingFile(req, reply)) void reply.code(404).send({ error: { code: 'not_found', message: 'no route' } });
    });
    await staticRoutes(app, dir);
    await app.ready();
  });
  after(async () => {
    await app?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('registers only our routes (serve: false: no wildcard), GET and HEAD each', () => {
    const want = [...PAGE_ROUTES, '/assets/:file'].flatMap((u) => [`GET ${u}`, `HEAD ${u}`]);
    assert.deepEqual([...routes].sort(), want.sort());
  });

  it('content types follow the extension (case-insensitive); JavaScript is text/javascript; unknown is octet-stream', async () => {
    const cases: Array<[string, string]> = [
      ['a.js', 'text/javascript; charset=utf-8'],
      ['a.mjs', 'text/javascript; charset=utf-8'],
      ['a.CSS', 'text/css; charset=utf-8'],
      ['a.svg', 'image/svg+xml'],
      ['a.woff2', 'font/woff2'],
      ['a.map', 'application/json; charset=utf-8'],
      ['a.json', 'application/json; charset=utf-8'],
      ['a.exe', 'application/octet-stream'],
      ['noext', 'application/octet-stream'],
    ];
    for (const [name, type] of cases) {
      const r = await app.inject({ method: 'GET', url: `/assets/${name}` });
      assert.equal(r.statusCode, 200, name);
      assert.equal(r.headers['content-type'], type, name);
      assert.equal(r.headers['cache-control'], 'public, max-age=31536000, immutable', name);
    }
  });

  it('a 304 for an asset keeps its caching and has no body or type', async () => {
    const first = await app.inject({ method: 'GET', url: '/assets/a.js' });
    const again = await app.inject({ method: 'GET', url: '/assets/a.js', headers: { 'if-none-match': first.headers.etag as string } });
    assert.equal(again.statusCode, 304);
    assert.equal(again.body, '');
    assert.equal(again.headers['content-type'], undefined);
    assert.equal(again.headers['cache-control'], 'public, max-age=31536000, immutable');
  });
});

describe('security headers', () => {
  it('the CSP is the dashboard\'s: no inline code, nothing from elsewhere, no framing', () => {
    assert.equal(
      CONTENT_SECURITY_POLICY,
      "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'",
    );
    assert.ok(!CONTENT_SECURITY_POLICY.includes('unsafe'));
    assert.deepEqual(Object.keys(SECURITY_HEADERS).sort(), ['content-security-policy', 'referrer-policy', 'x-content-type-options', 'x-frame-options']);
  });
});
