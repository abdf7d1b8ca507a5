/**
 * `drover server`: runs the API and scheduler in this process until
 * SIGINT/SIGTERM, then closes it and exits 0.
 *
 * The server module is imported lazily so that the everyday commands (submit,
 * ls, ...) never load fastify or the SQLite driver.
 */
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { Command } from '../commander.js';
import { onShutdown } from '../signals.js';
import { parseDbUrl, parseDurationFlag, parseIntFlag, parsePort } from '../parse.js';
import { UsageError } from '../usage-error.js';
import { listenError } from '../listen-error.js';
import { applyHeapFlags, resumeYoungGrowth } from '../heap-flags.js';
import { limitMallocArenas } from '../malloc-arenas.js';
import { startMemoryTrim } from '../memory-trim.js';
import { guardProcFiles } from '../proc-guard.js';
import { isLogLevel, LOG_LEVELS } from '../human-log.js';
import { heldMessage, readHolder, removeHolder, writeHolder } from '../server-holder.js';

export const DEFAULT_DB = 'sqlite:./.drover/drover.db';

interface ServerFlags {
  db?: string;
  host: string;
  port: string;
  logLevel: string;
  heartbeat: string;
  lease: string;
  dbPool: string;
}

/** The file path of a `sqlite:PATH` URL, or null for postgres and in-memory databases. */
export function sqliteFile(db: string): string | null {
  if (!db.startsWith('sqlite:')) return null;
  const path = db.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
  if (!path || path === ':memory:' || path.startsWith('file:')) return null;
  return path;
}

/** Creates the directory of a SQLite file so a first start in a fresh directory works. */
export function ensureSqliteDir(db: string): void {
  const file = sqliteFile(db);
  if (file) mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
}

export function serverCommand(): Command {
  return new Command('server')
    .description('run a Drover server (API, scheduler, worker endpoint) in the foreground')
    .option('--db <url>', `database: sqlite:PATH or postgres://... (default: env DROVER_DB or ${DEFAULT_DB})`)
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--port <port>', 'port to listen on, 0..65535 (0 = any free port)', '7070')
    .option('--log-level <level>', 'the least severe server log lines written to stderr (JSON): fatal, error, warn, info (default) or debug; silent for none', 'info')
    .option('--heartbeat <duration>', 'how often workers heartbeat (a bare number is seconds)', '5s')
    .option('--lease <duration>', 'a worker silent this long is lost; its attempts are requeued (must exceed --heartbeat; a bare number is seconds)', '15s')
    .option('--db-pool <n>', 'PostgreSQL: connections in the pool, 1..200', '10')
    .addHelpText(
      'after',
      '\nOn an empty database the server creates the first admin token: its secret is\n' +
        'env DROVER_ADMIN_TOKEN if set, else a new one printed once at start.\n' +
        'The dashboard is served at / (sign in with a token); env DROVER_WEB_DIST serves it\n' +
        'from that directory instead of the package\'s web/dist.\n',
    )
    .action(async (flags: ServerFlags) => {
      const dbFlag = flags.db !== undefined ? '--db' : 'DROVER_DB';
      const db = parseDbUrl(dbFlag, flags.db ?? (process.env.DROVER_DB || DEFAULT_DB));
      const port = parsePort('--port', flags.port);
      const heartbeatMs = parseDurationFlag('--heartbeat', flags.heartbeat, 3_600_000);
      const leaseMs = parseDurationFlag('--lease', flags.lease, 24 * 3_600_000);
      if (heartbeatMs < 10) throw new UsageError(`invalid --heartbeat "${flags.heartbeat}": must be at least 10ms`);
      if (leaseMs <= heartbeatMs) throw new UsageError(`invalid --lease "${flags.lease}": must be longer than --heartbeat (${flags.heartbeat})`);
      const dbPool = parseIntFlag('--db-pool', flags.dbPool, 1, 200);
      if (!isLogLevel(flags.logLevel)) throw new UsageError(`invalid --log-level "${flags.logLevel.slice(0, 40)}": expected one of ${LOG_LEVELS.join(', ')}`);
      if (!flags.host.trim()) throw new UsageError('invalid --host "": expected an address such as 127.0.0.1 or 0.0.0.0');
      limitMallocArenas(); // may start this command again in this process (execve), before anything is made
      // Its environment (DROVER_ADMIN_TOKEN, a database password) out of reach of tasks run as the same user
      // (proc-guard.ts); without the addon the process is as before (the agents warn).
      guardProcFiles();
      ensureSqliteDir(db);
      const file = sqliteFile(db);

      applyHeapFlags();
      startMemoryTrim();
      const { startServer } = await import('../../server/main.js');
      const server = await startServer({
        db,
        host: flags.host,
        port,
        logLevel: flags.logLevel,
        heartbeatMs,
        leaseMs,
        dbPoolSize: dbPool,
        ...(process.env.DROVER_ADMIN_TOKEN ? { adminToken: process.env.DROVER_ADMIN_TOKEN } : {}),
        ...(process.env.DROVER_WEB_DIST ? { webDist: resolve(process.env.DROVER_WEB_DIST) } : {}),
      }).catch(async (err: unknown) => {
        const { ConflictError } = await import('../../core/errors.js');
        if (err instanceof ConflictError && file) throw new Error(heldMessage(file, file, readHolder(file), 'one SQLite file serves one server: stop that one, or use PostgreSQL (--db postgres://...) to run several'));
        throw listenError(err, flags.host, port, 'is another Drover server running?');
      });
      resumeYoungGrowth();
      // Tells a second server or drover dev on this file where this one runs (server-holder.ts).
      if (file) writeHolder(file, { pid: process.pid, url: server.url, command: 'server', since: new Date().toISOString() });
      onShutdown(async () => {
        await server.close();
        if (file) removeHolder(file);
      });
      process.stdout.write(`drover server listening on ${server.url}\n`);
      process.stdout.write(`dashboard: ${server.url}/\n`);
      if (server.createdAdminSecret) {
        process.stdout.write(
          `created the first admin token: ${server.createdAdminSecret}\n` +
            `this secret will not be shown again: store it now (e.g. export DROVER_TOKEN=...)\n`,
        );
      }
    });
}
