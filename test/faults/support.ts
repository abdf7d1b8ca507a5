/**
 * Helpers of the fault-injection suite (test/faults/*.test.ts): polling with a
 * deadline, requests with their own timeout, process liveness, and the
 * cleanup of processes a killed agent leaves behind.
 *
 * Nothing here has side effects at import time (node --test also loads this
 * file as if it were a test).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { request as httpRequest } from 'node:http';
import { stopAll, type Api, type Cluster } from '../e2e/harness.js';

/**
 * The fault cases stop the machine's PostgreSQL, mount filesystems and make
 * network namespaces, so they run only on their own, one at a time:
 * `npm run test:faults` (node --test --test-concurrency=1 dist/test/faults/).
 * `npm test` runs everything under dist/test/, this directory included; there
 * they are skipped, visibly. They run when the test runner was started on this
 * directory (or one of its files), or with DROVER_TEST_FAULTS=1.
 */
export const FAULTS_SKIP: string | false = faultsSkip();

function faultsSkip(): string | false {
  if (process.env.DROVER_TEST_FAULTS === '1') return false;
  if (process.env.DROVER_TEST_FAULTS === '0') return 'DROVER_TEST_FAULTS=0';
  // Not this process's own argv: under `npm test` it names this directory's files too.
  if (parentArgv().some((a) => /(^|\/)test\/faults(\/|$)/.test(a))) return false;
  return 'fault injection runs only with `npm run test:faults` (or DROVER_TEST_FAULTS=1)';
}

/** The command line of the parent process (node --test runs each file in a child). */
function parentArgv(): string[] {
  try {
    return readFileSync(`/proc/${process.ppid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  } catch {
    return [];
  }
}

/** Short bounds used by the fault cases (the defaults are 5 s / 15 s). */
export const HEARTBEAT_MS = 500;
export const LEASE_MS = 3_000;
export const FAST_SERVER_ARGS = ['--heartbeat', `${HEARTBEAT_MS}ms`, '--lease', `${LEASE_MS}ms`, '--log-level', 'warn'];

export const TERMINAL = ['succeeded', 'failed', 'cancelled'];

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Calls `fn` until it returns something other than undefined/false/null, or
 * throws when `timeoutMs` passed (with `what()` in the message). Errors thrown
 * by `fn` count as "not yet" (the server may be down on purpose) and the last
 * one is reported.
 */
export async function until<T>(what: string | (() => string | Promise<string>), fn: () => Promise<T | undefined | null | false> | T | undefined | null | false, timeoutMs: number, intervalMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastErr: unknown = null;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined && v !== null && v !== false) return v;
      lastErr = null;
    } catch (e) {
      lastErr = e;
    }
    if (Date.now() > deadline) {
      const w = typeof what === 'string' ? what : await Promise.resolve(what()).catch((e) => `(describing failed: ${String(e)})`);
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${w}${lastErr ? ` (last error: ${String(lastErr)})` : ''}`);
    }
    await pause(intervalMs);
  }
}

export interface Reply {
  status: number;
  body: any;
  text: string;
  ms: number;
}

/**
 * One request on a fresh connection (no keep-alive pool: a pooled socket to a
 * killed server would fail the first try for the wrong reason), failing with
 * `timeout` when no complete answer came within `timeoutMs`.
 */
export function call(api: Api, method: string, path: string, body?: unknown, timeoutMs = 10_000): Promise<Reply> {
  const headers: Record<string, string> = { authorization: `Bearer ${api.token}`, connection: 'close' };
  const payload = body === undefined ? undefined : JSON.stringify(body);
  if (payload !== undefined) {
    headers['content-type'] = 'application/json';
    headers['content-length'] = String(Buffer.byteLength(payload));
  }
  const t0 = Date.now();
  return new Promise((resolve, reject) => {
    const r = httpRequest(api.url + path, { method, headers, agent: false }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (d: Buffer) => parts.push(d));
      res.on('end', () => {
        clearTimeout(timer);
        const text = Buffer.concat(parts).toString('utf8');
        let parsed: any = null;
        try {
          parsed = JSON.parse(text);
        } catch {
          parsed = null;
        }
        resolve({ status: res.statusCode ?? 0, body: parsed, text, ms: Date.now() - t0 });
      });
      res.on('error', (e) => {
        clearTimeout(timer);
        reject(e);
      });
    });
    const timer = setTimeout(() => {
      r.destroy(Object.assign(new Error(`${method} ${path}: no answer within ${timeoutMs} ms`), { code: 'TIMEOUT' }));
    }, timeoutMs);
    r.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    r.end(payload);
  });
}

/** True for errors that mean "the server is not there" (killed, restarting). */
export function isConnectionError(e: unknown): boolean {
  const code = (e as { code?: unknown })?.code;
  return typeof code === 'string' && ['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ECONNABORTED', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'TIMEOUT'].includes(code);
}

