import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The directory of the package a module belongs to: the nearest parent of
 * `moduleUrl` holding a package.json (the same from src/ under tsx and from
 * dist/src/ after the build). Native builds live under it in build/Release.
 */
export function packageRoot(moduleUrl: string): string {
  let dir = path.dirname(fileURLToPath(moduleUrl));
  while (!existsSync(path.join(dir, 'package.json')) && path.dirname(dir) !== dir) dir = path.dirname(dir);
  return dir;
}

/**
 * Loads the addon `name` (binding.gyp's target) from build/Release of this
 * package, or says why not: not Linux (the targets build nothing elsewhere),
 * not built, or it failed to load. `what` names it in the first reason.
 */
export function loadAddon<T>(name: string, what: string): { binding: T } | { reason: string } {
  const file = path.join(packageRoot(import.meta.url), 'build', 'Release', `${name}.node`);
  if (process.platform !== 'linux') return { reason: `${what} is Linux only (platform ${process.platform})` };
  if (!existsSync(file)) return { reason: `${file} is not built (npm install runs node-gyp; it needs a C compiler and Node's headers)` };
  try {
    return { binding: createRequire(import.meta.url)(file) as T };
  } catch (err) {
    return { reason: `${file} did not load: ${err instanceof Error ? err.message : String(err)}` };
  }
}
