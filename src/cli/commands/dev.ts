/**
 * `drover dev`: a whole Drover on this machine in one command. Starts the server
 * in-process on 127.0.0.1 with SQLite in `<dir>`, makes sure the CLI in this
 * directory is authenticated, and supervises N worker agents as child processes.
 *
 * Credentials contract (files mode 0600 in `<dir>`):
 * - `credentials.json` `{url, token}`: an admin token, found by the CLI's
 *   credential lookup (credentials.ts). Reused across restarts while the server
 *   still accepts it as an admin token (the url is rewritten if the port
 *   changed); otherwise a new `dev-admin` token replaces it.
 * - `worker-token.json` `{token}`: the workers' token (role worker), reused the same way.
 *
 * Workers run `drover worker` in a child process each, with the token in the
 * env (DROVER_TOKEN, not argv, so `ps` does not show it) and an IPC channel
 * that makes them exit when this process dies. A worker that exits on its own
 * is restarted after a backoff (1 s doubling to 30 s; reset after 30 s of
 * uptime). SIGINT/SIGTERM: SIGTERM the workers (they drain for up to 5 s) and
 * wait for them (SIGKILL after 15 s), close the server, exit 0.
 *
 * Dashboard: prints `Dashboard: <url>/sign-in#code=<code>`, a one-time link
 * (valid 10 minutes, single use) that signs the browser in with the admin
 * token; the code rides in the fragment, so it reaches neither a server log
 * nor a Referer. `--open` opens the link with xdg-open/open where one exists.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import { findCredentialsFile, readCredentialsFile, sameServer } from '../credentials.js';
import { parseIntFlag, parsePort } from '../parse.js';
import { onShutdown } from '../signals.js';
import { UsageError } from '../usage-error.js';
import { listenError } from '../listen-error.js';
import { openInBrowser } from '../open-browser.js';
import { applyHeapFlags } from '../heap-flags.js';

interface DevFlags {
  port: string;
  workers: string;
  slots: string;
  dir: string;
  logLevel: string;
  open?: boolean;
}

export interface DevConfig {
  port: number;
  workers: number;
  slots: number;
  dir: string;
  logLevel: string;
}

export function buildDevConfig(flags: DevFlags, cwd: string): DevConfig {
  const port = parsePort('--port', flags.port);
  const workers = parseIntFlag('--workers', flags.workers, 0, 64);
  const slots = parseIntFlag('--slots', flags.slots, 1, 1024);
  if (!flags.dir.trim()) throw new UsageError('invalid --dir "": expected a directory');
  return { port, workers, slots, dir: resolve(cwd, flags.dir), logLevel: flags.logLevel };
}

/** The compiled CLI entry point of this build; workers run it as `drover worker`. */
const CLI_MAIN = fileURLToPath(new URL('../main.js', import.meta.url));

/** Minimal view of the running server that dev needs (matches RunningServer.tokens). */
interface TokenService {
  create(name: string, role: 'admin' | 'user' | 'worker', user: string): Promise<{ id: string; secret: string }>;
  verify(secret: string): Promise<{ id: string; role: string } | null>;
}

/** Writes JSON readable by the owner only; via rename, so a crash never leaves half a file. */
export function writeSecretFile(path: string, data: unknown): void {
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(data, null, 2) + '\n', { mode: 0o600 });
  renameSync(tmp, path);
}

/**
 * The token stored in `path` if the server accepts it with `role`, else a new
 * one (written to `path`). `url`, when given, is stored alongside.
 */
export async function ensureToken(
  tokens: TokenService,
  path: string,
  role: 'admin' | 'worker',
  create: { name: string; user: string },
  url?: string,
): Promise<{ token: string; id: string; created: boolean }> {
  let stored: { url?: string; token?: string } = {};
  if (existsSync(path)) {
    try {
      stored = readCredentialsFile(path);
    } catch {
      stored = {}; // unreadable: replaced below
    }
  }
  if (stored.token) {
    const who = await tokens.verify(stored.token);
    if (who && who.role === role) {
      if (url !== undefined && (!stored.url || !sameServer(stored.url, url))) writeSecretFile(path, { url, token: stored.token });
      return { token: stored.token, id: who.id, created: false };
    }
  }
  const made = await tokens.create(create.name, role, create.user);
  writeSecretFile(path, url !== undefined ? { url, token: made.secret } : { token: made.secret });
  return { token: made.secret, id: made.id, created: true };
}

/** Keeps N `drover worker` children running until stop(). */
export class WorkerSupervisor {
  private readonly children = new Map<number, ChildProcess>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private stopping = false;

  constructor(
    private readonly opts: { url: string; token: string; count: number; slots: number; dir: string; log: (line: string) => void },
  ) {}

  start(): void {
    for (let i = 1; i <= this.opts.count; i++) this.spawn(i, 1000);
  }

