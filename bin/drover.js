#!/usr/bin/env node
// The `drover` executable: a thin shim over the CLI's bundle in dist/cli/
// (`npm run build`: tsc, then rolldown.config.js).
import '../dist/cli/main.js';
