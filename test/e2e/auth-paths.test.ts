/**
 * Authorization follows the MATCHED route, whatever the spelling of the path
 * (issue 7, hole 1: a user token at /v1/workers/%63onnect was welcomed as a
 * worker). Every privileged path, in every odd spelling, with every role, as
 * a plain request and as a WebSocket upgrade, against a real server process;
 * each case asserts the exact status.
 *
 * Paths are sent byte for byte (node:http with a raw `path`, never a URL
 * object, which would normalize `./`, `../` and case of the scheme only).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startCluster, type Cluster } from './harness.js';

type Role = 'none' | 'user' | 'worker' | 'admin';
const ROLES: Role[] = ['none', 'user', 'worker', 'admin'];

interface Answer {
  status: number;
  body: any;
}

/** One request with the path exactly as given. An upgrade that succeeds answers 101 (the socket is closed at once). */
function raw(base: string, method: string, path: string, token: string | null, opts: { upgrade?: boolean; body?: unknown } = {}): Promise<Answer> {
  const u = new URL(base);
  const headers: Record<string, string> = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (opts.upgrade) {
    Object.assign(headers, { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': randomBytes(16).toString('base64') });
  }
  const payload = opts.body === undefined ? undefined : JSON.stringify(opts.body);
  if (payload !== undefined) {
    headers['content-type'] = 'application/json';
    headers['content-length'] = String(Buffer.byteLength(payload));
  }
  return new Promise((resolve, reject) => {
    const req = request({ hostname: u.hostname, port: u.port, method, path, headers, agent: false }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (d: Buffer) => parts.push(d));
      res.on('end', () => {
        const text = Buffer.concat(parts).toString('utf8');
        let body: any = null;
        try {
          body = JSON.parse(text);
        } catch {
          body = text;
        }
        resolve({ status: res.statusCode ?? 0, body });
      });
      res.on('error', reject);
    });
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode ?? 0, body: null });
    });
    req.on('error', reject);
    req.end(payload);
  });
}

/** Who may call a route: the roles whose tokens may, or 'public' (anyone, with or without a token, gets `ok`). */
type Access = Role[] | 'public';

/** A route as the server declares it: who may call it, and what an allowed caller gets for the probe request. */
interface Route {
  method: 'GET' | 'POST' | 'DELETE';
  /** The canonical path of the probe (an existing route's spelling). */
  path: string;
  access: Access;
  /** Status for an allowed role, plain request. */
  ok: number;
  /** The one WebSocket route. */
  websocket?: boolean;
  body?: unknown;
  /**
   * Status for an allowed role when a query string (or a fragment, which
   * Fastify parses as the query) is added. Default: 400 under /v1/ (every
   * API route's query is closed: its schema's, or none at all by
   * request-shape.ts), else the route's `ok` (pages ignore their query).
   */
  okWithQuery?: number;
  /** The path ends with a parameter: `;x=1` becomes part of it, so the route matches and its validation says 400 (or `semicolonOk`). */
  endsWithParam?: boolean;
  semicolonOk?: number;
  /** The segment the spellings change (its case, its encoding, dot segments before it); default the route's first word after /v1. */
  word?: number;
  /**
   * What `%2F` or a backslash for the last slash matches when the segment
   * before it is a parameter (the last segment joins it); default no route.
   */
  encodedLastSlash?: { access: Access; ok: number };
  /** What the trailing-slash spelling matches: another route's status for an allowed role, or null for no route. */
  trailingSlash?: { access: Access; ok: number } | null;
}

const UNKNOWN_TASK = '01ARZ3NDEKTSV4RRFFQ69G5FAV';
const UNKNOWN_TOKEN = '0123456789abcdef';
const PEOPLE: Role[] = ['user', 'admin'];
const TASK_BY_ID = { access: PEOPLE, ok: 404 }; // `/v1/tasks/` is GET /v1/tasks/:id with an empty id: no such path (app.ts), 404
/** `/v1/tasks/ID%2Flogs` is GET /v1/tasks/:id with the id `ID/logs`: malformed, 400. */
const TASK_ID_MALFORMED = { access: PEOPLE, ok: 400 };
const UNKNOWN_SCHEDULE = 'nosuch';
const SCHEDULE_BY_NAME = { access: PEOPLE, ok: 404 }; // `/v1/schedules/` is GET /v1/schedules/:name with an empty name: 404
const UNKNOWN_DAG = 'nosuch';
const DAG_BY_NAME = { access: PEOPLE, ok: 404 }; // `/v1/dags/` is GET /v1/dags/:name with an empty name: 404
const DAG_RUN_BY_ID = { access: PEOPLE, ok: 404 }; // `/v1/dag-runs/` is GET /v1/dag-runs/:id with an empty id: 404
/** An asset of the stand-in build the server is pointed at (DROVER_WEB_DIST). */
const ASSET = 'app-1a2b3c.js';

