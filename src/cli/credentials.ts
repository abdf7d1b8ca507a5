/**
 * Where the CLI finds its server and token. Precedence, per value:
 *
 *   1. `--url` / `--token` global options
 *   2. env `DROVER_URL` / `DROVER_TOKEN` (empty counts as unset)
 *   3. the nearest `.drover/credentials.json`, walking up from cwd:
 *      `{"url": "...", "token": "..."}` (written by `drover dev`)
 *   4. the user's `credentials.json` in `$XDG_CONFIG_HOME/drover/` (default
 *      `~/.config/drover/`), written by `drover login` (0600, directory 0700)
 *   5. url `http://127.0.0.1:7070`, no token
 *
 * The url is the first one found; a token from a file is used only when the
 * resolved url is that file's url (or the file names none): a dev token must
 * never be sent to a server picked by `--url`/`DROVER_URL`. The files are
 * read only when a value is still missing after 1 and 2, so a broken file
 * cannot break explicit settings.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { UsageError } from './usage-error.js';

export const DEFAULT_URL = 'http://127.0.0.1:7070';
export const CREDENTIALS_DIR = '.drover';
export const CREDENTIALS_FILE = 'credentials.json';

/** `file`: a project's `.drover/credentials.json`; `user`: the user config's (drover login). */
export type Source = 'flag' | 'env' | 'file' | 'user' | 'default';

export interface Connection {
  url: string;
  token: string | null;
  urlSource: Source;
  /** Null when there is no token. */
  tokenSource: Exclude<Source, 'default'> | null;
  /** The credentials file the token came from, else the one the url came from, else the nearest one read. */
  credentialsPath: string | null;
  /** The file the url came from (urlSource file or user), else null. */
  urlPath: string | null;
  /** Whether any credentials exist at all: a flag, env, or a credentials file found. */
  anyCredentials: boolean;
}

export interface ResolveInput {
  flags: { url?: string | undefined; token?: string | undefined };
  env: Record<string, string | undefined>;
  cwd: string;
  /** The user config directory (userConfigDir()); null or absent: none is consulted. */
  userConfigDir?: string | null;
}

/** `$XDG_CONFIG_HOME/drover`, else `<home>/.config/drover`; null without either. */
export function userConfigDir(env: Record<string, string | undefined>, home: string | null = env.HOME ?? null): string | null {
  const xdg = env.XDG_CONFIG_HOME;
  if (xdg && xdg.startsWith('/')) return join(xdg, 'drover');
  return home ? join(home, '.config', 'drover') : null;
}

/** The user's credentials file (drover login), whether or not it exists. */
export function userCredentialsPath(dir: string): string {
  return join(dir, CREDENTIALS_FILE);
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
  // An empty variable counts as unset, as shells treat it; an empty flag was typed, and is refused
  // rather than quietly replaced by the environment's or a file's value.
  for (const flag of ['url', 'token'] as const) {
    if (input.flags[flag] === '') throw new UsageError(`invalid --${flag} "": expected ${flag === 'url' ? 'a server URL' : 'an API token'} (leave the flag out to use env DROVER_${flag.toUpperCase()} or the stored credentials)`);
  }
  const flagUrl = nonEmpty(input.flags.url);
  const flagToken = nonEmpty(input.flags.token);
  const envUrl = nonEmpty(input.env.DROVER_URL);
  const envToken = nonEmpty(input.env.DROVER_TOKEN);

  let url: string | undefined = flagUrl ?? envUrl;
  let urlSource: Source = flagUrl ? 'flag' : envUrl ? 'env' : 'default';
  let token: string | undefined = flagToken ?? envToken;
  let tokenSource: Connection['tokenSource'] = flagToken ? 'flag' : envToken ? 'env' : null;
  let credentialsPath: string | null = null;
  let urlPath: string | null = null;
  let anyFile = false;

  if (url === undefined || token === undefined) {
    const files: Array<{ path: string; source: 'file' | 'user' }> = [];
    const project = findCredentialsFile(input.cwd);
    if (project) files.push({ path: project, source: 'file' });
    if (input.userConfigDir) {
      const user = userCredentialsPath(input.userConfigDir);
      if (user !== project && existsSync(user)) files.push({ path: user, source: 'user' });
    }
    const read = files.map((f) => ({ ...f, data: readCredentialsFile(f.path) }));
    anyFile = read.length > 0;
    if (url === undefined) {
      const withUrl = read.find((f) => f.data.url);
      if (withUrl) {
        url = withUrl.data.url;
        urlSource = withUrl.source;
        urlPath = withUrl.path;
      }
    }
    const resolvedUrl = url ?? DEFAULT_URL;
    if (token === undefined) {
      const withToken = read.find((f) => f.data.token && (!f.data.url || sameServer(f.data.url, resolvedUrl)));
      if (withToken) {
        token = withToken.data.token;
        tokenSource = withToken.source;
        credentialsPath = withToken.path;
      }
    }
    credentialsPath ??= urlPath ?? read[0]?.path ?? null;
  }
  const anyCredentials = anyFile || urlSource !== 'default' || tokenSource !== null;
  return { url: (url ?? DEFAULT_URL).replace(/\/+$/, ''), token: token ?? null, urlSource, tokenSource, credentialsPath, urlPath, anyCredentials };
}

/** Where the url came from, for a connection error: `--url`, `DROVER_URL`, a file, or the default. */
export function describeUrlSource(c: Connection): string {
  switch (c.urlSource) {
    case 'flag':
      return '--url';
    case 'env':
      return 'DROVER_URL';
    case 'file':
    case 'user':
      return c.urlPath ?? 'a credentials file';
    default:
      return 'the default: no --url, DROVER_URL or credentials file';
  }
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
    case 'user':
      return c.credentialsPath ?? 'the credentials file';
    default:
      return 'nowhere';
  }
}
