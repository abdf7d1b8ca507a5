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

export async function openStore(db: string): Promise<Store> {
  const u = parseDbUrl(db);
  if (u.kind === 'postgres') throw new InvalidInputError('db', 'the PostgreSQL store is not available in this version yet; use sqlite:PATH');
  const store = openSqliteStore(u.path);
  await store.migrate();
  return store;
}
