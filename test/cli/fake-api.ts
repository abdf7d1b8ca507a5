/**
 * A scripted stand-in for the Drover API (node:http) for client and CLI tests:
 * each test supplies its own route handler and reads back what was requested.
 * Not a test file itself.
 */
import { spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';

export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  body: unknown;
}

export type Handler = (req: RecordedRequest, res: ServerResponse) => void | Promise<void>;

export interface FakeApi {
  url: string;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

export async function startFakeApi(handler: Handler): Promise<FakeApi> {
  const requests: RecordedRequest[] = [];
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const u = new URL(req.url ?? '/', 'http://x');
    const rec: RecordedRequest = { method: req.method ?? 'GET', path: u.pathname, query: u.searchParams, headers: req.headers, body: text ? JSON.parse(text) : undefined };
    requests.push(rec);
    try {
      await handler(rec, res);
    } catch (err) {
      if (!res.headersSent) sendJson(res, 500, { error: { code: 'internal', message: String(err) } });
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

export function apiError(res: ServerResponse, status: number, code: string, message: string, extra: Record<string, string> = {}): void {
  sendJson(res, status, { error: { code, message, ...extra } });
}

/** A port nothing listens on (bound, then released). */
export async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

export const TASK_ID = '01JF0000000000000000000000';

/** A Task as the API renders it, with overrides. */
export function makeTask(over: Record<string, unknown> = {}) {
  return {
    id: TASK_ID,
    owner: 'admin',
    name: 'sh',
    kind: 'batch',
    state: 'waiting',
    command: 'sh',
    args: ['-c', 'echo hi'],
    script: null,
    interpreter: [],
    env: {},
    envRedacted: false,
    timeoutMs: null,
    retry: { maxRetries: 3, baseDelayMs: 1000, factor: 2, maxDelayMs: 3_600_000 },
    priority: 0,
    labels: {},
    requires: {},
    attempts: 0,
    retriesUsed: 0,
    lostCount: 0,
    runAfter: null,
    createdAt: new Date(Date.now() - 5000).toISOString(),
    updatedAt: new Date().toISOString(),
    result: null,
    outputs: null,
    ...over,
  };
}

/** A row of GET /v1/tasks (a summary: no command, script or env), with overrides. */
export function makeSummary(over: Record<string, unknown> = {}) {
  return {
    id: TASK_ID,
    owner: 'admin',
    name: 'sh',
    kind: 'batch',
    state: 'waiting',
    priority: 0,
    attempts: 0,
    retriesUsed: 0,
    workerId: null,
    createdAt: new Date(Date.now() - 5000).toISOString(),
    updatedAt: new Date().toISOString(),
    startedAt: null,
    endedAt: null,
    durationMs: null,
    exitCode: null,
    signal: null,
    error: null,
    runAfter: null,
    outcome: null,
    ...over,
  };
}

/**
 * The CLI of this build as the executable runs it: the bundle in dist/cli/
 * (rolldown.config.js; bin/drover.js requires it). Named by its place beside
 * these tests rather than through bin/, which DROVER_BIN-style setups may
 * point at another build.
 */
export const CLI_MAIN = fileURLToPath(new URL('../../cli/main.cjs', import.meta.url));
/** The same entry point as tsc wrote it, one module per file (dist/src/cli/main.js): for tests of which modules load. */
export const CLI_SOURCE_MAIN = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the real CLI in a child process, asynchronously so a fake API in this
 * process keeps answering. The environment is cleared of DROVER_* so nothing
 * from the host leaks in.
 */
export function runCli(args: string[], opts: { env?: Record<string, string>; cwd?: string; input?: string } = {}): Promise<CliResult> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('DROVER_')) delete env[k];
  Object.assign(env, opts.env);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI_MAIN, ...args], { env, cwd: opts.cwd ?? process.cwd(), stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(opts.input ?? '');
  });
}
