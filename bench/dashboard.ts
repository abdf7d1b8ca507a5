/**
 * Dashboard bench (part of `npm run bench`, section `dashboard`; see run.ts).
 *
 *  1. The Tasks page's API calls with BENCH_DASH_TASKS (1,000,000) tasks in the
 *     store, on SQLite and on PostgreSQL: first page, a state-filtered page, the
 *     failed tasks newest end first (order=ended), an owner + state page, a
 *     name-prefix page, a page deep in the history and
 *     the counts by state, each through a real `drover server` (HTTP,
 *     authentication, JSON) against the same rows read by one indexed SQL query
 *     on the same database in the same run (better-sqlite3 / pg from this
 *     process). p50 of BENCH_DASH_RUNS (50) calls each, after BENCH_DASH_WARMUPS (200) warm-ups.
 *     The tasks are written by SQL in batches (with their attempts), so the
 *     store's triggers fill the counters and the change feed as real writes do.
 *  2. The live stream while BENCH_DASH_RATE (200) tasks a second are submitted
 *     and completed by noop agents for BENCH_DASH_SECONDS (15): 20 streams
 *     (`GET /v1/stream`, what each browser tab opens) record, for every task
 *     that reaches `succeeded`, receive time − the task's updatedAt (the server
 *     stamps updatedAt before the commit, so this span starts before the write
 *     it covers and ends when the bytes are in the client). p50/p99 over all
 *     20 streams, and the server's memory with 0 and with 20 streams.
 *     Plus one real Chromium tab on the Tasks page: a MutationObserver stamps
 *     the moment a row first shows `succeeded` (data-state), against the same
 *     updatedAt: "committed in the store → the browser showing it".
 *
 * Environment: BENCH_DASH_TASKS, BENCH_DASH_RUNS, BENCH_DASH_WARMUPS, BENCH_DASH_RATE,
 * BENCH_DASH_SECONDS, BENCH_DASH_STREAMS (20), BENCH_PG_URL (as control-plane.ts).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { monotonicFactory } from 'ulid';
import { openStore } from '../src/store/open-store.js';
import { SUMMARY_FROM, summaryColumns } from '../src/store/task-list.js';
import { startCluster, type Cluster } from '../test/e2e/harness.js';
import { launchBrowser, signIn, waitLive } from '../test/browser/browser-harness.js';
import type { LegacyRow as Row } from './lib/report.js';

const TASKS = Number(process.env.BENCH_DASH_TASKS ?? 1_000_000);
const RUNS = Number(process.env.BENCH_DASH_RUNS ?? 50);
/** Calls before the timed ones, per probe and side: a serving server's code paths are warm (optimized by the JIT); 5 left the API side's JavaScript mostly unoptimized. */
const WARMUPS = Number(process.env.BENCH_DASH_WARMUPS ?? 200);
const RATE = Number(process.env.BENCH_DASH_RATE ?? 200);
const SECONDS = Number(process.env.BENCH_DASH_SECONDS ?? 15);
const STREAMS = Number(process.env.BENCH_DASH_STREAMS ?? 20);
const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const BATCH = 10_000;
const OWNERS = 10;
const NAMES = 500;
const NOOP_WORKER = ['--executor', 'noop'];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
}

function kbOf(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : NaN;
}
const mib = (kb: number) => `${(kb / 1024).toFixed(0)} MiB`;

// ---------------------------------------------------------------- synthetic history

/** The i-th task of the history: oldest first, spread over the last 30 days. */
interface Synth {
  id: string;
  owner: string;
  name: string;
  state: 'succeeded' | 'failed' | 'cancelled' | 'waiting';
  createdAt: number;
}

function* history(n: number, now: number): Generator<Synth[]> {
  const ulid = monotonicFactory();
  const start = now - 30 * 86_400_000;
  const step = (now - 60_000 - start) / n;
  let batch: Synth[] = [];
  for (let i = 0; i < n; i++) {
    const createdAt = Math.floor(start + i * step);
    const r = i % 100;
    const state = r < 88 ? 'succeeded' : r < 95 ? 'failed' : r < 98 ? 'cancelled' : 'waiting';
    batch.push({ id: ulid(createdAt), owner: `user${i % OWNERS}`, name: `job-${(i * 7919) % NAMES}`, state, createdAt });
    if (batch.length === BATCH) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length) yield batch;
}

const TASK_COLS =
  'id, owner, state, name, kind, command, args, script, interpreter, env, timeout_ms, max_retries, retry_base_delay_ms, retry_factor, ' +
  'retry_max_delay_ms, priority, labels, requires, attempts, retries_used, lost_count, run_after, current_attempt_id, result, created_at, updated_at';

