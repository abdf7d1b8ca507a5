/**
 * Builds the API client for a command from the global `--url`/`--token`
 * options, the environment and the credentials file (see credentials.ts).
 *
 * The connection in use is remembered in `session` so the error printer can
 * word a 401 by where the token came from. Resolution happens only when a
 * command actually talks to the server, after its flags were validated.
 */
import type { Command } from 'commander';
import { DroverClient } from '../client/client.js';
import { homedir } from 'node:os';
import { describeUrlSource, resolveConnection, userConfigDir, type Connection } from './credentials.js';
import { parseHttpUrl } from './parse.js';

export const session: { connection: Connection | null } = { connection: null };

export interface GlobalOptions {
  url?: string;
  token?: string;
}

export function connect(cmd: Command): DroverClient {
  const g = cmd.optsWithGlobals<GlobalOptions>();
  const conn = resolveConnection({ flags: { url: g.url, token: g.token }, env: process.env, cwd: process.cwd(), userConfigDir: userConfigDir(process.env, process.env.HOME || homedir()) });
  const flag = conn.urlSource === 'file' || conn.urlSource === 'user' ? `"url" in ${describeUrlSource(conn)}` : conn.urlSource === 'default' ? 'url' : describeUrlSource(conn);
  parseHttpUrl(flag, conn.url);
  session.connection = conn;
  return new DroverClient({ url: conn.url, token: conn.token });
}
