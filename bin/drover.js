#!/usr/bin/env node
// The `drover` executable: a thin shim over the compiled CLI in dist/.
import '../dist/src/cli/main.js';
