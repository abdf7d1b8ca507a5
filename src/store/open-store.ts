/**
 * Picks the store from a database URL: `sqlite:PATH` (PATH may be `:memory:`)
 * or `postgres://...`. Validated here, at the edge, with a message naming the
 * option.
 */
import { InvalidInputError } from '../core/errors.js';
import type { Store } from './store.js';
import { openSqliteStore } from './sqlite/sqlite-store.js';

export type DbUrl = { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string };

export function parseDbUrl(db: string, field = 'db'): DbUrl {
  if (db.startsWith('sqlite:')) {
    const path = db.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
    if (!path) throw new InvalidInputError(field, 'sqlite: needs a path, e.g. sqlite:./.drover/drover.db');
    return { kind: 'sqlite', path };
  }
  if (/^postgres(ql)?:\/\//.test(db)) return { kind: 'postgres', url: db };
  throw new InvalidInputError(field, `"${db}" is not a database URL: use sqlite:PATH or postgres://USER@HOST/DB`);
}

export interface OpenStoreOptions {
  /** PostgreSQL: connections in the pool. */
  poolSize?: number;
}

/** Opens and migrates the store. The PostgreSQL driver is loaded only when asked for. */
export async function openStore(db: string, opts: OpenStoreOptions = {}): Promise<Store> {
  const u = parseDbUrl(db);
  let store: Store;
  if (u.kind === 'postgres') {
    const { openPostgresStore } = await import('./postgres/postgres-store.js');
    store = openPostgresStore(u.url, { poolSize: opts.poolSize, applicationName: 'drover-server' });
  } else {
    // A server holds the file: a second server on it would never hear this one's signals.
    store = openSqliteStore(u.path, { lock: true });
  }
  try {
    await store.migrate();
  } catch (err) {
    await store.close().catch(() => {});
    throw err;
  }
  return store;
}