const ROUTES: Route[] = [
  { method: 'GET', path: '/v1/workers/connect', access: ['worker'], ok: 404, websocket: true, trailingSlash: null },
  // Users list workers too (their own tasks among the running attempts).
  { method: 'GET', path: '/v1/workers', access: PEOPLE, ok: 200, trailingSlash: null },
  { method: 'POST', path: '/v1/workers/nosuch/drain', access: ['admin'], ok: 404, trailingSlash: null },
  { method: 'GET', path: '/v1/tokens', access: ['admin'], ok: 200, trailingSlash: null },
  { method: 'POST', path: '/v1/tokens', access: ['admin'], ok: 201, body: { name: 'probe', role: 'user' }, trailingSlash: null },
  { method: 'DELETE', path: `/v1/tokens/${UNKNOWN_TOKEN}`, access: ['admin'], ok: 404, endsWithParam: true, trailingSlash: null },
  { method: 'GET', path: '/v1/tasks', access: PEOPLE, ok: 200, trailingSlash: TASK_BY_ID },
  { method: 'POST', path: '/v1/tasks', access: PEOPLE, ok: 201, body: { command: 'true' }, trailingSlash: null },
  { method: 'GET', path: `/v1/tasks/${UNKNOWN_TASK}`, access: PEOPLE, ok: 404, endsWithParam: true, trailingSlash: null },
  // `/v1/tasks/ID%2Flogs` is GET /v1/tasks/:id with the id "ID/logs": 400.
  { method: 'GET', path: `/v1/tasks/${UNKNOWN_TASK}/logs`, access: PEOPLE, ok: 404, encodedLastSlash: TASK_ID_MALFORMED, trailingSlash: null },
  { method: 'POST', path: `/v1/tasks/${UNKNOWN_TASK}/cancel`, access: PEOPLE, ok: 404, trailingSlash: null },
  { method: 'POST', path: `/v1/tasks/${UNKNOWN_TASK}/retry`, access: PEOPLE, ok: 404, trailingSlash: null },
  { method: 'POST', path: `/v1/tasks/${UNKNOWN_TASK}/rerun`, access: PEOPLE, ok: 404, trailingSlash: null },
  // Schedules (issue 11): people only. The create probe's expression is invalid, so an allowed caller gets 400 every
  // time (a valid one would be 201 once, then 409); the per-name routes read `?owner=`, so a foreign query is 400.
  { method: 'GET', path: '/v1/schedules', access: PEOPLE, ok: 200, trailingSlash: SCHEDULE_BY_NAME },
  { method: 'POST', path: '/v1/schedules', access: PEOPLE, ok: 400, body: { name: 'probe', schedule: 'not cron', task: { command: 'true' } }, trailingSlash: null },
  { method: 'GET', path: `/v1/schedules/${UNKNOWN_SCHEDULE}`, access: PEOPLE, ok: 404, endsWithParam: true, trailingSlash: null },
  { method: 'DELETE', path: `/v1/schedules/${UNKNOWN_SCHEDULE}`, access: PEOPLE, ok: 404, endsWithParam: true, trailingSlash: null },
  { method: 'POST', path: `/v1/schedules/${UNKNOWN_SCHEDULE}/pause`, access: PEOPLE, ok: 404, trailingSlash: null },
  { method: 'POST', path: `/v1/schedules/${UNKNOWN_SCHEDULE}/resume`, access: PEOPLE, ok: 404, trailingSlash: null },
  { method: 'POST', path: `/v1/schedules/${UNKNOWN_SCHEDULE}/run`, access: PEOPLE, ok: 404, trailingSlash: null },
  // Next fire times of an unsaved expression: without `schedule` (the probe) an allowed caller gets 400, with a foreign query too.
  { method: 'GET', path: '/v1/cron/next', access: PEOPLE, ok: 400, trailingSlash: null },
  // DAGs (issue 12): people only. The apply probe has no step, so an allowed caller gets 400 every time (nothing is stored);
  // `/v1/dags/` and `/v1/dag-runs/` are the by-name and by-id routes with an empty parameter: 400.
  { method: 'GET', path: '/v1/dags', access: PEOPLE, ok: 200, trailingSlash: DAG_BY_NAME },
  { method: 'POST', path: '/v1/dags', access: PEOPLE, ok: 400, body: { name: 'probe', steps: [] }, trailingSlash: null },
  { method: 'GET', path: `/v1/dags/${UNKNOWN_DAG}`, access: PEOPLE, ok: 404, endsWithParam: true, trailingSlash: null },
  { method: 'POST', path: `/v1/dags/${UNKNOWN_DAG}/runs`, access: PEOPLE, ok: 404, body: {}, trailingSlash: null },
  { method: 'GET', path: '/v1/dag-runs', access: PEOPLE, ok: 200, trailingSlash: DAG_RUN_BY_ID },
  { method: 'GET', path: `/v1/dag-runs/${UNKNOWN_TASK}`, access: PEOPLE, ok: 404, endsWithParam: true, trailingSlash: null },
  { method: 'POST', path: `/v1/dag-runs/${UNKNOWN_TASK}/cancel`, access: PEOPLE, ok: 404, trailingSlash: null },
  { method: 'POST', path: `/v1/dag-runs/${UNKNOWN_TASK}/retry`, access: PEOPLE, ok: 404, trailingSlash: null },
  // The API's shape is public: the document and its rendered reference page (with its stylesheet).
  { method: 'GET', path: '/openapi.json', access: 'public', ok: 200, trailingSlash: null },
  { method: 'GET', path: '/docs/api', access: 'public', ok: 200, word: 1, trailingSlash: null },
  { method: 'GET', path: '/docs/api.css', access: 'public', ok: 200, word: 1, trailingSlash: null },
  // Dashboard reads (GET /v1/stream is an open event stream: its access is tested in stream.test.ts).
  { method: 'GET', path: `/v1/tasks/${UNKNOWN_TASK}/log-chunks`, access: PEOPLE, ok: 404, encodedLastSlash: TASK_ID_MALFORMED, trailingSlash: null },
  { method: 'GET', path: '/v1/stats/counts', access: PEOPLE, ok: 200, trailingSlash: null },
  { method: 'GET', path: '/v1/stats/minutes', access: PEOPLE, ok: 200, trailingSlash: null },
  // Dashboard sign-in. Without an Origin header a sign-in is refused (403) whoever sends it, before the body is read.
  { method: 'POST', path: '/v1/session', access: 'public', ok: 403, okWithQuery: 403, body: { token: 'x' }, trailingSlash: null }, // the Origin check answers before the query is looked at
  // A Bearer request has no dashboard session to end: 400.
  { method: 'DELETE', path: '/v1/session', access: PEOPLE, ok: 400, trailingSlash: null },
  { method: 'GET', path: '/v1/me', access: PEOPLE, ok: 200, trailingSlash: null },
  { method: 'POST', path: '/v1/login-codes', access: PEOPLE, ok: 201, trailingSlash: null },
  // The dashboard's pages and assets are public; `/tasks/` is the page `/tasks/:id` with an empty id (the app shows "not found").
  { method: 'GET', path: '/sign-in', access: 'public', ok: 200, trailingSlash: null },
  { method: 'GET', path: '/tasks', access: 'public', ok: 200, trailingSlash: { access: 'public', ok: 200 } },
  { method: 'GET', path: '/schedules', access: 'public', ok: 200, trailingSlash: null },
  { method: 'GET', path: '/schedules/new', access: 'public', ok: 200, word: 1, trailingSlash: null },
  { method: 'GET', path: `/tasks/${UNKNOWN_TASK}`, access: 'public', ok: 200, word: 1, endsWithParam: true, semicolonOk: 200, trailingSlash: null },
  // The DAG pages; `/dags/` is the page `/dags/:name` with an empty name (the app shows "not found"), like `/tasks/`.
  { method: 'GET', path: '/dags', access: 'public', ok: 200, trailingSlash: { access: 'public', ok: 200 } },
  { method: 'GET', path: '/dags/nosuch', access: 'public', ok: 200, word: 1, endsWithParam: true, semicolonOk: 200, trailingSlash: null },
  { method: 'GET', path: `/dag-runs/${UNKNOWN_TASK}`, access: 'public', ok: 200, word: 1, endsWithParam: true, semicolonOk: 200, trailingSlash: null },
  // `;x=1` joins the file name, which the asset route refuses: 404 from the route, not "no route".
  { method: 'GET', path: `/assets/${ASSET}`, access: 'public', ok: 200, word: 1, endsWithParam: true, semicolonOk: 404, trailingSlash: null },
];

