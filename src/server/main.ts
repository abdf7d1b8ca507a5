/**
 * Starts a Drover server: opens and migrates the store, makes sure an admin
 * token exists, serves the API and the worker endpoint, runs the scheduler.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import pino from 'pino';
import { systemClock, type Clock } from '../core/clock.js';
import { DEFAULT_HEARTBEAT_MS, DEFAULT_LEASE_MS } from '../core/protocol.js';
import { openStore } from '../store/open-store.js';
import type { Role, Store } from '../store/store.js';
import { buildApp } from './app.js';
import { tokenService } from './auth.js';
import { CronService } from './cron-service.js';
import { Scheduler } from './scheduler.js';
import { sessionRegistry } from './session-registry.js';
import { TaskBus } from './task-bus.js';
import { mintLoginCode, type LoginCode } from './web-auth.js';

export interface ServerOptions {
  /** `sqlite:PATH` or `postgres://...` */
  db: string;
  host?: string;
  port?: number;
  /** Used as the first admin token's secret when the store has no token (DROVER_ADMIN_TOKEN). */
  adminToken?: string;
  logLevel?: string;
  /** PostgreSQL connection pool size. */
  dbPoolSize?: number;
  heartbeatMs?: number;
  leaseMs?: number;
  sweepMs?: number;
  clock?: Clock;
  /** The built dashboard to serve (default the package's web/dist; env DROVER_WEB_DIST in the CLI). */
  webDist?: string;
  /** Where the server's and Fastify's log lines (pino JSON) go instead of stderr: `drover dev` turns them into human lines. */
  logDestination?: { write(chunk: string): unknown };
  /** Compile every route's schemas at start-up instead of at first use (server/lazy-compilers.ts; for tests). */
  eagerSchemas?: boolean;
}

export interface RunningServer {
  url: string;
  /** Set when this start created the first admin token and generated its secret (print it once). */
  createdAdminSecret: string | null;
  store: Store;
  tokens: {
    create(name: string, role: Role, user: string): Promise<{ id: string; secret: string }>;
    verify(secret: string): Promise<{ id: string; role: string } | null>;
  };
  /**
   * A one-time dashboard sign-in code for this token (what POST /v1/login-codes
   * makes): `path` is `/sign-in#code=...`, to append to `url`. Refuses (throws)
   * an unknown, revoked or worker token.
   */
  createLoginCode(tokenId: string): Promise<LoginCode>;
  close(): Promise<void>;
}

export async function startServer(opts: ServerOptions): Promise<RunningServer> {
  const clock = opts.clock ?? systemClock;
  const log = pino({ level: opts.logLevel ?? 'info', base: { svc: 'drover-server' } }, opts.logDestination ?? pino.destination(2));
  const store = await openStore(opts.db, { poolSize: opts.dbPoolSize });
  const tokens = tokenService(store, () => clock.now(), log);

  let createdAdminSecret: string | null = null;
  if ((await store.countTokens()) === 0) {
    // Several servers starting together on an empty database: one makes the token (and, without
    // DROVER_ADMIN_TOKEN, prints it); the others find one made and print nothing.
    const made = await tokens.createFirst('admin', 'admin', 'admin', opts.adminToken || undefined);
    if (made && !opts.adminToken) createdAdminSecret = made.secret;
  }

  const bus = new TaskBus();
  const serverId = `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  const scheduler = new Scheduler(store, clock, bus, log, {
    heartbeatMs: opts.heartbeatMs ?? DEFAULT_HEARTBEAT_MS,
    leaseMs: opts.leaseMs ?? DEFAULT_LEASE_MS,
    sweepMs: opts.sweepMs ?? 1000,
    serverId,
  });
  // On a single-server store (SQLite: its file lock admits one server) the cron
  // lease's holder is a fixed name, so a restarted server renews the lease its
  // predecessor left instead of waiting for it to expire (which could make a
  // slot due meanwhile late enough to count as missed). With several servers
  // each holds it under its own id.
  const cron = new CronService(store, clock, log, { holder: store.capabilities.multiServer ? serverId : 'single-server' });
  const sessions = sessionRegistry(store, log, { now: () => clock.now() });
  // cronKick: the schedules routes re-arm the firing timer after a create, resume or run.
  const ctx = { store, scheduler, bus, clock, tokens, log, sessions, cronKick: () => cron.kick() };
  const app = await buildApp(
    ctx,
    {
      logLevel: opts.logLevel === 'debug' ? 'info' : 'warn',
      ...(opts.webDist !== undefined ? { webDist: opts.webDist } : {}),
      ...(opts.logDestination ? { logStream: opts.logDestination } : {}),
      ...(opts.eagerSchemas ? { eagerSchemas: true } : {}),
    },
  );
  await app.listen({ host: opts.host ?? '127.0.0.1', port: opts.port ?? 7070 });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : (opts.port ?? 7070);
  const url = `http://${opts.host ?? '127.0.0.1'}:${port}`;
  scheduler.start();
  cron.start();

  let closing: Promise<void> | null = null;
  return {
    url,
    createdAdminSecret,
    store,
    tokens: {
      create: async (name, role, user) => {
        const r = await tokens.create(name, role, user);
        return { id: r.id, secret: r.secret };
      },
      verify: async (secret) => {
        const r = await tokens.verify(secret);
        return r ? { id: r.id, role: r.role } : null;
      },
    },
    createLoginCode: async (tokenId) => {
      const rec = await store.getToken(tokenId);
      if (!rec || rec.revokedAt !== null) throw new Error(`token ${tokenId} is unknown or revoked`);
      if (rec.role === 'worker') throw new Error('worker tokens cannot sign in to the dashboard');
      return mintLoginCode(store, tokenId, clock.now());
    },
    close: () =>
      (closing ??= (async () => {
        cron.stop();
        await cron.whenIdle();
        scheduler.stop();
        sessions.stop();
        for (const w of app.websocketServer?.clients ?? []) w.terminate();
        await app.close();
        await store.close();
      })()),
  };
}
