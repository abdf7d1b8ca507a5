/**
 * `drover dev`: a whole Drover on this machine in one command. Starts the server
 * in-process on 127.0.0.1 with SQLite in `<dir>`, makes sure the CLI in this
 * directory is authenticated, and supervises N worker agents as child processes.
 *
 * One dev per data directory. The authority is the store's kernel lock on
 * `<dir>/drover.db.lock` (store/sqlite/server-lock.ts), which `drover server`
 * takes too; `<dir>/drover.db.holder.json` (cli/server-holder.ts) says where the
 * holder runs. Start order, so that a refused or failed start changes nothing:
 *   1. flags (UsageError, exit 2), before any file is looked at;
 *   2. if the lock file exists, try the lock: held → refuse, naming the holder's
 *      URL and pid (nothing written: credentials.json is untouched);
 *   3. the port (a probe listen), before any file is created;
 *   4. snapshot the directory, create it, start the server (which takes the lock
 *      for good), write the holder file, then the tokens and workers.
 * Any failure in 4 closes what started and removes what this run created
 * (cli/created-paths.ts); a lock lost to a concurrent start removes nothing
 * (those files are the winner's).
 *
 * Credentials contract (files mode 0600 in `<dir>`):
 * - `credentials.json` `{url, token}`: an admin token, found by the CLI's
 *   credential lookup (credentials.ts). Reused across restarts while the server
 *   still accepts it as an admin token (the url is rewritten if the port
 *   changed); otherwise (revoked, unknown, unreadable) a new `dev-admin` token
 *   replaces it: restarting dev is the way back in after a revoke.
 * - `worker-token.json` `{token}`: the workers' token (role worker), reused the same way.
 *
 * Workers run `drover worker` in a child process each, in a process group of
 * their own (a terminal's Ctrl-C reaches dev only), with the token in the env
 * (DROVER_TOKEN, not argv, so `ps` does not show it), human log lines at dev's
 * --log-level, and an IPC channel that makes them exit when this process dies.
 * A worker that exits on its own is restarted after a backoff (1 s doubling to
 * 30 s; reset after 30 s of uptime). SIGINT/SIGTERM: SIGTERM the workers (they
 * drain for up to 5 s) and wait for them (SIGKILL after 15 s), then close the
 * server, remove the holder file, exit 0.
 *
 * Terminal: the banner (dev-banner.ts) on stdout; on stderr, `HH:MM:SS` lines:
 * dev's own, the workers' tagged `[w1]`, the server's `[server]`; with
 * --verbose a line per task end (dev-task-ends.ts).
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
import { packageRoot } from '../../worker/package-root.js';
import { Command } from '../commander.js';
import { findCredentialsFile, readCredentialsFile, sameServer } from '../credentials.js';
import { parseIntFlag, parsePort } from '../parse.js';
import { onShutdown } from '../signals.js';
import { UsageError } from '../usage-error.js';
import { listenError } from '../listen-error.js';
import { openInBrowser } from '../open-browser.js';
import { applyHeapFlags, resumeYoungGrowth } from '../heap-flags.js';
import { limitMallocArenas } from '../malloc-arenas.js';
import { startMemoryTrim } from '../memory-trim.js';
import { guardProcFiles } from '../proc-guard.js';
import { clockTime, humanPinoDestination, isLogLevel, LOG_LEVELS, type LogLevel } from '../human-log.js';
import { heldMessage, readHolder, removeHolder, writeHolder, type Holder } from '../server-holder.js';
import { snapshotDir } from '../created-paths.js';
import { probePort } from '../port-probe.js';
import { devBanner } from '../dev-banner.js';
import { cliName } from '../cli-name.js';
import { tailTaskEnds, type TaskEndTail } from '../dev-task-ends.js';

interface DevFlags {
  port: string;
  workers: string;
  slots: string;
  dir: string;
  logLevel: string;
  verbose?: boolean;
  open?: boolean;
}

export interface DevConfig {
  port: number;
  workers: number;
  slots: number;
  dir: string;
  logLevel: LogLevel;
}

export function buildDevConfig(flags: DevFlags, cwd: string): DevConfig {
  const port = parsePort('--port', flags.port);
  const workers = parseIntFlag('--workers', flags.workers, 0, 64);
  const slots = parseIntFlag('--slots', flags.slots, 1, 1024);
  if (!flags.dir.trim()) throw new UsageError('invalid --dir "": expected a directory');
  if (!isLogLevel(flags.logLevel)) throw new UsageError(`invalid --log-level "${flags.logLevel.slice(0, 40)}": expected one of ${LOG_LEVELS.join(', ')}`);
  return { port, workers, slots, dir: resolve(cwd, flags.dir), logLevel: flags.logLevel };
}

/** This package's executable (bin/drover.js); workers run it as `drover worker`. */
const CLI_MAIN = join(packageRoot(import.meta.url), 'bin', 'drover.js');

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

