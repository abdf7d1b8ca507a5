import { existsSync } from 'node:fs';
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
