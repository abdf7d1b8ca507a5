#!/usr/bin/env node
// The `drover` executable: runs the CLI's bundle in dist/cli/ (`npm run build`:
// tsc, then rolldown.config.js; `npm install` runs it). CommonJS, as the bundle
// is (bin/package.json; rolldown.config.js says why: start-up time).
'use strict';
const path = require('node:path');

// package.json engines (Node 20.19 or later, the release line this is tested on): say so here
// rather than fail later inside some command.
const [major, minor] = process.versions.node.split('.').map(Number);
const bundlePath = path.join(__dirname, '..', 'dist', 'cli', 'main.cjs');
if (major < 20 || (major === 20 && minor < 19)) {
  process.stderr.write(`drover: Node.js 20.19 or later is required; this is ${process.version}\n`);
  process.exitCode = 1;
} else {
  try {
    require(bundlePath);
  } catch (err) {
    // Only the bundle itself missing; anything else (a failure inside the CLI) is not ours to reword.
    if (err?.code !== 'MODULE_NOT_FOUND' || !String(err.message).includes(`'${bundlePath}'`)) throw err;
    process.stderr.write(`drover: ${bundlePath} is not built: run \`npm run build\` in ${path.join(__dirname, '..')}/ (npm install builds it too)\n`);
    process.exitCode = 1;
  }
}
