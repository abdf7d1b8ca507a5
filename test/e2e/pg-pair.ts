/**
 * Two `drover server` processes on one fresh PostgreSQL test database, each
 * with one agent that lists its own server first and the other second (so
 * when a server dies its agent moves to the other). For the DAG tests across
 * servers (test/e2e/dag-multi-server.test.ts, test/faults/dag-failover.test.ts).
 * No side effects at import: node --test loads every file under test/.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, type TestDatabase } from '../support/postgres.js';
import { Api, startProc, stopAll, waitWorker, type Proc } from './harness.js';

export interface PgServer {
  name: 'A' | 'B';
  proc: Proc;
  url: string;
  api: Api;
}

export interface PgPair {
  db: TestDatabase;
  dir: string;
  servers: [PgServer, PgServer];
  /** Agent id → the server it lists first ('wa' → A, 'wb' → B). */
  agents: Map<string, { proc: Proc; home: PgServer }>;
  close(): Promise<void>;
}

/**
 * `serverArgs`: e.g. ['--lease', '10s', '--heartbeat', '500ms']. Each agent
 * gets `slots` slots.
 */
export async function startPgPair(opts: { serverArgs: string[]; slots: number }): Promise<PgPair> {
  const db = await createTestDatabase();
  const dir = mkdtempSync(join(tmpdir(), 'drover-pg-pair-'));
  const admin = `drv_test_${randomBytes(16).toString('hex')}`;
  const start = async (name: 'A' | 'B'): Promise<PgServer> => {
    const { proc, match } = await startProc(['server', '--db', db.url, '--host', '127.0.0.1', '--port', '0', '--log-level', 'warn', ...opts.serverArgs], { DROVER_ADMIN_TOKEN: admin }, /listening on (http:\/\/127\.0\.0\.1:\d+)/);
    return { name, proc, url: match![1]!, api: new Api(match![1]!, admin) };
  };
  const pair: PgPair = {
    db,
    dir,
    servers: [await start('A'), await start('B')],
    agents: new Map(),
    async close() {
      await stopAll();
      await db.drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    const [a, b] = pair.servers;
    const t = await a.api.req('POST', '/v1/tokens', { name: 'pg-pair-worker', role: 'worker' });
    if (t.status !== 201) throw new Error(`worker token: ${t.text}`);
    for (const [id, home, other] of [['wa', a, b], ['wb', b, a]] as const) {
      const { proc } = await startProc(['worker', '--server', home.url, '--server', other.url, '--slots', String(opts.slots), '--id', id, '--work-dir', join(dir, 'work', id)], { DROVER_TOKEN: t.body.secret });
      await waitWorker(home.api, id, proc);
      pair.agents.set(id, { proc, home });
    }
    return pair;
  } catch (e) {
    await pair.close();
    throw e;
  }
}
