#!/usr/bin/env node
// The `drover` executable: runs the CLI's bundle in dist/cli/ (`npm run build`:
// tsc, then rolldown.config.js; `npm install` runs it).
import { fileURLToPath } from 'node:url';

const bundle = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));
try {
  await import(bundle);
} catch (err) {
  // Only the bundle itself missing; anything else (a failure inside the CLI) is not ours to reword.
  if (err?.code !== 'ERR_MODULE_NOT_FOUND' || !String(err.message).includes(`'${bundle}'`)) throw err;
  process.stderr.write(`drover: ${bundle} is not built: run \`npm run build\` in ${fileURLToPath(new URL('..', import.meta.url))} (npm install builds it too)\n`);
  process.exitCode = 1;
}