/** A spelling of a route's path, and which route the router matches for it: the same one, another, or none. */
interface Spelling {
  name: string;
  path: string;
  /**
   * 'same' keeps the route; null is no route (404 for anyone authenticated);
   * 'unparsable' is refused by Node's HTTP parser before any route or token is looked at (400 for all).
   */
  match: 'same' | null | 'unparsable' | { access: Access; ok: number };
  okOverride?: number;
  /** The spelling adds a query: the worker WebSocket (no query parameters) is then a 400 too, not upgraded. */
  query?: boolean;
}

function spellings(r: Route): Spelling[] {
  const p = r.path;
  const withQuery = r.okWithQuery ?? (p.startsWith('/v1/') ? 400 : undefined);
  const segs = p.split('/'); // ['', 'v1', 'workers', 'connect']
  const last = segs.length - 1;
  /** The route's first word (workers, tokens, tasks; openapi.json), unless the route names another. */
  const word = r.word ?? (segs.length > 2 ? 2 : 1);
  const hex = (ch: string) => ch.charCodeAt(0).toString(16);
  const withSeg = (i: number, v: string) => segs.map((s, j) => (j === i ? v : s)).join('/');
  /**
   * The first letter after `from` whose code has a hex letter (k = 6b), encoded with upper-case hex
   * digits (%6B); null when the path has none (`/v1/dags`: v d a g s are 76 64 61 67 73).
   */
  const upperHex = (from: number) => {
    const i = [...p].findIndex((ch, j) => j >= from && /[a-z]/i.test(ch) && /[a-f]/.test(hex(ch)));
    return i < 0 ? null : `${p.slice(0, i)}%${hex(p[i]!).toUpperCase()}${p.slice(i + 1)}`;
  };
  const upper = upperHex(1);
  return [
    { name: 'canonical', path: p, match: 'same' },
    // The router decodes these, so they reach the same route, and its access applies.
    { name: 'percent-encoded first letter of the last segment', path: withSeg(last, `%${hex(segs[last]!)}${segs[last]!.slice(1)}`), match: 'same' },
    ...(upper !== null ? [{ name: 'percent-encoded letter, upper-case hex', path: upper, match: 'same' as const }] : []),
    { name: 'a whole segment percent-encoded', path: withSeg(word, [...segs[word]!].map((ch) => `%${hex(ch)}`).join('')), match: 'same' },
    { name: 'query string', path: `${p}?next=/v1/workers/connect`, match: 'same', query: true, ...(withQuery !== undefined ? { okOverride: withQuery } : {}) },
    { name: 'fragment', path: `${p}#/v1/workers/connect`, match: 'same', query: true, ...(withQuery !== undefined ? { okOverride: withQuery } : {}) },
    // None of these is the route's spelling: no route, so 401 or 404, never the route's answer.
    segs.length > 2
      ? { name: '%2F for the last slash', path: `${segs.slice(0, last).join('/')}%2F${segs[last]}`, match: r.encodedLastSlash ?? null }
      : { name: '%2F for the only slash (no leading slash)', path: `%2F${segs[1]}`, match: 'unparsable' },
    { name: '%2f (lower case) for the first inner slash', path: segs.length > 2 ? `/${segs[1]}%2f${segs.slice(2).join('/')}` : `/%2f${segs[1]}`, match: null },
    { name: 'leading doubled slash', path: `/${p}`, match: null },
    { name: 'inner doubled slash', path: withSeg(word, `/${segs[word]}`), match: null },
    { name: 'trailing slash', path: `${p}/`, match: r.trailingSlash === undefined ? null : r.trailingSlash },
    { name: './ segment', path: withSeg(word, `./${segs[word]}`), match: null },
    { name: '%2e/ segment', path: withSeg(word, `%2e/${segs[word]}`), match: null },
    { name: '../ segment', path: withSeg(word, `x/../${segs[word]}`), match: null },
    { name: 'encoded ../ segment', path: withSeg(word, `x/%2e%2e/${segs[word]}`), match: null },
    { name: 'upper case', path: p.toUpperCase(), match: null },
    { name: 'first letter of the route upper case', path: withSeg(word, segs[word]!.charAt(0).toUpperCase() + segs[word]!.slice(1)), match: null },
    r.endsWithParam ? { name: 'semicolon parameter (part of the id)', path: `${p};x=1`, match: 'same', okOverride: r.semicolonOk ?? 400 } : { name: 'semicolon parameter', path: `${p};x=1`, match: null },
    { name: 'backslash for a slash', path: `${segs.slice(0, last).join('/')}\\${segs[last]}`, match: segs.length > 2 ? (r.encodedLastSlash ?? null) : 'unparsable' },
  ];
}