  private spawn(i: number, backoffMs: number): void {
    if (this.stopping) return;
    const name = `w${i}`;
    // A short drain: stop() SIGKILLs a worker after 15 s, and a killed agent's attempts would be stopped by its reaper, but reported only as lost leases 15 s later.
    const args = [CLI_MAIN, 'worker', '--server', this.opts.url, '--slots', String(this.opts.slots), '--work-dir', join(this.opts.dir, 'work', name), '--id', `dev-${name}`, '--drain-timeout', '5s'];
    const env: NodeJS.ProcessEnv = { ...process.env, DROVER_TOKEN: this.opts.token };
    delete env.DROVER_URL;
    const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
    const startedAt = Date.now();
    this.children.set(i, child);
    for (const stream of [child.stdout, child.stderr]) {
      if (stream) createInterface({ input: stream }).on('line', (line) => this.opts.log(`[${name}] ${line}`));
    }
    child.on('error', (err) => this.opts.log(`[${name}] cannot start: ${err.message}`));
    child.on('exit', (code, signal) => {
      this.children.delete(i);
      if (this.stopping) return;
      const next = Date.now() - startedAt > 30_000 ? 1000 : backoffMs;
      this.opts.log(`drover dev: worker ${name} exited (${signal ?? `code ${code}`}); restarting in ${next / 1000} s`);
      const t = setTimeout(() => {
        this.timers.delete(t);
        this.spawn(i, Math.min(next * 2, 30_000));
      }, next);
      this.timers.add(t);
    });
  }

  /** SIGTERM every worker and wait for them to exit; SIGKILL whatever is left after `graceMs`. */
  async stop(graceMs = 15_000): Promise<void> {
    this.stopping = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    const alive = [...this.children.values()].filter((c) => c.exitCode === null && c.signalCode === null);
    await Promise.all(
      alive.map(
        (c) =>
          new Promise<void>((done) => {
            const kill = setTimeout(() => c.kill('SIGKILL'), graceMs);
            c.once('exit', () => {
              clearTimeout(kill);
              done();
            });
            c.kill('SIGTERM');
          }),
      ),
    );
  }
}

export function devCommand(): Command {
  return new Command('dev')
    .description('run a local Drover: server on 127.0.0.1 with SQLite, plus local worker agents')
    .option('--port <port>', 'API port, 0..65535 (0 = any free port)', '7070')
    .option('--workers <n>', 'local worker agents, 0..64', '2')
    .option('--slots <n>', 'slots per worker, 1..1024', '4')
    .option('--dir <dir>', 'data directory (database, credentials, work dirs)', './.drover')
    .option('--log-level <level>', 'server log level on stderr', 'warn')
    .option('--open', 'open the dashboard\'s one-time sign-in link in a browser (xdg-open/open)')
    .addHelpText('after', '\nEnv DROVER_WEB_DIST: serve the dashboard from this directory instead of the package\'s web/dist.\n')
    .action(async (flags: DevFlags) => {
      const cfg = buildDevConfig(flags, process.cwd());
      mkdirSync(cfg.dir, { recursive: true, mode: 0o700 });
      const dbPath = join(cfg.dir, 'drover.db');

      applyHeapFlags();
      const { startServer } = await import('../../server/main.js');
      const server = await startServer({
        db: `sqlite:${dbPath}`,
        host: '127.0.0.1',
        port: cfg.port,
        logLevel: cfg.logLevel,
        ...(process.env.DROVER_ADMIN_TOKEN ? { adminToken: process.env.DROVER_ADMIN_TOKEN } : {}),
        ...(process.env.DROVER_WEB_DIST ? { webDist: resolve(process.env.DROVER_WEB_DIST) } : {}),
      }).catch((err: unknown) => {
        throw listenError(err, '127.0.0.1', cfg.port, 'another drover dev or server?');
      });

      let supervisor: WorkerSupervisor | null = null;
      onShutdown(async () => {
        process.stderr.write('drover dev: stopping workers and server\n');
        await supervisor?.stop();
        await server.close();
      });

      const credsPath = join(cfg.dir, 'credentials.json');
      const admin = await ensureToken(server.tokens, credsPath, 'admin', { name: 'dev-admin', user: 'admin' }, server.url);
      const worker = await ensureToken(server.tokens, join(cfg.dir, 'worker-token.json'), 'worker', { name: 'dev-worker', user: 'dev-worker' });

      supervisor = new WorkerSupervisor({
        url: server.url,
        token: worker.token,
        count: cfg.workers,
        slots: cfg.slots,
        dir: cfg.dir,
        log: (line) => process.stderr.write(line + '\n'),
      });
      supervisor.start();

      const found = findCredentialsFile(process.cwd()) === credsPath;
      const cli = found
        ? `The CLI in this directory is already authenticated (${credsPath}); elsewhere set`
        : `Credentials are in ${credsPath}; to use the CLI set`;
      process.stdout.write(
        `Drover dev: API at ${server.url} (SQLite at ${dbPath}), ${cfg.workers} local worker${cfg.workers === 1 ? '' : 's'}. ` +
          `${cli} DROVER_URL=${server.url} DROVER_TOKEN=${admin.token}\n`,
      );
      const link = `${server.url}${(await server.createLoginCode(admin.id)).path}`;
      process.stdout.write(
        `Dashboard: ${link}\n` +
          `  (a one-time sign-in link, valid 10 minutes; after that, sign in at ${server.url}/sign-in with the token above)\n`,
      );
      if (flags.open) {
        const opened = await openInBrowser(link);
        process.stdout.write(opened.ok ? `drover dev: opened the dashboard with ${opened.opener}\n` : `drover dev: --open: ${opened.reason}; open the link above yourself\n`);
      }
    });
}
