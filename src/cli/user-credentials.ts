/**
 * The user's stored credentials (`drover login` / `drover logout`):
 * `{url, token}` in `<userConfigDir>/credentials.json` (credentials.ts
 * userConfigDir: `$XDG_CONFIG_HOME/drover`, default `~/.config/drover`).
 *
 * The directory is made (or tightened to) 0700 and the file is written 0600
 * through a temporary file in the same directory and a rename, so a reader
 * never sees half a file and the token is never readable by others, not
 * even for a moment.
 */
import { chmodSync, existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { userCredentialsPath } from './credentials.js';

export function saveUserCredentials(dir: string, creds: { url: string; token: string }): string {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  const path = userCredentialsPath(dir);
  const tmp = `${path}.${process.pid}.tmp`;
  try {
    writeFileSync(tmp, JSON.stringify({ url: creds.url, token: creds.token }, null, 2) + '\n', { mode: 0o600, flag: 'wx' });
    renameSync(tmp, path);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
  return path;
}

/** Removes the stored credentials; false when there were none. */
export function removeUserCredentials(dir: string): boolean {
  const path = userCredentialsPath(dir);
  if (!existsSync(path)) return false;
  rmSync(path);
  return true;
}
