#!/usr/bin/env node
// The `drover` executable: runs the CLI's bundle in dist/cli/ (`npm run build`:
// tsc, then rolldown.config.js; `npm install` runs it).
import { fileURLToPath } from 'node:url';

// Imported by URL, not by path: a path is read as a URL, where `#` or `%` in a directory name would break it.
const bundle = new URL('../dist/cli/main.js', import.meta.url);
const bundlePath = fileURLToPath(bundle);
try {
  await import(bundle.href);
} catch (err) {
  // Only the bundle itself missing; anything else (a failure inside the CLI) is not ours to reword.
  if (err?.code !== 'ERR_MODULE_NOT_FOUND' || !String(err.message).includes(`'${bundlePath}'`)) throw err;
  process.stderr.write(`drover: ${bundlePath} is not built: run \`npm run build\` in ${fileURLToPath(new URL('..', import.meta.url))} (npm install builds it too)\n`);
  process.exitCode = 1;
}
