/**
 * Serving the dashboard against a real `drover server`: page routes answer
 * index.html, /assets/:file answers the build's files with immutable caching
 * and their types, nothing outside web/dist/assets is reachable by any
 * spelling, unknown paths keep the API's 401/404, a missing build is a 503
 * that says what to run, and every response carries the security headers.
 *
 * The server is pointed at a temporary build with env DROVER_WEB_DIST (the
 * real SPA is built by `npm run build:web`; its own tests are the browser tests).
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import { BIN, startCluster, type Cluster } from './harness.js';
import { rawRequest, type RawResponse } from './web-auth-client.js';

const INDEX = '<!doctype html><html><head><script type="module" src="/assets/app-4f3a2b.js"></script></head><body><div id="root"></div></body></html>\n';
const JS = 'console.log("drover dashboard");\n';
const CSS = 'body { margin: 0 }\n';
/** Written where no request may reach it: any response containing it is a traversal. */
const SECRET = 'TOP-SECRET-NOT-AN-ASSET';

const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'";

function assertSecurityHeaders(r: RawResponse, what: string): void {
  assert.equal(r.headers['content-security-policy'], CSP, what);
  assert.equal(r.headers['x-content-type-options'], 'nosniff', what);
  assert.equal(r.headers['referrer-policy'], 'no-referrer', what);
  assert.equal(r.headers['x-frame-options'], 'DENY', what);
}

