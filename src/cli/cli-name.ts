/**
 * How a person should call the CLI in printed examples: `drover` when an
 * executable of that name is on PATH (npm link, npm install -g); else
 * `npx drover` where npx finds this package without the network (in its own
 * directory, or a project with it in node_modules/.bin, at or above `cwd`);
 * else `node <this package>/bin/drover.js`. Elsewhere `npx drover` would look
 * the name up on the npm registry and run whatever package is called that.
 */
import { accessSync, constants, existsSync } from 'node:fs';
import { delimiter, dirname, join, relative, isAbsolute } from 'node:path';
import { packageRoot } from '../worker/package-root.js';

export function cliName(path = process.env.PATH ?? '', cwd = process.cwd(), root = packageRoot(import.meta.url)): string {
  for (const dir of path.split(delimiter)) {
    if (!dir) continue;
    try {
      accessSync(join(dir, 'drover'), constants.X_OK);
      return 'drover';
    } catch {
      // not in this directory
    }
  }
  const inside = relative(root, cwd);
  if (inside === '' || (!inside.startsWith('..') && !isAbsolute(inside))) return 'npx drover';
  for (let dir = cwd; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'node_modules', '.bin', 'drover'))) return 'npx drover';
    if (dirname(dir) === dir) break;
  }
  return `node ${join(root, 'bin', 'drover.js')}`;
}
