/**
 * Where the CLI finds its server and token. Precedence, per value:
 *
 *   1. `--url` / `--token` global options
 *   2. env `DROVER_URL` / `DROVER_TOKEN` (empty counts as unset)
 *   3. the nearest `.drover/credentials.json`, walking up from cwd:
 *      `{"url": "...", "token": "..."}` (written by `drover dev`)
 *   4. url `http://127.0.0.1:7070`, no token
 *
 * A token from the credentials file is used only when the resolved url is the
 * file's url (or the file names none): a dev token must never be sent to a
 * server picked by `--url`/`DROVER_URL`. The file is read only when a value is
 * still missing after 1 and 2, so a broken file cannot break explicit settings.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

export const DEFAULT_URL = 'http://127.0.0.1:7070';
export const CREDENTIALS_DIR = '.drover';
export const CREDENTIALS_FILE = 'credentials.json';

export type Source = 'flag' | 'env' | 'file' | 'default';

export interface Connection {
  url: string;
  token: string | null;
  urlSource: Source;
  /** Null when there is no token. */
  tokenSource: Exclude<Source, 'default'> | null;
  /** The credentials file consulted, if one was found and read. */
  credentialsPath: string | null;
}

export interface ResolveInput {
  flags: { url?: string | undefined; token?: string | undefined };
  env: Record<string, string | undefined>;
  cwd: string;
}

export interface CredentialsFile {
  url?: string;
  token?: string;
}

/** The nearest `.drover/credentials.json` at or above `start`, or null. */
export function findCredentialsFile(start: string): string | null {
  let dir = resolve(start);
  for (;;) {
    const candidate = join(dir, CREDENTIALS_DIR, CREDENTIALS_FILE);
    if (existsSync(candidate)) return candidate;
    const parent = dirname(dir);
    if (parent === dir) return null;
    dir = parent;
  }
}

/** Reads and checks a credentials file; throws an Error naming the file when it is unusable. */
export function readCredentialsFile(path: string): CredentialsFile {
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new Error(`cannot read ${path}: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (!data || typeof data !== 'object' || Array.isArray(data)) throw new Error(`cannot read ${path}: expected a JSON object {"url": ..., "token": ...}`);
  const { url, token } = data as Record<string, unknown>;
  if (url !== undefined && typeof url !== 'string') throw new Error(`cannot read ${path}: "url" must be a string`);
  if (token !== undefined && typeof token !== 'string') throw new Error(`cannot read ${path}: "token" must be a string`);
  return { ...(url ? { url } : {}), ...(token ? { token } : {}) };
}

export function resolveConnection(input: ResolveInput): Connection {
  const nonEmpty = (s: string | undefined) => (s !== undefined && s !== '' ? s : undefined);
  const flagUrl = nonEmpty(input.flags.url);
  const flagToken = nonEmpty(input.flags.token);
  const envUrl = nonEmpty(input.env.DROVER_URL);
  const envToken = nonEmpty(input.env.DROVER_TOKEN);

  let url: string | undefined = flagUrl ?? envUrl;
  let urlSource: Source = flagUrl ? 'flag' : envUrl ? 'env' : 'default';
  let token: string | undefined = flagToken ?? envToken;
  let tokenSource: Connection['tokenSource'] = flagToken ? 'flag' : envToken ? 'env' : null;
  let credentialsPath: string | null = null;

  if (url === undefined || token === undefined) {
    const path = findCredentialsFile(input.cwd);
    if (path) {
      const file = readCredentialsFile(path);
      credentialsPath = path;
      if (url === undefined && file.url) {
        url = file.url;
        urlSource = 'file';
      }
      const resolvedUrl = url ?? DEFAULT_URL;
      if (token === undefined && file.token && (!file.url || sameServer(file.url, resolvedUrl))) {
        token = file.token;
        tokenSource = 'file';
      }
    }
  }
  return { url: (url ?? DEFAULT_URL).replace(/\/+$/, ''), token: token ?? null, urlSource, tokenSource, credentialsPath };
}

/** Same scheme, host, port and path (ignoring a trailing slash). */
export function sameServer(a: string, b: string): boolean {
  const norm = (s: string) => {
    try {
      const u = new URL(s);
      return `${u.protocol}//${u.host}${u.pathname.replace(/\/+$/, '')}`;
    } catch {
      return s.replace(/\/+$/, '');
    }
  };
  return norm(a) === norm(b);
}

/** Human description of where the token came from, for error messages. */
export function describeTokenSource(c: Connection): string {
  switch (c.tokenSource) {
    case 'flag':
      return '--token';
    case 'env':
      return 'DROVER_TOKEN';
    case 'file':
      return c.credentialsPath ?? 'the credentials file';
    default:
      return 'nowhere';
  }
}