describe('e2e: the dashboard\'s static files', () => {
  let c: Cluster;
  let root: string;
  let dist: string;

  before(async () => {
    root = mkdtempSync(join(tmpdir(), 'drover-webdist-'));
    dist = join(root, 'dist');
    mkdirSync(join(dist, 'assets', 'subdir'), { recursive: true });
    writeFileSync(join(dist, 'index.html'), INDEX);
    writeFileSync(join(dist, 'assets', 'app-4f3a2b.js'), JS);
    writeFileSync(join(dist, 'assets', 'app-9c8d7e.css'), CSS);
    writeFileSync(join(dist, 'assets', 'blob-1a2b3c.bin'), Buffer.from([0, 1, 2, 255]));
    writeFileSync(join(dist, 'assets', 'subdir', 'inner.js'), SECRET);
    writeFileSync(join(dist, 'assets', '.hidden'), SECRET);
    writeFileSync(join(dist, 'secret.txt'), SECRET);
    writeFileSync(join(dist, 'package.json'), SECRET);
    writeFileSync(join(root, 'outside.txt'), SECRET);
    symlinkSync(join(root, 'outside.txt'), join(dist, 'assets', 'link-0a0b0c.js'));
    c = await startCluster({ workers: 0, serverEnv: { DROVER_WEB_DIST: dist } });
  });
  after(async () => {
    await c?.close();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it('drover server prints the dashboard URL', () => {
    assert.match(c.server.output(), new RegExp(`^dashboard: ${c.url.replace(/[.]/g, '\\.')}/$`, 'm'));
  });

  it('every page route answers index.html, no-cache, with the security headers; HEAD has no body', async () => {
    for (const path of ['/', '/sign-in', '/tasks', '/tasks/01ARZ3NDEKTSV4RRFFQ69G5FAV', '/tasks/anything', '/workers', '/schedules', '/schedules/new', '/dags', '/dags/nightly-etl', '/dags/a.b_c-1', '/dag-runs/01ARZ3NDEKTSV4RRFFQ69G5FAV', '/submit', '/tasks?state=failed&name=x']) {
      const r = await rawRequest(c.url, 'GET', path);
      assert.equal(r.status, 200, path);
      assert.equal(r.text, INDEX, path);
      assert.equal(r.headers['content-type'], 'text/html; charset=utf-8', path);
      assert.equal(r.headers['cache-control'], 'no-cache', path);
      assert.equal(r.headers['content-length'], String(Buffer.byteLength(INDEX)), path);
      assertSecurityHeaders(r, path);
      const h = await rawRequest(c.url, 'HEAD', path);
      assert.equal(h.status, 200, `HEAD ${path}`);
      assert.equal(h.text, '', `HEAD ${path}`);
      assert.equal(h.headers['content-length'], String(Buffer.byteLength(INDEX)), `HEAD ${path}`);
    }
  });

  it('a page is revalidated: its ETag answers 304 without a body', async () => {
    const first = await rawRequest(c.url, 'GET', '/tasks');
    const etag = first.headers.etag as string;
    assert.match(etag, /^W\/"[0-9a-f]+-[0-9a-f]+"$/);
    const again = await rawRequest(c.url, 'GET', '/', { headers: { 'if-none-match': etag } });
    assert.equal(again.status, 304);
    assert.equal(again.text, '');
    assert.equal(again.headers['cache-control'], 'no-cache');
    assertSecurityHeaders(again, '304');
    const other = await rawRequest(c.url, 'GET', '/', { headers: { 'if-none-match': 'W/"0-0"' } });
    assert.equal(other.status, 200);
  });

  it('assets: the file, its type, cached for a year as immutable', async () => {
    const cases: Array<[string, string, string | Buffer]> = [
      ['app-4f3a2b.js', 'text/javascript; charset=utf-8', JS],
      ['app-9c8d7e.css', 'text/css; charset=utf-8', CSS],
      ['blob-1a2b3c.bin', 'application/octet-stream', Buffer.from([0, 1, 2, 255])],
    ];
    for (const [name, type, content] of cases) {
      const r = await rawRequest(c.url, 'GET', `/assets/${name}`);
      assert.equal(r.status, 200, name);
      assert.equal(r.headers['content-type'], type, name);
      assert.equal(r.headers['cache-control'], 'public, max-age=31536000, immutable', name);
      assert.equal(r.headers['content-length'], String(Buffer.byteLength(content)), name);
      if (typeof content === 'string') assert.equal(r.text, content, name);
      assertSecurityHeaders(r, name);
      const h = await rawRequest(c.url, 'HEAD', `/assets/${name}`);
      assert.equal(h.status, 200);
      assert.equal(h.text, '');
      assert.equal(h.headers['content-type'], type);
    }
    // Percent-encoded letters are decoded by the router: the same file.
    const enc = await rawRequest(c.url, 'GET', '/assets/%61pp-4f3a2b.js');
    assert.equal(enc.status, 200);
    assert.equal(enc.text, JS);
  });

  it('a missing asset is 404 (JSON, no directory listing)', async () => {
    for (const path of ['/assets/nope-123.js', '/assets/subdir', '/assets/index.html']) {
      const r = await rawRequest(c.url, 'GET', path);
      assert.equal(r.status, 404, path);
      assert.equal(r.body?.error?.code, 'not_found', path);
      assertSecurityHeaders(r, path);
    }
  });

  it('no spelling reaches a file outside web/dist/assets, or a hidden file, or through a link', async () => {
    /** [path, what an anonymous caller gets]: 404 = the asset route refused the name; 401 = no route (then 404 "no route" with a token). */
    const attempts: Array<[string, 404 | 401 | 400]> = [
      ['/assets/..%2Fsecret.txt', 404],
      ['/assets/..%2fsecret.txt', 404],
      ['/assets/..%2Fpackage.json', 404],
      ['/assets/%2e%2e%2Fsecret.txt', 404],
      ['/assets/%2E%2E%2Fpackage.json', 404],
      ['/assets/..%2F..%2Foutside.txt', 404],
      ['/assets/..%5Csecret.txt', 404],
      ['/assets/..\\secret.txt', 404],
      ['/assets/%252e%252e%252Fsecret.txt', 404],
      ['/assets/%2e%2e', 404],
      ['/assets/..', 404],
      ['/assets/.', 404],
      ['/assets/%2e', 404],
      ['/assets/.hidden', 404],
      ['/assets/%2ehidden', 404],
      ['/assets/link-0a0b0c.js', 404],
      ['/assets/subdir%2Finner.js', 404],
      ['/assets/secret.txt%00.js', 404],
      ['/assets/', 404],
      ['/assets/../secret.txt', 401],
      ['/assets/%2e%2e/secret.txt', 401],
      ['/assets/./app-4f3a2b.js', 401],
      ['/assets/subdir/inner.js', 401],
      ['/assets//secret.txt', 401],
      ['/assets/x/../../secret.txt', 401],
      ['/secret.txt', 401],
      ['/package.json', 401],
      ['/index.html', 401],
      ['/assets', 401],
    ];
    for (const [path, want] of attempts) {
      const anon = await rawRequest(c.url, 'GET', path);
      assert.ok(!anon.text.includes(SECRET), `${path} leaked the file`);
      assert.equal(anon.status, want, `${path}: ${anon.text}`);
      assertSecurityHeaders(anon, path);
      const withToken = await rawRequest(c.url, 'GET', path, { token: c.api.token });
      assert.ok(!withToken.text.includes(SECRET), `${path} leaked the file (with a token)`);
      assert.equal(withToken.status, 404, path);
      if (want === 401) assert.match(withToken.body.error.message, /^no route /, path);
    }
  });

  it('there is no catch-all: unknown paths and other methods keep the API\'s 401 (anonymous) and 404', async () => {
    for (const [method, path] of [
      ['GET', '/nope'],
      ['GET', '/tasks/x/y'],
      ['GET', '/Tasks'],
      ['GET', '/tasks/'],
      ['GET', '/sign-in/'],
      ['POST', '/'],
      ['POST', '/sign-in'],
      ['DELETE', '/tasks'],
      ['PUT', '/assets/app-4f3a2b.js'],
    ] as const) {
      const anon = await rawRequest(c.url, method, path);
      const authed = await rawRequest(c.url, method, path, { token: c.api.token });
      if (path === '/tasks/') {
        // `/tasks/:id` with an empty id: the page route (the app's router shows its not-found page).
        assert.equal(anon.status, 200);
        continue;
      }
      assert.equal(anon.status, 401, `${method} ${path}`);
      assert.equal(authed.status, 404, `${method} ${path}`);
      assert.match(authed.body.error.message, /^no route /);
    }
  });

  it('the security headers are on API answers, errors and streamed responses too', async () => {
    const task = await c.api.req('POST', '/v1/tasks', { command: 'true' });
    assert.equal(task.status, 201, task.text);
    const checks: Array<[string, string, Parameters<typeof rawRequest>[3], number]> = [
      ['GET', '/healthz', {}, 200],
      ['GET', '/v1/tasks', {}, 401],
      ['GET', '/v1/tasks', { token: c.api.token }, 200],
      ['GET', '/v1/tasks?limit=0', { token: c.api.token }, 400],
      ['GET', '/v1/tokens', { token: c.workerToken }, 403],
      ['GET', '/v1/nothing', { token: c.api.token }, 404],
      ['POST', '/v1/tasks', { token: c.api.token, body: '{bad json' }, 400],
      ['GET', `/v1/tasks/${task.body.task.id}/logs`, { token: c.api.token }, 200], // written by hand (hijacked reply)
      ['GET', '/openapi.json', { token: c.api.token }, 200],
    ];
    for (const [method, path, opts, status] of checks) {
      const r = await rawRequest(c.url, method, path, opts);
      assert.equal(r.status, status, `${method} ${path}: ${r.text}`);
      assertSecurityHeaders(r, `${method} ${path}`);
    }
  });

  it('without a build the pages answer 503 saying to run npm run build:web, assets 404; a rebuild is served at once', async () => {
    const moved = `${dist}.away`;
    renameSync(dist, moved);
    try {
      for (const path of ['/', '/tasks/abc']) {
        const r = await rawRequest(c.url, 'GET', path);
        assert.equal(r.status, 503, path);
        assert.equal(r.headers['content-type'], 'text/plain; charset=utf-8');
        assert.match(r.text, /npm run build:web/);
        assert.ok(r.text.includes(join(dist, 'index.html')), r.text);
        assertSecurityHeaders(r, `503 ${path}`);
      }
      assert.equal((await rawRequest(c.url, 'GET', '/assets/app-4f3a2b.js')).status, 404);
    } finally {
      renameSync(moved, dist);
    }
    const back = await rawRequest(c.url, 'GET', '/');
    assert.equal(back.status, 200);
    assert.equal(back.text, INDEX);
  });
});

describe('e2e: the default build directory is the package\'s web/dist, whatever the cwd', () => {
  let dir: string;
  let server: ChildProcess | null = null;
  let url = '';
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'drover-cwd-'));
    // Started by hand, not by the harness: in a directory of its own, far from the package.
    const child = spawn(process.execPath, [BIN, 'server', '--db', `sqlite:${join(dir, 'd.db')}`, '--port', '0'], {
      cwd: dir,
      env: { ...process.env, DROVER_EXIT_WITH_PARENT: '1', DROVER_ADMIN_TOKEN: 'drv_cwd_test', DROVER_WEB_DIST: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    server = child;
    url = await new Promise<string>((res, rej) => {
      let out = '';
      child.stdout!.on('data', (d: Buffer) => {
        out += d.toString();
        const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
        if (m) res(m[1]!);
      });
      child.once('exit', (code) => rej(new Error(`server exited ${code}: ${out}`)));
    });
  });
  after(async () => {
    if (server && server.exitCode === null) {
      const exited = once(server, 'exit');
      server.kill('SIGKILL');
      await exited;
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('serves <package>/web/dist/index.html, or says that one is not built', async () => {
    const index = resolve(import.meta.dirname, '../../../web/dist/index.html');
    const r = await rawRequest(url, 'GET', '/');
    if (existsSync(index)) {
      assert.equal(r.status, 200);
      assert.equal(r.headers['content-type'], 'text/html; charset=utf-8');
    } else {
      assert.equal(r.status, 503);
      assert.ok(r.text.includes(index), r.text);
    }
  });
});