function result(t: Synth): string | null {
  if (t.state === 'waiting') return null;
  const outcome = t.state === 'cancelled' ? 'cancelled' : t.state;
  return JSON.stringify({ outcome, attempt: 1, exitCode: t.state === 'failed' ? 1 : t.state === 'succeeded' ? 0 : null, signal: t.state === 'cancelled' ? 'SIGTERM' : null, error: t.state === 'failed' ? 'exit code 1' : null, durationMs: 1000 });
}

/** Loads the history into a migrated SQLite file: tasks, then their attempts, then the tasks' current attempt, per batch transaction. */
export function loadSqlite(path: string, now: number): void {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  const task = db.prepare(
    `INSERT INTO tasks (${TASK_COLS}) VALUES (?, ?, ?, ?, 'batch', 'true', '[]', NULL, '[]', '{}', NULL, 3, 1000, 2, 60000, 0, '{}', '{}', ?, 0, 0, NULL, NULL, ?, ?, ?)`,
  );
  const attempt = db.prepare(
    `INSERT INTO attempts (id, task_id, number, worker_id, fencing_token, stop_reason, state, started_at, ended_at, lease_expires_at, exit_code, signal, error, duration_ms)
     VALUES (?, ?, 1, ?, '', NULL, ?, ?, ?, ?, ?, ?, ?, 1000)`,
  );
  const current = db.prepare('UPDATE tasks SET current_attempt_id = ? WHERE id = ?');
  let aid = 0;
  const insert = db.transaction((batch: Synth[]) => {
    for (const t of batch) task.run(t.id, t.owner, t.state, t.name, t.state === 'waiting' ? 0 : 1, result(t), t.createdAt, t.createdAt + 1100);
    for (const t of batch) {
      if (t.state === 'waiting') continue;
      aid++;
      attempt.run(aid, t.id, `bench-w${aid % 8}`, t.state, t.createdAt + 50, t.createdAt + 1050, t.createdAt + 15050, t.state === 'failed' ? 1 : t.state === 'succeeded' ? 0 : null, t.state === 'cancelled' ? 'SIGTERM' : null, t.state === 'failed' ? 'exit code 1' : null);
      current.run(aid, t.id);
    }
  });
  for (const b of history(TASKS, now)) insert(b);
  // The feed keeps 15 minutes of changes; the load's million changes are history nobody follows.
  db.exec('DELETE FROM changes');
  db.exec('ANALYZE');
  db.close();
}

export async function loadPostgres(url: string, now: number): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    let aid = 0;
    for (const b of history(TASKS, now)) {
      const col = <K extends keyof Synth>(k: K) => b.map((t) => t[k]);
      const ran = b.filter((t) => t.state !== 'waiting');
      const aids = ran.map(() => ++aid);
      await c.query('BEGIN');
      await c.query(
        `INSERT INTO tasks (${TASK_COLS})
         SELECT id, owner, state, name, 'batch', 'true', '[]', NULL, '[]', '{}', NULL, 3, 1000, 2, 60000, 0, '{}', '{}',
                CASE WHEN state = 'waiting' THEN 0 ELSE 1 END, 0, 0, NULL, NULL, res, created, created + 1100
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[]) AS u(id, owner, state, name, res, created)`,
        [col('id'), col('owner'), col('state'), col('name'), b.map(result), col('createdAt')],
      );
      await c.query(
        `INSERT INTO attempts (id, task_id, number, worker_id, fencing_token, stop_reason, state, started_at, ended_at, lease_expires_at, exit_code, signal, error, duration_ms)
         SELECT aid, tid, 1, 'bench-w' || (aid % 8), '', NULL, st, created + 50, created + 1050, created + 15050,
                CASE st WHEN 'failed' THEN 1 WHEN 'succeeded' THEN 0 END, CASE WHEN st = 'cancelled' THEN 'SIGTERM' END,
                CASE WHEN st = 'failed' THEN 'exit code 1' END, 1000
         FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[]) AS u(aid, tid, st, created)`,
        [aids, ran.map((t) => t.id), ran.map((t) => t.state), ran.map((t) => t.createdAt)],
      );
      await c.query('UPDATE tasks SET current_attempt_id = u.aid FROM unnest($1::bigint[], $2::text[]) AS u(aid, tid) WHERE tasks.id = u.tid', [aids, ran.map((t) => t.id)]);
      await c.query('COMMIT');
    }
    await c.query(`SELECT setval(pg_get_serial_sequence('attempts', 'id'), $1)`, [aid]);
    await c.query('DELETE FROM changes');
    await c.query('VACUUM ANALYZE');
  } finally {
    await c.end();
  }
}

