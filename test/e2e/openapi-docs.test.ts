/**
 * The API's own documentation, on a real `drover server`: `/openapi.json` and
 * the rendered reference `/docs/api` are readable without a token; the
 * document lists every error status the layers around each route can answer
 * (walked operation by operation, against the rules of
 * src/server/openapi-errors.ts), and a few of them are provoked to show the
 * document tells the truth; the page is one HTML file with no script and no
 * inline style, styled by its own stylesheet under the server's CSP (checked
 * in Chromium: no CSP violation, the stylesheet applied).
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { startCluster, type Cluster } from './harness.js';
import { patternRule } from '../../src/server/pattern-rules.js';
import { WEB_SECRET_PATTERN } from '../../src/server/web-auth.js';
import { chromium } from 'playwright-core';
import { CHROMIUM, CHROMIUM_ARGS } from '../browser/browser-harness.js';

type Json = Record<string, any>;

function get(url: string, path: string, headers: Record<string, string> = {}, method = 'GET', body?: string): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }> {
  return new Promise((resolve, reject) => {
    const r = request(url + path, { method, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
      res.on('error', reject);
    });
    r.on('error', reject);
    r.end(body);
  });
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

function operations(doc: Json): { method: string; path: string; op: Json }[] {
  const out: { method: string; path: string; op: Json }[] = [];
  for (const [path, item] of Object.entries(doc.paths as Json)) for (const m of METHODS) if ((item as Json)[m]) out.push({ method: m, path, op: (item as Json)[m] });
  return out;
}

describe('e2e: the OpenAPI document and the API reference page', () => {
  let c: Cluster;
  let doc: Json;
  before(async () => {
    c = await startCluster({ workers: 0 });
    const r = await get(c.url, '/openapi.json');
    assert.equal(r.status, 200, r.text);
    doc = JSON.parse(r.text) as Json;
  });
  after(() => c?.close());

  it('/openapi.json needs no token (and says so of itself); a token still works', async () => {
    assert.equal(doc.openapi, '3.0.3');
    assert.match(doc.info.description, /public/);
    const withToken = await get(c.url, '/openapi.json', { authorization: `Bearer ${c.api.token}` });
    assert.equal(withToken.status, 200);
  });

  it('every operation documents the error statuses its layers can answer, each with a description and the error shape', () => {
    const ops = operations(doc);
    assert.ok(ops.length >= 20, `only ${ops.length} operations`);
    const seen = new Set<string>();
    for (const { method, path, op } of ops) {
      const name = `${method.toUpperCase()} ${path}`;
      const statuses = Object.keys(op.responses);
      statuses.forEach((s) => seen.add(s));
      const want = ['503'];
      const isPublic = Array.isArray(op.security) && op.security.length === 0;
      if (!isPublic) want.push('401', '403');
      if (method !== 'get') want.push('400', '413', '415');
      if ((op.parameters ?? []).length > 0 || op.requestBody) want.push('400');
      if (path.includes('{')) want.push('404', '414');
      for (const s of want) assert.ok(statuses.includes(s), `${name} does not document ${s} (has ${statuses.join(', ')})`);
      for (const s of statuses.filter((x) => Number(x) >= 400)) {
        const r = op.responses[s];
        assert.ok(r.description && r.description !== 'Default Response', `${name} ${s} has no description`);
        const schema = r.content?.['application/json']?.schema;
        assert.deepEqual(schema?.properties?.error?.required, ['code', 'message'], `${name} ${s}: not the error shape`);
      }
    }
    for (const s of ['400', '401', '403', '404', '409', '413', '414', '415', '429', '503']) assert.ok(seen.has(s), `no operation documents ${s}`);
    const submit = doc.paths['/v1/tasks'].post.responses;
    assert.ok(submit['409'], 'POST /v1/tasks: an Idempotency-Key reused with another body is 409');
    assert.ok(doc.paths['/v1/stream'].get.responses['429']);
  });

  it('the statuses it documents are what the server answers (415, 413, 401, 404, 400)', async () => {
    const auth = { authorization: `Bearer ${c.api.token}` };
    const documented = (method: string, path: string, status: number) => assert.ok(doc.paths[path][method].responses[String(status)], `${method} ${path} ${status} undocumented`);
    const r415 = await get(c.url, '/v1/tasks', { ...auth, 'content-type': 'application/xml' }, 'POST', '<task/>');
    assert.equal(r415.status, 415, r415.text);
    documented('post', '/v1/tasks', 415);
    // text/plain too (Fastify parses it as a string by default; the server takes JSON only).
    const plain = await get(c.url, '/v1/tasks', { ...auth, 'content-type': 'text/plain' }, 'POST', '{"command":"echo"}');
    assert.equal(plain.status, 415, plain.text);
    assert.match(plain.text, /send Content-Type: application\/json/);
    // An action without a body schema takes none (or {}): anything else is a 400, and the action is not done.
    const id = (JSON.parse((await get(c.url, '/v1/tasks', { ...auth, 'content-type': 'application/json' }, 'POST', JSON.stringify({ command: 'true', delay: '1h' }))).text) as { task: { id: string } }).task.id;
    for (const [body, field] of [['{"reason":"x"}', 'reason'], ['[]', 'body'], ['null', 'body'], ['7', 'body']] as const) {
      const r = await get(c.url, `/v1/tasks/${id}/cancel`, { ...auth, 'content-type': 'application/json' }, 'POST', body);
      assert.equal(r.status, 400, `${body}: ${r.text}`);
      assert.equal(JSON.parse(r.text).error.field, field, body);
      assert.match(JSON.parse(r.text).error.reason, /^POST \/v1\/tasks\/:id\/cancel takes no body/);
    }
    assert.equal(JSON.parse((await get(c.url, `/v1/tasks/${id}`, auth)).text).task.state, 'ready', 'not cancelled');
    // A route without a querystring schema takes no query parameter: refused (named), not ignored; nothing is done.
    const before = JSON.parse((await get(c.url, '/v1/stats/counts', auth)).text).total as number;
    for (const [method, path, body, field] of [
      ['POST', '/v1/tasks?wait=1', JSON.stringify({ command: 'true' }), 'wait'],
      ['POST', '/v1/tasks/batch?dry_run=1&x=2', JSON.stringify({ tasks: [{ command: 'true' }] }), 'dry_run'],
      ['POST', `/v1/tasks/${id}/cancel?force=1`, undefined, 'force'],
      ['GET', '/v1/workers?state=connected', undefined, 'state'],
      ['GET', `/v1/tasks/${id}?fields=id`, undefined, 'fields'],
      ['GET', '/v1/me?x', undefined, 'x'],
    ] as const) {
      const r = await get(c.url, path, body === undefined ? auth : { ...auth, 'content-type': 'application/json' }, method, body);
      assert.equal(r.status, 400, `${method} ${path}: ${r.text}`);
      assert.equal(JSON.parse(r.text).error.field, field, path);
      assert.match(JSON.parse(r.text).error.reason, /^unknown field \(.* takes no query parameters\)$/, path);
      documented(method.toLowerCase(), path.split('?')[0]!.replace(id, '{id}'), 400);
    }
    assert.equal(JSON.parse((await get(c.url, '/v1/stats/counts', auth)).text).total, before, 'nothing was submitted');
    assert.equal(JSON.parse((await get(c.url, `/v1/tasks/${id}`, auth)).text).task.state, 'ready', 'not cancelled');
    assert.equal((await get(c.url, '/v1/workers?', auth)).status, 200, 'an empty query is none');
    const empty = await get(c.url, `/v1/tasks/${id}/cancel`, { ...auth, 'content-type': 'application/json' }, 'POST', '{}');
    assert.equal(empty.status, 200, empty.text);
    const big = JSON.stringify({ command: 'true', args: ['x'.repeat(1024 * 1024)] });
    const r413 = await get(c.url, '/v1/tasks', { ...auth, 'content-type': 'application/json' }, 'POST', big);
    assert.equal(r413.status, 413);
    documented('post', '/v1/tasks', 413);
    assert.equal((await get(c.url, '/v1/tasks')).status, 401);
    documented('get', '/v1/tasks', 401);
    assert.equal((await get(c.url, '/v1/tasks/01JF0000000000000000000000', auth)).status, 404);
    documented('get', '/v1/tasks/{id}', 404);
    assert.equal((await get(c.url, '/v1/tasks?limit=0', auth)).status, 400);
    documented('get', '/v1/tasks', 400);
  });

  it('every string pattern of the document has its rule in words for the 400 (pattern-rules.ts), and a mismatch is answered with it', async () => {
    const patterns = new Set<string>();
    const walk = (v: unknown): void => {
      if (Array.isArray(v)) v.forEach(walk);
      else if (v !== null && typeof v === 'object') {
        for (const [k, x] of Object.entries(v)) {
          if (k === 'pattern' && typeof x === 'string') patterns.add(x);
          else walk(x);
        }
      }
    };
    walk(doc.paths);
    assert.ok(patterns.size >= 8, `patterns found: ${[...patterns].join(' ')}`);
    // The sign-in code is not the caller's to shape: "malformed" is its whole answer.
    const without = [...patterns].filter((p) => patternRule(p) === undefined && p !== WEB_SECRET_PATTERN);
    assert.deepEqual(without, [], 'patterns with no rule in pattern-rules.ts');
    const auth = { authorization: `Bearer ${c.api.token}` };
    const json = { ...auth, 'content-type': 'application/json' };
    for (const [method, path, body, field, reason] of [
      ['GET', '/v1/tasks/01m99n53bn948365byngrbca4c', undefined, 'id', /^expected an id of 26 characters, 0-9 and A-Z without I, L, O, U \(Crockford base32\), upper case$/],
      ['GET', '/v1/tasks?id=01I', undefined, 'id', /^expected 1\.\.26 characters of an id/],
      ['POST', '/v1/schedules', JSON.stringify({ name: '..', schedule: '* * * * *', task: { command: 'true' } }), 'name', /^expected 1\.\.100 of A-Z a-z 0-9 \. _ -, not \. or \.\. alone$/],
      ['POST', '/v1/tokens', JSON.stringify({ name: 'n', role: 'user', user: 'a b' }), 'user', /^expected A-Z a-z 0-9 \. _ @ - only$/],
      ['POST', '/v1/workers/a%20b/drain', undefined, 'id', /^expected a worker id: /],
    ] as const) {
      const r = await get(c.url, path, body === undefined ? auth : json, method, body);
      assert.equal(r.status, 400, `${method} ${path}: ${r.text}`);
      const e = JSON.parse(r.text).error;
      assert.equal(e.field, field, path);
      assert.match(e.reason, reason, path);
      assert.equal(e.message, `${field}: ${e.reason}`, path);
    }
    assert.equal(JSON.parse((await get(c.url, '/v1/schedules', auth)).text).schedules.length, 0, 'no schedule was created');
  });

  it('/docs/api needs no token: one HTML page with every operation, no script, no inline style, its stylesheet beside it', async () => {
    const r = await get(c.url, '/docs/api');
    assert.equal(r.status, 200);
    assert.match(String(r.headers['content-type']), /^text\/html; charset=utf-8$/);
    assert.match(String(r.headers['content-security-policy']), /script-src 'self'; style-src 'self'/);
    const html = r.text;
    assert.doesNotMatch(html, /<script/i);
    assert.doesNotMatch(html, /<style/i);
    assert.doesNotMatch(html, /\sstyle=/i);
    assert.doesNotMatch(html, /\son[a-z]+=/i, 'no event handler attributes');
    assert.match(html, /<link rel="stylesheet" href="\/docs\/api\.css">/);
    for (const { method, path } of operations(doc)) {
      const shown = `<span class="method ${method}">${method.toUpperCase()}</span> <code>${path.replace(/&/g, '&amp;')}</code>`;
      assert.ok(html.includes(shown), `the page lacks ${method.toUpperCase()} ${path}`);
    }
    assert.match(html, /415<\/span> Unsupported media type/);
    const css = await get(c.url, '/docs/api.css');
    assert.equal(css.status, 200);
    assert.match(String(css.headers['content-type']), /^text\/css/);
    // Not an operation of the document itself.
    assert.equal(doc.paths['/docs/api'], undefined);
  });

  it('in Chromium the page loads under the CSP without a violation, styled by its stylesheet', { skip: existsSync(CHROMIUM) ? false : `no ${CHROMIUM}` }, async () => {
    // Not the browser harness's launchBrowser: that one wants the dashboard built, which this page does not need.
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    try {
      const page = await browser.newPage();
      const problems: string[] = [];
      page.on('console', (m) => {
        if (m.type() === 'error') problems.push(m.text());
      });
      page.on('pageerror', (e) => problems.push(e.message));
      const res = await page.goto(`${c.url}/docs/api`);
      assert.equal(res?.status(), 200);
      await page.waitForLoadState('load');
      const look = await page.evaluate(() => {
        const badge = document.querySelector('.method.post');
        return { badge: badge ? getComputedStyle(badge).backgroundColor : null, title: document.title, columns: getComputedStyle(document.body).display };
      });
      assert.equal(look.title, 'Drover API reference');
      assert.equal(look.badge, 'rgb(46, 139, 87)', 'the stylesheet is applied');
      assert.equal(look.columns, 'grid');
      assert.deepEqual(problems, []);
    } finally {
      await browser.close();
    }
  });
});
