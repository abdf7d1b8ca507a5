/**
 * `drover dev --open`: opens a URL with the desktop's opener, where there is
 * one (`open` on macOS, `xdg-open` elsewhere), found on PATH. Nothing is
 * installed or guessed beyond that: without one, the caller says so.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';

/** The opener command for a platform. */
export function openerName(platform: NodeJS.Platform): string {
  return platform === 'darwin' ? 'open' : 'xdg-open';
}

function isExecutableFile(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The opener's full path on `pathEnv`, or null. Only absolute PATH entries count (a relative one would depend on the cwd). */
export function findOpener(platform: NodeJS.Platform, pathEnv: string | undefined, isExecutable: (path: string) => boolean = isExecutableFile): string | null {
  const name = openerName(platform);
  for (const dir of (pathEnv ?? '').split(delimiter)) {
    if (!isAbsolute(dir)) continue;
    const candidate = join(dir, name);
    if (isExecutable(candidate)) return candidate;
  }
  return null;
}

/**
 * Starts the opener on `url`, detached (it may outlive this process, as a
 * browser does); resolves with what happened, for the caller to print.
 */
export function openInBrowser(url: string, env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform): Promise<{ ok: true; opener: string } | { ok: false; reason: string }> {
  const opener = findOpener(platform, env.PATH);
  if (!opener) return Promise.resolve({ ok: false, reason: `no ${openerName(platform)} on PATH to open a browser with` });
  return new Promise((resolve) => {
    const child = spawn(opener, [url], { detached: true, stdio: 'ignore', env });
    child.once('error', (err) => resolve({ ok: false, reason: `${opener} failed to start: ${err.message}` }));
    child.once('spawn', () => {
      child.unref();
      resolve({ ok: true, opener });
    });
  });
}