/** The route a spelling reaches (null: none), with what an allowed caller gets there. */
function targetOf(route: Route, s: Spelling): { access: Access; ok: number; websocket: boolean } | null {
  if (s.match === null || s.match === 'unparsable') return null;
  return s.match === 'same' ? { access: route.access, ok: s.okOverride ?? route.ok, websocket: route.websocket === true } : { ...s.match, websocket: false };
}

/** The exact status `role` must get for `spelling` of `route` (plain or upgrade), and whether a 404 must be "no route". */
function expected(route: Route, s: Spelling, role: Role, upgrade: boolean): { status: number; noRoute?: boolean } {
  if (s.match === 'unparsable') return { status: 400 };
  const target = targetOf(route, s);
  // A public route answers everyone alike (and is never upgraded).
  if (target?.access === 'public') return { status: upgrade ? 400 : target.ok };
  if (role === 'none') return { status: 401 };
  if (target === null) return { status: 404, noRoute: true };
  if (!target.access.includes(role)) return { status: 403 };
  if (upgrade) return { status: target.websocket && !s.query ? 101 : 400 };
  return { status: target.ok };
}

describe('e2e: authorization on the matched route, for every spelling and role', () => {
  let c: Cluster;
  const tokens: Record<Role, string | null> = { none: null, user: null, worker: null, admin: null };

  let webDist: string;

  before(async () => {
    // A stand-in dashboard build, so the page and asset routes answer 200 whether or not web/dist is built.
    webDist = mkdtempSync(join(tmpdir(), 'drover-auth-paths-web-'));
    mkdirSync(join(webDist, 'assets'));
    writeFileSync(join(webDist, 'index.html'), '<!doctype html><title>drover</title>\n');
    writeFileSync(join(webDist, 'assets', ASSET), 'export {};\n');
    c = await startCluster({ workers: 0, serverEnv: { DROVER_WEB_DIST: webDist } });
    tokens.admin = c.api.token;
    tokens.worker = c.workerToken;
    const u = await c.api.req('POST', '/v1/tokens', { name: 'auth-paths-user', role: 'user' });
    assert.equal(u.status, 201, u.text);
    tokens.user = u.body.secret;
  });
  after(async () => {
    await c?.close();
    if (webDist) rmSync(webDist, { recursive: true, force: true });
  });

  it('the worker WebSocket: only a worker token is upgraded, at any spelling that reaches the route', async () => {
    const route = ROUTES[0]!;
    for (const s of spellings(route)) {
      for (const role of ROLES) {
        const want = expected(route, s, role, true);
        const got = await raw(c.url, 'GET', s.path, tokens[role], { upgrade: true });
        assert.equal(got.status, want.status, `${role} upgrade ${s.name} ${s.path}: ${JSON.stringify(got.body)}`);
        if (role !== 'worker') assert.notEqual(got.status, 101, `${role} got an upgrade at ${s.path}`);
      }
    }
  });

  for (const route of ROUTES) {
    it(`${route.method} ${route.path}: every spelling, every role, plain${route.method === 'GET' ? ' and upgrade' : ''}`, async () => {
      for (const s of spellings(route)) {
        for (const role of ROLES) {
          const want = expected(route, s, role, false);
          const got = await raw(c.url, route.method, s.path, tokens[role], route.body !== undefined ? { body: route.body } : {});
          const what = `${role} ${route.method} ${s.name} ${s.path}`;
          assert.equal(got.status, want.status, `${what}: ${JSON.stringify(got.body)}`);
          if (want.noRoute) assert.match(got.body?.error?.message ?? '', /^no route /, what);
          if (got.status === 403 && role === 'worker' && targetOf(route, s)?.access !== 'public') assert.match(got.body.error.message, /worker tokens may only connect as a worker/, what);
          if (route.method === 'GET') {
            const wantUp = expected(route, s, role, true);
            const up = await raw(c.url, 'GET', s.path, tokens[role], { upgrade: true });
            assert.equal(up.status, wantUp.status, `upgrade ${what}: ${JSON.stringify(up.body)}`);
            if (role !== 'worker') assert.notEqual(up.status, 101, `${role} got an upgrade at ${s.path}`);
          }
        }
      }
    });
  }

  it('other methods on the worker path are no route for anyone authenticated, and 401 without a token', async () => {
    for (const method of ['POST', 'DELETE', 'PUT']) {
      for (const role of ROLES) {
        const got = await raw(c.url, method, '/v1/workers/connect', tokens[role]);
        assert.equal(got.status, role === 'none' ? 401 : 404, `${role} ${method}`);
      }
    }
    // HEAD of the WebSocket route: a HEAD cannot be upgraded, and only a worker passes the check at all.
    for (const role of ROLES) {
      const got = await raw(c.url, 'HEAD', '/v1/workers/connect', tokens[role]);
      assert.equal(got.status, role === 'none' ? 401 : role === 'worker' ? 404 : 403, `${role} HEAD`);
    }
  });

  it('/healthz is public in every role (and never upgraded); a bad or malformed token is 401 everywhere else', async () => {
    for (const role of ROLES) assert.equal((await raw(c.url, 'GET', '/healthz', tokens[role])).status, 200, role);
    for (const role of ROLES) assert.equal((await raw(c.url, 'GET', '/healthz', tokens[role], { upgrade: true })).status, 400, `${role} upgrade /healthz`);
    for (const route of ROUTES.filter((r) => r.access !== 'public')) {
      const bad = await raw(c.url, route.method, route.path, 'drv_not_a_token', route.body !== undefined ? { body: route.body } : {});
      assert.equal(bad.status, 401, `${route.method} ${route.path}`);
    }
    const noRoute = await raw(c.url, 'GET', '/v1/nothing-here', null);
    assert.equal(noRoute.status, 401);
  });

  it('a path segment over 100 characters is a 414 and a malformed URL a 400, both in the API\'s error shape', async () => {
    for (const role of ROLES) {
      const long = await raw(c.url, 'GET', `/v1/tasks/${'w'.repeat(101)}`, tokens[role]);
      assert.equal(long.status, 414, role);
      assert.deepEqual(long.body, { error: { code: 'uri_too_long', message: 'path: a path segment is longer than 100 characters', field: 'path', reason: 'a path segment is longer than 100 characters' } });
    }
    const bad = await raw(c.url, 'GET', '/v1/tasks/%E0%A4%A', tokens.user);
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.field, 'path');
  });

  it('a worker token never reaches a REST route, a user never an admin route (the 403 names the role)', async () => {
    const w = await raw(c.url, 'GET', '/v1/tasks', tokens.worker);
    assert.equal(w.status, 403);
    assert.equal(w.body.error.code, 'forbidden');
    const u = await raw(c.url, 'GET', '/v1/tokens', tokens.user);
    assert.equal(u.status, 403);
    assert.match(u.body.error.message, /this needs role admin; the token has role user/);
    const uw = await raw(c.url, 'GET', '/v1/workers/%63onnect', tokens.user, { upgrade: true });
    assert.equal(uw.status, 403);
    assert.match(uw.body.error.message, /only worker tokens may connect as a worker/);
  });
});