// ---------------------------------------------------------------- the Tasks page's calls

/**
 * The summary the list API returns, read by hand: the same columns (the store's
 * own list, task-list.ts summaryColumns, with each dialect's JSON extraction of
 * the final result's error), the same join, the same order.
 */
const summary = (resultError: string) => `SELECT ${summaryColumns(resultError)} FROM ${SUMMARY_FROM}`;
const SQLITE_SUMMARY = summary("json_extract(t.result, '$.error')");
const PG_SUMMARY = summary("(t.result::json ->> 'error')");

/** How many newer tasks the deep page skips: 900,000 of the default million (90 % of a smaller history). */
const DEEP = Math.min(900_000, Math.floor(TASKS * 0.9));

interface Probe {
  label: string;
  path: string;
  /** SQL with `?` placeholders (rewritten to $n for PostgreSQL) and its parameters. */
  sql: string;
  params: unknown[];
}

function probes(summarySql: string, deepCursor: string): Probe[] {
  const page = (where: string, params: unknown[]) => ({ sql: `${summarySql}${where ? ` WHERE ${where}` : ''} ORDER BY t.id DESC LIMIT 51`, params });
  return [
    { label: 'first page', path: '/v1/tasks?limit=50', ...page('', []) },
    { label: 'state = failed', path: '/v1/tasks?limit=50&state=failed', ...page('t.state = ?', ['failed']) },
    { label: 'owner + state', path: '/v1/tasks?limit=50&owner=user5&state=cancelled', ...page('t.owner = ? AND t.state = ?', ['user5', 'cancelled']) },
    // The Overview's recent failures (and the Tasks page's failed, newest end first): the partial end index of migration 14.
    {
      label: 'state = failed, newest end first (order=ended)',
      path: '/v1/tasks?limit=50&state=failed&order=ended',
      sql: `${summarySql} WHERE t.state = 'failed' AND t.updated_at >= 0 ORDER BY t.updated_at DESC, t.id DESC LIMIT 51`,
      params: [],
    },
    // The best single query for a name range: the page's ids from the name index first, then their rows
    // (the naive form sorts 22,000 joined rows: about 90 ms on SQLite at 1,000,000 tasks).
    {
      label: 'name prefix job-12',
      path: '/v1/tasks?limit=50&name=job-12',
      ...page('t.id IN (SELECT t.id FROM tasks t WHERE t.name >= ? AND t.name < ? ORDER BY t.id DESC LIMIT 51)', ['job-12', 'job-13']),
    },
    { label: `deep page (${DEEP.toLocaleString('en')} newer tasks)`, path: `/v1/tasks?limit=50&cursor=${deepCursor}`, ...page('t.id < ?', [deepCursor]) },
    { label: 'counts by state', path: '/v1/stats/counts', sql: 'SELECT state, sum(n) AS n FROM task_counts GROUP BY state', params: [] },
  ];
}

async function timeIt(fn: () => Promise<unknown>): Promise<number[]> {
  for (let i = 0; i < WARMUPS; i++) await fn();
  const out: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now();
    await fn();
    out.push(performance.now() - t0);
  }
  return out;
}

async function measurePage(rows: Row[], backend: string, c: Cluster, raw: (sql: string, params: unknown[]) => Promise<unknown[]>, summarySql: string, deepCursor: string, scanSql: string): Promise<void> {
  // The floor of any API call here: one authenticated keep-alive HTTP request that reads nothing.
  const floor = pct(await timeIt(() => c.api.req('GET', '/v1/me')), 50);
  rows.push([`${backend}: floor, GET /v1/me (authenticated HTTP, no store read)`, `p50 ${floor.toFixed(2)} ms`, '']);
  for (const p of probes(summarySql, deepCursor)) {
    const api = await timeIt(async () => {
      const r = await c.api.req('GET', p.path);
      if (r.status !== 200) throw new Error(`${p.path}: ${r.status} ${r.text}`);
    });
    const sql = await timeIt(() => raw(p.sql, p.params));
    const a = pct(api, 50);
    const s = pct(sql, 50);
    rows.push([`${backend}, ${TASKS.toLocaleString('en')} tasks: ${p.label}`, `API p50 ${a.toFixed(2)} ms (p95 ${pct(api, 95).toFixed(2)}), SQL p50 ${s.toFixed(2)} ms`, `${(a / s).toFixed(1)} × the SQL; target ≤ 3 ×`]);
  }
  const scan = await timeIt(() => raw(scanSql, []));
  rows.push([`${backend}: counts by a scan instead (SELECT state, count(*) … GROUP BY state)`, `p50 ${pct(scan, 50).toFixed(1)} ms`, 'what the counters avoid']);
}