/** A worker's line with its name after the time: `12:00:01 [w1] warn  ...` (a line without a time gets the current one). */
export function tagLine(name: string, line: string, now: number): string {
  const m = /^(\d\d:\d\d:\d\d) (.*)$/.exec(line);
  return m ? `${m[1]} [${name}] ${m[2]}` : `${clockTime(now)} [${name}] ${line}`;
}

/** `drover worker dev-w1: 4 slots, server http://...` (worker.ts; `(+N prefetched)` after the slots with a fixed --prefetch). */
const STARTED_LINE = /^drover worker \S+: \d+ slots?(?: \([^)]*\))?, /;

function isInfoOrMore(level: LogLevel): boolean {
  return level === 'info' || level === 'debug' || level === 'trace';
}

/** Keeps N `drover worker` children running until stop(). */
export class WorkerSupervisor {
  private readonly children = new Map<number, ChildProcess>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private stopping = false;

  constructor(
    private readonly opts: { url: string; token: string; count: number; slots: number; dir: string; logLevel: LogLevel; log: (line: string) => void },
  ) {}

  start(): void {
    for (let i = 1; i <= this.opts.count; i++) this.spawn(i, 1000);
  }

  private spawn(i: number, backoffMs: number): void {
    if (this.stopping) return;
    const name = `w${i}`;
    // A short drain: stop() SIGKILLs a worker after 15 s, and a killed agent's attempts would be stopped by its reaper, but reported only as lost leases 15 s later.
    const args = [
      CLI_MAIN, 'worker', '--server', this.opts.url, '--slots', String(this.opts.slots), '--work-dir', join(this.opts.dir, 'work', name),
      '--id', `dev-${name}`, '--drain-timeout', '5s', '--log-format', 'human', '--log-level', this.opts.logLevel,
    ];
    const env: NodeJS.ProcessEnv = { ...process.env, DROVER_TOKEN: this.opts.token };
    delete env.DROVER_URL;
    // detached: a process group of its own, so the terminal's Ctrl-C (SIGINT to the foreground group)
    // reaches dev alone, and each worker gets exactly one signal, dev's SIGTERM, in order (a second
    // signal would make it stop its attempts at once). The IPC channel still ends it if dev dies.
    const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe', 'ipc'], detached: true });
    const startedAt = Date.now();
    this.children.set(i, child);
    for (const stream of [child.stdout, child.stderr]) {
      if (!stream) continue;
      createInterface({ input: stream }).on('line', (line) => {
        // The agent's start line repeats what dev's banner says; shown from --log-level info on.
        if (STARTED_LINE.test(line) && !isInfoOrMore(this.opts.logLevel)) return;
        this.opts.log(tagLine(name, line, Date.now()));
      });
    }
    child.on('error', (err) => this.opts.log(tagLine(name, `cannot start: ${err.message}`, Date.now())));
    child.on('exit', (code, signal) => {
      this.children.delete(i);
      if (this.stopping) return;
      const next = Date.now() - startedAt > 30_000 ? 1000 : backoffMs;
      this.opts.log(`${clockTime(Date.now())} drover dev: worker ${name} exited (${signal ?? `code ${code}`}); restarting in ${next / 1000} s`);
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
    .option('--dir <dir>', 'data directory (database, credentials, work dirs); one drover dev per directory', './.drover')
    .option('--log-level <level>', `the least severe lines of the server and the workers shown here: ${LOG_LEVELS.join(', ')}; warn shows warnings and errors only`, 'warn')
    .option('--verbose', 'also print a line for every task that ends (succeeded, failed, cancelled)')
    .option('--open', 'open the dashboard\'s one-time sign-in link in a browser (xdg-open/open)')
    .addHelpText(
      'after',
      '\nA second drover dev (or drover server) on the same --dir is refused, naming the URL and pid of\n' +
        'the one running there; a start that fails leaves no file behind that was not there before.\n' +
        'Env DROVER_WEB_DIST: serve the dashboard from this directory instead of the package\'s web/dist.\n',
    )
    .action(async (flags: DevFlags) => {
      const cfg = buildDevConfig(flags, process.cwd());
      const dbPath = join(cfg.dir, 'drover.db');
      const refusal = (holder: Holder | null) => new Error(heldMessage(cfg.dir, dbPath, holder, 'stop that one first, or use another --dir'));

      limitMallocArenas(); // may start this command again in this process (execve), before anything is made
      // Its environment and memory (the admin and worker tokens) out of reach of tasks run as the same user
      // (proc-guard.ts); without the addon the process is as before (the agents warn).
      guardProcFiles();
      applyHeapFlags();
      startMemoryTrim();
      // Before anything is created: a running holder (its lock confirms it), then the port.
      const { holdServerLock } = await import('../../store/sqlite/server-lock.js');
      const { ConflictError } = await import('../../core/errors.js');
      if (existsSync(`${dbPath}.lock`)) {
        try {
          holdServerLock(dbPath).release();
        } catch (err) {
          if (err instanceof ConflictError) throw refusal(readHolder(dbPath));
          throw err;
        }
      }
      await probePort('127.0.0.1', cfg.port).catch((err: unknown) => {
        throw listenError(err, '127.0.0.1', cfg.port, 'another drover dev or server?');
      });

      const created = snapshotDir(cfg.dir);
      mkdirSync(cfg.dir, { recursive: true, mode: 0o700 });
      let server: Awaited<ReturnType<typeof import('../../server/main.js').startServer>> | null = null;
      let supervisor: WorkerSupervisor | null = null;
      let tail: TaskEndTail | null = null;
      try {
        const { startServer } = await import('../../server/main.js');
        const serverOptions: Parameters<typeof startServer>[0] = {
          db: `sqlite:${dbPath}`,
          host: '127.0.0.1',
          port: cfg.port,
          logLevel: cfg.logLevel,
          // The server's lines as human lines, like the workers'.
          logDestination: humanPinoDestination((line) => process.stderr.write(tagLine('server', line, Date.now()) + '\n')),
          ...(process.env.DROVER_ADMIN_TOKEN ? { adminToken: process.env.DROVER_ADMIN_TOKEN } : {}),
          ...(process.env.DROVER_WEB_DIST ? { webDist: resolve(process.env.DROVER_WEB_DIST) } : {}),
        };
        server = await startServer(serverOptions).catch((err: unknown) => {
          if (err instanceof ConflictError) throw Object.assign(refusal(readHolder(dbPath)), { lockHeld: true });
          throw listenError(err, '127.0.0.1', cfg.port, 'another drover dev or server?');
        });
        resumeYoungGrowth();
        writeHolder(dbPath, { pid: process.pid, url: server.url, command: 'dev', since: new Date().toISOString() });
        const running = server;
        onShutdown(async () => {
          say('drover dev: stopping the workers, then the server');
          tail?.stop();
          await supervisor?.stop();
          await running.close();
          removeHolder(dbPath);
        });

        const credsPath = join(cfg.dir, 'credentials.json');
        const admin = await ensureToken(server.tokens, credsPath, 'admin', { name: 'dev-admin', user: 'admin' }, server.url);
        const worker = await ensureToken(server.tokens, join(cfg.dir, 'worker-token.json'), 'worker', { name: 'dev-worker', user: 'dev-worker' });
        if (flags.verbose) tail = await tailTaskEnds(server.store, (line) => process.stderr.write(line), (m) => say(`drover dev: ${m}`));

        supervisor = new WorkerSupervisor({
          url: server.url,
          token: worker.token,
          count: cfg.workers,
          slots: cfg.slots,
          dir: cfg.dir,
          logLevel: cfg.logLevel,
          log: (line) => process.stderr.write(line + '\n'),
        });
        supervisor.start();

        const link = `${server.url}${(await server.createLoginCode(admin.id)).path}`;
        process.stdout.write(
          devBanner({
            url: server.url,
            pid: process.pid,
            dir: cfg.dir,
            workers: cfg.workers,
            slots: cfg.slots,
            credentialsPath: credsPath,
            cliFindsCredentials: findCredentialsFile(process.cwd()) === credsPath,
            token: admin.token,
            dashboardLink: link,
            cli: cliName(),
            verbose: Boolean(flags.verbose),
          }),
        );
        if (flags.open) {
          const opened = await openInBrowser(link);
          process.stdout.write(opened.ok ? `drover dev: opened the dashboard with ${opened.opener}\n` : `drover dev: --open: ${opened.reason}; open the link above yourself\n`);
        }
      } catch (err) {
        // A failed start leaves nothing of its own behind; files of a holder that refused us are not ours.
        tail?.stop();
        await supervisor?.stop();
        await server?.close().catch(() => {});
        if (!(err as { lockHeld?: boolean }).lockHeld) {
          removeHolder(dbPath);
          created.undo();
        }
        throw err;
      }
    });
}

/** A line of dev's own on stderr, with the local time like the workers' lines. */
function say(line: string): void {
  process.stderr.write(`${clockTime(Date.now())} ${line}\n`);
}
