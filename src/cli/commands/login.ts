/**
 * `drover login URL` and `drover logout`: credentials for every directory.
 *
 * login takes the token from the root `--token`, else env DROVER_TOKEN,
 * else asks for it (read-token.ts); checks it with GET /v1/me against URL
 * (nothing is stored unless the server accepts it); then stores
 * `{url, token}` in the user config directory (user-credentials.ts), where
 * every later command finds it after flags, env and a project's
 * `.drover/credentials.json` (credentials.ts).
 */
import { homedir } from 'node:os';
import { Command } from '../commander.js';
import { DroverClient } from '../../client/client.js';
import { ApiError } from '../../client/errors.js';
import { userConfigDir } from '../credentials.js';
import type { GlobalOptions } from '../context.js';
import { safeText } from '../output.js';
import { parseHttpUrl } from '../parse.js';
import { readToken } from '../read-token.js';
import { removeUserCredentials, saveUserCredentials } from '../user-credentials.js';
import { UsageError } from '../usage-error.js';

function configDir(): string {
  const dir = userConfigDir(process.env, process.env.HOME || homedir());
  if (!dir) throw new UsageError('no user config directory: set HOME or XDG_CONFIG_HOME');
  return dir;
}

export function loginCommand(): Command {
  return new Command('login')
    .description('check a token against a server and store both for use from any directory (the token: --token, env DROVER_TOKEN, or asked for)')
    .argument('<url>', 'the Drover server, e.g. http://127.0.0.1:7070')
    .action(async (rawUrl: string, _flags: unknown, cmd: Command) => {
      const url = parseHttpUrl('URL', rawUrl);
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const token = g.token || process.env.DROVER_TOKEN || (await readToken(`token for ${url}: `));
      let me;
      try {
        me = await new DroverClient({ url, token }).me();
      } catch (err) {
        if (err instanceof ApiError && err.status === 401) throw new Error(`login failed: ${url} rejected the token (${err.message}); nothing was stored`);
        throw err;
      }
      const path = saveUserCredentials(configDir(), { url, token });
      process.stdout.write(`logged in to ${safeText(url)} as ${safeText(me.user)} (${safeText(me.role)}); credentials in ${safeText(path)}\n`);
    });
}

export function logoutCommand(): Command {
  return new Command('logout')
    .description('remove the credentials drover login stored')
    .action(() => {
      const dir = configDir();
      if (removeUserCredentials(dir)) process.stdout.write(`removed ${safeText(dir)}/credentials.json\n`);
      else process.stderr.write('not logged in: no stored credentials\n');
    });
}
