/**
 * How a person should call the CLI in printed examples: `drover` when an
 * executable of that name is on PATH (npm link, npm install -g), else
 * `npx drover` (which works in the package's directory and its project).
 */
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

export function cliName(path = process.env.PATH ?? ''): string {
  for (const dir of path.split(delimiter)) {
    if (!dir) continue;
    try {
      accessSync(join(dir, 'drover'), constants.X_OK);
      return 'drover';
    } catch {
      // not in this directory
    }
  }
  return 'npx drover';
}