export async function pageSqlite(rows: Row[]): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'drover-bench-dash-'));
  const path = join(dir, 'drover.db');
  try {
    const store = await openStore(`sqlite:${path}`);
    await store.migrate();
    await store.close();
    const t0 = performance.now();
    loadSqlite(path, Date.now());
    rows.push([`SQLite: load ${TASKS.toLocaleString('en')} tasks with attempts (triggers on)`, `${((performance.now() - t0) / 1000).toFixed(1)} s`, '']);
    const ro = new Database(path, { readonly: true });
    const deep = (ro.prepare('SELECT id FROM tasks ORDER BY id DESC LIMIT 1 OFFSET ?').get(DEEP) as { id: string }).id;
    const c = await startCluster({ workers: 0, db: `sqlite:${path}` });
    try {
      // Each statement prepared once, as the store does (src/store/sqlite/db.ts q()): the SQL side is the query alone.
      const prepared = new Map<string, Database.Statement>();
      const stmt = (sql: string) => prepared.get(sql) ?? prepared.set(sql, ro.prepare(sql)).get(sql)!;
      await measurePage(rows, 'SQLite', c, async (sql, params) => stmt(sql).all(...params), SQLITE_SUMMARY, deep, 'SELECT state, count(*) FROM tasks GROUP BY state');
    } finally {
      await c.close();
      ro.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function withPgDatabase<T>(fn: (url: string) => Promise<T>): Promise<T> {
  const name = `drover_bench_dash_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const u = new URL(PG_URL);
  u.pathname = `/${name}`;
  try {
    return await fn(u.toString());
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}

export async function pagePostgres(rows: Row[]): Promise<void> {
  await withPgDatabase(async (url) => {
    const store = await openStore(url);
    await store.migrate();
    await store.close();
    const t0 = performance.now();
    await loadPostgres(url, Date.now());
    rows.push([`PostgreSQL: load ${TASKS.toLocaleString('en')} tasks with attempts (triggers on)`, `${((performance.now() - t0) / 1000).toFixed(1)} s`, '']);
    const ro = new pg.Client({ connectionString: url });
    await ro.connect();
    const deep = (await ro.query('SELECT id FROM tasks ORDER BY id DESC LIMIT 1 OFFSET $1', [DEEP])).rows[0].id as string;
    const c = await startCluster({ workers: 0, db: url });
    try {
      let n = 0;
      const numbered = (sql: string) => sql.replace(/\?/g, () => `$${++n}`);
      await measurePage(rows, 'PostgreSQL', c, async (sql, params) => {
        n = 0;
        return (await ro.query(numbered(sql), params)).rows;
      }, PG_SUMMARY, deep, 'SELECT state, count(*) FROM tasks GROUP BY state');
    } finally {
      await c.close();
      await ro.end();
    }
  });
}

// ---------------------------------------------------------------- the live stream

/** One `GET /v1/stream`: calls `onTask` for every task summary it carries, with the receive time. */
function openStream(url: string, token: string, onTask: (t: { id: string; state: string; updatedAt: string }, at: number) => void): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${url}/v1/stream`, { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' } }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`stream: ${res.statusCode}`));
      let buf = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        const at = Date.now();
        buf += d;
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const ev = buf.slice(0, i);
          buf = buf.slice(i + 2);
          if (!/^event: changes$/m.test(ev)) continue;
          const data = ev.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
          for (const t of (JSON.parse(data) as { tasks: Array<{ id: string; state: string; updatedAt: string }> }).tasks) onTask(t, at);
        }
      });
      resolve(res);
    });
    req.on('error', reject);
    req.end();
  });
}