/** Every task the admin sees (pages of 500, newest first). */
export async function allTasks(api: Api): Promise<any[]> {
  const out: any[] = [];
  let cursor: string | null = null;
  do {
    const r = await call(api, 'GET', `/v1/tasks?limit=500${cursor ? `&cursor=${cursor}` : ''}`);
    if (r.status !== 200) throw new Error(`list failed ${r.status}: ${r.text}`);
    out.push(...r.body.tasks);
    cursor = r.body.nextCursor;
  } while (cursor);
  return out;
}

export async function taskDetail(api: Api, id: string): Promise<{ task: any; attempts: any[]; events: any[] }> {
  const r = await call(api, 'GET', `/v1/tasks/${id}`);
  if (r.status !== 200) throw new Error(`GET task ${id}: ${r.status} ${r.text}`);
  return r.body;
}

/**
 * Waits until every task in `ids` is terminal (watched through the list's
 * summary rows); returns the full tasks (`GET /v1/tasks/:id`: result,
 * lostCount, ...) by id.
 */
export async function settle(api: Api, ids: string[], timeoutMs: number): Promise<Map<string, any>> {
  await settledSummaries(api, ids, timeoutMs);
  return new Map(await Promise.all(ids.map(async (id) => [id, (await taskDetail(api, id)).task] as const)));
}

async function settledSummaries(api: Api, ids: string[], timeoutMs: number): Promise<Map<string, any>> {
  let last = new Map<string, any>();
  const want = new Set(ids);
  const describe = () => {
    const counts: Record<string, number> = {};
    for (const id of want) {
      const s = last.get(id)?.state ?? 'missing';
      counts[s] = (counts[s] ?? 0) + 1;
    }
    return `${ids.length} tasks to end: ${JSON.stringify(counts)}`;
  };
  return until(describe, async () => {
    last = new Map((await allTasks(api)).map((t) => [t.id, t]));
    return ids.every((id) => TERMINAL.includes(last.get(id)?.state)) ? last : null;
  }, timeoutMs, 250);
}

/** Whether a process exists (a zombie counts: it is not reaped yet). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw e;
  }
}

/**
 * Pids written by tasks as files `pid.<task id>.<attempt>` in `dir` (the tasks
 * run `echo $$ > DIR/pid.$DROVER_TASK_ID.$DROVER_ATTEMPT; exec ...`).
 */
export function readPids(dir: string): Array<{ taskId: string; attempt: number; pid: number }> {
  const out: Array<{ taskId: string; attempt: number; pid: number }> = [];
  let names: string[] = [];
  try {
    names = readdirSync(dir);
  } catch {
    return out;
  }
  for (const name of names) {
    const m = /^pid\.([^.]+)\.(\d+)$/.exec(name);
    if (!m) continue;
    const pid = Number(readFileSync(join(dir, name), 'utf8').trim());
    if (Number.isInteger(pid) && pid > 1) out.push({ taskId: m[1]!, attempt: Number(m[2]), pid });
  }
  return out;
}

/** A task script that records its pid (it is its process group's leader) and then runs `then`. */
export function pidScript(dir: string, then: string): string {
  return `echo $$ > ${dir}/pid.$DROVER_TASK_ID.$DROVER_ATTEMPT\n${then}\n`;
}

/**
 * SIGKILLs the process groups of the recorded pids: processes of attempts
 * whose agent was killed -9 are orphans nobody else will stop.
 */
export function killRecorded(dir: string): void {
  for (const { taskId, pid } of readPids(dir)) {
    // A pid may have been reused by an unrelated process since: kill only what is still that task's.
    if (!isTaskProcess(pid, taskId)) continue;
    for (const target of [-pid, pid]) {
      try {
        process.kill(target, 'SIGKILL');
      } catch {
        // gone already, or not a group leader
      }
    }
  }
}

/** Whether `pid` is a live (not zombie) process of task `taskId` (its environment says so). */
export function isTaskProcess(pid: number, taskId: string): boolean {
  try {
    if (procState(pid) === 'Z') return false;
    return readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(`DROVER_TASK_ID=${taskId}`);
  } catch {
    return false;
  }
}

/** The state letter of /proc/PID/stat (R, S, T, Z, ...), or null if there is no such process. */
export function procState(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0] ?? null;
  } catch {
    return null;
  }
}

/** Shell: wait until `file` exists, 60 s at most (a failed case must not leave a task looping forever). */
export function waitFileSh(file: string): string {
  return `n=0; while [ ! -e ${file} ] && [ $n -lt 1200 ]; do sleep 0.05; n=$((n+1)); done`;
}

/** Milliseconds, for messages. */
export const secs = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

/**
 * Ends a cluster so that nothing it started survives: agents get SIGTERM
 * first (they kill their attempts' process groups), then everything left is
 * SIGKILLed, then the process groups recorded in `pidsDir` (attempts of
 * agents that were killed -9 have nobody to stop them), then the directory goes.
 */
export async function closeCluster(c: Cluster | undefined, pidsDir?: string): Promise<void> {
  if (!c) return;
  await Promise.all(c.workers.map((w) => w.stop('SIGTERM').catch(() => {})));
  await stopAll();
  if (pidsDir) killRecorded(pidsDir);
  await c.close();
}
