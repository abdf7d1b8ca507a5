/**
 * End-to-end harness: real `drover server` and `drover worker` processes
 * (the same bin a user runs), on 127.0.0.1 and a fresh temp directory each.
 * Every process it starts is killed in `stopAll()`, and exits by itself if the
 * test process dies (DROVER_EXIT_WITH_PARENT).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { Agent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';

const keepAlive = new Agent({ keepAlive: true, maxSockets: 64 });

/** The `drover` entry point: bin/drover.js (which runs dist/), or env DROVER_BIN (e.g. another build's src/cli/main.js). */
export const BIN = process.env.DROVER_BIN ? resolve(process.env.DROVER_BIN) : resolve(import.meta.dirname, '../../../bin/drover.js');

export interface Proc {
  child: ChildProcess;
  output(): string;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

const live = new Set<ChildProcess>();

/**
 * `prefix`: a command that runs node in turn and keeps its pid (it execs), e.g.
 * `['ip', 'netns', 'exec', NAME]` to start the process in a network namespace.
 */
export function startProc(args: string[], env: Record<string, string> = {}, readyLine?: RegExp, prefix: string[] = []): Promise<{ proc: Proc; match: RegExpMatchArray | null }> {
  const argv = [...prefix, process.execPath, BIN, ...args];
  const child = spawn(argv[0]!, argv.slice(1), {
    env: { ...process.env, DROVER_EXIT_WITH_PARENT: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  let out = '';
  const proc: Proc = {
    child,
    output: () => out,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.kill(signal);
      const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(t);
      live.delete(child);
    },
  };
  return new Promise((resolvePromise, reject) => {
    let done = !readyLine;
    const onData = (d: Buffer) => {
      out += d.toString();
      if (!done && readyLine) {
        const m = out.match(readyLine);
        if (m) {
          done = true;
          resolvePromise({ proc, match: m });
        }
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', (code, sig) => {
      live.delete(child);
      if (!done) {
        done = true;
        reject(new Error(`drover ${args[0]} exited (${code ?? sig}) before it was ready:\n${out}`));
      }
    });
    if (!readyLine) resolvePromise({ proc, match: null });
  });
}

export async function stopAll(): Promise<void> {
  await Promise.all([...live].map(async (c) => {
    if (c.exitCode !== null || c.signalCode !== null) return;
    const exited = once(c, 'exit');
    c.kill('SIGKILL');
    await exited;
  }));
  live.clear();
}

export class Api {
  constructor(
    readonly url: string,
    readonly token: string,
  ) {}
  /**
   * One request over a keep-alive connection (node:http: far less CPU per call than fetch, which matters in the bench).
   * `fresh`: on a connection of its own, closed after the answer (for servers a test kills: a pooled
   * connection to a dead one fails the next call); `timeoutMs`: fails with code TIMEOUT without an answer.
   */
  req(
    method: string,
    path: string,
    body?: unknown,
    token: string | null = this.token,
    opts: { fresh?: boolean; timeoutMs?: number; headers?: Record<string, string> } = {},
  ): Promise<{ status: number; body: any; text: string; headers: IncomingHttpHeaders }> {
    const headers: Record<string, string> = { ...opts.headers };
    if (token) headers.authorization = `Bearer ${token}`;
    if (opts.fresh) headers.connection = 'close';
    const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
    if (payload !== undefined) {
      headers['content-type'] ??= 'application/json';
      headers['content-length'] = String(Buffer.byteLength(payload));
    }
    return new Promise((resolvePromise, reject) => {
      const r = httpRequest(this.url + path, { method, headers, agent: opts.fresh ? false : keepAlive, ...(opts.timeoutMs ? { timeout: opts.timeoutMs } : {}) }, (res) => {
        const parts: Buffer[] = [];
        res.on('data', (d: Buffer) => parts.push(d));
        res.on('end', () => {
          const text = Buffer.concat(parts).toString('utf8');
          let parsed: any = null;
          try {
            parsed = JSON.parse(text);
          } catch {
            parsed = null;
          }
          resolvePromise({ status: res.statusCode ?? 0, body: parsed, text, headers: res.headers });
        });
        res.on('error', reject);
      });
      const ms = opts.timeoutMs;
      if (ms) r.on('timeout', () => r.destroy(Object.assign(new Error(`${method} ${path}: no answer within ${ms} ms`), { code: 'TIMEOUT' })));
      r.on('error', reject);
      r.end(payload);
    });
  }
  async submit(spec: Record<string, unknown>): Promise<string> {
    const r = await this.req('POST', '/v1/tasks', spec);
    if (r.status !== 201) throw new Error(`submit failed ${r.status}: ${r.text}`);
    return r.body.task.id;
  }
  async task(id: string): Promise<{ task: any; attempts: any[]; events: any[] }> {
    const r = await this.req('GET', `/v1/tasks/${id}`);
    if (r.status !== 200) throw new Error(`get failed ${r.status}: ${r.text}`);
    return r.body;
  }
  /**
   * Follows the task's log until it ends (the server closes the stream), then returns the task. Bounded: a task
   * that never ends (no worker left for it after an earlier failure) fails the test instead of hanging the run.
   */
  async waitDone(id: string, timeoutMs = 120_000): Promise<{ task: any; attempts: any[]; events: any[]; logs: string }> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`task ${id} did not end within ${timeoutMs} ms`)), timeoutMs);
    });
    // On a timeout the follow request stays open until the cluster closes (the server ends the stream then).
    const r = await Promise.race([this.req('GET', `/v1/tasks/${id}/logs?follow=1`), late]).finally(() => clearTimeout(timer));
    if (r.status !== 200) throw new Error(`logs failed ${r.status}: ${r.text}`);
    return { ...(await this.task(id)), logs: r.text };
  }
  /** Waits until the task is in one of `states`, by following its log (which ends only when it is terminal) or polling briefly for non-terminal states. */
  async waitState(id: string, states: string[], timeoutMs = 30_000): Promise<any> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const t = (await this.task(id)).task;
      if (states.includes(t.state)) return t;
      if (Date.now() > deadline) throw new Error(`task ${id} still ${t.state}, wanted ${states.join('|')}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }
}

export interface Cluster {
  dir: string;
  url: string;
  api: Api;
  server: Proc;
  workers: Proc[];
  workerToken: string;
  startServer(): Promise<Proc>;
  /**
   * `servers`: the --server URLs (default the cluster's url); `prefix`: see startProc
   * (e.g. run the agent in a network namespace).
   */
  startWorker(opts?: { slots?: number; id?: string; extra?: string[]; servers?: string[]; prefix?: string[] }): Promise<Proc>;
  close(): Promise<void>;
}

export interface ClusterOptions {
  workers?: number;
  slots?: number;
  port?: number;
  serverEnv?: Record<string, string>;
  /** The server's --db URL; default a fresh SQLite file in the cluster's directory. */
  db?: string;
  /** Extra arguments for every `drover worker` (e.g. ['--executor', 'noop']). */
  workerArgs?: string[];
  /** Extra arguments for every `drover server` (e.g. ['--lease', '3s', '--heartbeat', '500ms']). */
  serverArgs?: string[];
  /** The address the server listens on (--host); default 127.0.0.1. */
  host?: string;
}

export async function startCluster(opts: ClusterOptions = {}): Promise<Cluster> {
  const dir = mkdtempSync(join(tmpdir(), 'drover-e2e-'));
  const adminToken = `drv_test_${randomBytes(16).toString('hex')}`;
  let url = '';
  let port = opts.port ?? 0;
  const startServer = async () => {
    const host = opts.host ?? '127.0.0.1';
    const ready = new RegExp(`listening on (http://${host.replace(/[.]/g, '\\.')}:(\\d+))`);
    const { proc, match } = await startProc(['server', '--db', opts.db ?? `sqlite:${join(dir, 'drover.db')}`, '--host', host, '--port', String(port), ...(opts.serverArgs ?? [])], { DROVER_ADMIN_TOKEN: adminToken, ...opts.serverEnv }, ready);
    url = match![1]!;
    port = Number(match![2]);
    c.url = url;
    c.server = proc;
    c.api = new Api(url, adminToken);
    return proc;
  };
  const c: Cluster = {
    dir,
    url,
    api: null as unknown as Api,
    server: null as unknown as Proc,
    workers: [],
    workerToken: '',
    startServer,
    async startWorker(w = {}) {
      const id = w.id ?? `w${c.workers.length + 1}`;
      const servers = (w.servers ?? [c.url]).flatMap((s) => ['--server', s]);
      const { proc } = await startProc(['worker', ...servers, '--slots', String(w.slots ?? opts.slots ?? 2), '--id', id, '--work-dir', join(dir, 'work', id), ...(opts.workerArgs ?? []), ...(w.extra ?? [])], { DROVER_TOKEN: c.workerToken }, undefined, w.prefix);
      c.workers.push(proc);
      await waitWorker(c.api, id, proc);
      return proc;
    },
    async close() {
      await stopAll();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await startServer();
    const t = await c.api.req('POST', '/v1/tokens', { name: 'e2e-worker', role: 'worker' });
    if (t.status !== 201) throw new Error(`worker token: ${t.text}`);
    c.workerToken = t.body.secret;
    for (let i = 0; i < (opts.workers ?? 1); i++) await c.startWorker();
    return c;
  } catch (err) {
    // A cluster that could not start leaves nothing behind: its own processes (not other clusters') and its directory.
    await Promise.all([c.server, ...c.workers].filter((p) => p !== null).map((p) => p.stop('SIGKILL').catch(() => undefined)));
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

/** Waits until the server lists worker `id` as connected. */
export async function waitWorker(api: Api, id: string, proc: Proc, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await api.req('GET', '/v1/workers');
    if ((r.body?.workers ?? []).some((w: any) => w.id === id && w.state === 'connected')) return;
    if (proc.child.exitCode !== null) throw new Error(`worker ${id} exited: ${proc.output()}`);
    if (Date.now() > deadline) throw new Error(`worker ${id} did not connect: ${proc.output()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Waits until the server lists `n` connected workers. */
export async function waitWorkers(api: Api, n: number, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await api.req('GET', '/v1/workers');
    const connected = (r.body?.workers ?? []).filter((w: any) => w.state === 'connected').length;
    if (connected >= n) return;
    if (Date.now() > deadline) throw new Error(`only ${connected} of ${n} workers connected`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Is a process with this pid still there (zombies included)? */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