export async function live(rows: Row[], backend: string, db: string | undefined): Promise<void> {
  const c = await startCluster({ workers: 2, slots: 16, workerArgs: NOOP_WORKER, ...(db ? { db } : {}) });
  try {
    const pid = c.server.child.pid!;
    await sleep(500);
    const rss0 = kbOf(pid, 'VmRSS');
    const lat: number[] = [];
    const seen = new Set<string>();
    const updatedAt = new Map<string, number>();
    // One admin token per stream, as 20 people would have (a token may hold 16 streams).
    const tokens = await Promise.all(
      Array.from({ length: STREAMS }, async (_, k) => {
        const r = await c.api.req('POST', '/v1/tokens', { name: `bench-viewer-${k}`, role: 'admin', user: `viewer${k}` });
        if (r.status !== 201) throw new Error(`token: ${r.status} ${r.text}`);
        return r.body.secret as string;
      }),
    );
    const streams = await Promise.all(
      Array.from({ length: STREAMS }, (_, k) =>
        openStream(c.url, tokens[k]!, (t, at) => {
          if (t.state !== 'succeeded' || seen.has(`${k}:${t.id}`)) return;
          seen.add(`${k}:${t.id}`);
          updatedAt.set(t.id, Date.parse(t.updatedAt));
          lat.push(at - Date.parse(t.updatedAt));
        }),
      ),
    );
    // The browser: signed in as a person would, on the first page of the Tasks table.
    const browser = await launchBrowser();
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    const page = await ctx.newPage();
    await signIn(page, c.url, c.api.token);
    await page.goto(`${c.url}/tasks`);
    await waitLive(page);
    await page.evaluate(() => {
      const shown: Record<string, number> = {};
      (window as unknown as { __shown: Record<string, number> }).__shown = shown;
      const note = (el: Element) => {
        const id = el.getAttribute('data-task-id');
        if (id && el.getAttribute('data-state') === 'succeeded' && !(id in shown)) shown[id] = Date.now();
      };
      new MutationObserver((muts) => {
        const now = Date.now();
        for (const m of muts) {
          const targets = m.type === 'attributes' ? [m.target as Element] : [...m.addedNodes].filter((n): n is Element => n instanceof Element);
          for (const t of targets) {
            for (const el of [t, ...t.querySelectorAll('[data-task-id]')]) {
              const id = el.getAttribute('data-task-id');
              if (id && el.getAttribute('data-state') === 'succeeded' && !(id in shown)) shown[id] = now;
            }
          }
        }
      }).observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ['data-state'] });
      document.querySelectorAll('[data-task-id]').forEach(note);
    });
    await sleep(500);
    const rss20 = kbOf(pid, 'VmRSS');
    const n = RATE * SECONDS;
    const t0 = performance.now();
    const submits: Array<Promise<string>> = [];
    for (let i = 0; i < n; i++) {
      const due = t0 + (i * 1000) / RATE;
      const wait = due - performance.now();
      if (wait > 1) await sleep(wait);
      submits.push(c.api.submit({ command: 'true' }));
    }
    await Promise.all(submits);
    const deadline = Date.now() + 30_000;
    while (seen.size < n * STREAMS && Date.now() < deadline) await sleep(100);
    const s = (performance.now() - t0) / 1000;
    for (const r of streams) r.destroy();
    const shown = await page.evaluate(() => (window as unknown as { __shown: Record<string, number> }).__shown);
    await browser.close();
    const shownLat = Object.entries(shown).flatMap(([id, at]) => (updatedAt.has(id) ? [at - updatedAt.get(id)!] : []));
    const got = seen.size / STREAMS;
    rows.push([
      `${backend}: live stream, ${STREAMS} streams, ${RATE} tasks/s submitted and completed for ${SECONDS} s`,
      `updatedAt → received p50 ${pct(lat, 50).toFixed(0)} ms, p99 ${pct(lat, 99).toFixed(0)} ms, max ${Math.max(...lat).toFixed(0)} ms`,
      `${got.toFixed(0)} of ${n} successes seen per stream; ${(n / s).toFixed(0)} tasks/s achieved; target p99 ≤ 1 s`,
    ]);
    rows.push([
      `${backend}: same run, one Chromium tab on the Tasks page`,
      shownLat.length ? `updatedAt → row shows succeeded p50 ${pct(shownLat, 50).toFixed(0)} ms, p99 ${pct(shownLat, 99).toFixed(0)} ms` : 'no row seen',
      `${shownLat.length} tasks seen reaching succeeded on the first page (it shows 50 rows; the rest scroll past); target p99 ≤ 1 s`,
    ]);
    rows.push([`${backend}: server memory`, `RSS ${mib(rss0)} idle, ${mib(rss20)} with ${STREAMS} streams open (and the browser tab), peak ${mib(kbOf(pid, "VmHWM"))} during the run`, '']);
  } finally {
    await c.close();
  }
}

export async function dashboard(rows: Row[]): Promise<void> {
  await pageSqlite(rows);
  await pagePostgres(rows);
  await live(rows, 'SQLite', undefined);
  await withPgDatabase((url) => live(rows, 'PostgreSQL', url));
}
