/**
 * The `drover` executable's bundle: tsc's output of src/cli/main.ts and every
 * module of ours it imports, statically or lazily, rolled into dist/cli/ (one
 * chunk per lazily loaded command, plus chunks they share). bin/drover.js runs
 * it; tests and the bench import dist/src/ as tsc wrote it. `npm run build`
 * makes both (tsc, then `rolldown -c`).
 *
 * Why a bundle: Node 20's ESM loader costs about 0.6 ms per module on this
 * machine (resolve, package scope lookup, a read on the threadpool, compile,
 * link), and `drover ls` loaded 23 modules of ours and commander's 7 CommonJS
 * files before its one request; from this bundle it reads 5 files. Measured (40
 * runs each, interleaved, spawn to exit, against a local server, 2026-12-03):
 * `drover ls` 134-148 ms from the build before (unbundled) and 117-122 ms from
 * this one, `node -e 0` 75-78 ms, a bare node:http GET of the same list 95-99 ms
 * (the floor for a Node client); issue 10's target is ≤ 1.5 × node -e 0. Tried
 * and left out: minifying (no difference) and loading commander's eager
 * `require('node:child_process')` lazily (1 ms).
 *
 * Why CommonJS (`.cjs` chunks; bin/drover.js is CommonJS too, bin/package.json):
 * an ES module as the entry point starts Node's ESM loader, and every builtin
 * an ES module imports gets a facade that reads all its exports. Measured (40
 * runs each, interleaved, 2026-12-03, against a local server): `drover ls` from
 * this bundle as ESM 146.7 ms, as CommonJS required by a CommonJS entry 137.5
 * ms, as CommonJS required by an ESM entry 146.5 ms, `node -e 0` 94.9 ms
 * (1.55 → 1.45 ×). External dynamic imports become require()s
 * (dynamicImportInCjs: false): every package we use ships CommonJS.
 *
 * What stays outside:
 * - packages (node_modules and node: builtins), except commander, which
 *   every command loads (bundled, its CommonJS runs without the CJS loader);
 * - src/worker/reaper.ts, which no bundled module imports: an agent runs that
 *   file as its reaper process when the native one is not built
 *   (worker/reaper-command.ts), from dist/src/ where tsc wrote it.
 * Modules that find files from their own place (the package root, web/dist,
 * build/Release, bin/drover.js) walk up to package.json (worker/package-root.ts),
 * so they work from dist/cli/ as from dist/src/.
 */
import { resolve } from 'node:path';
import { defineConfig } from 'rolldown';

const BUNDLED_PACKAGES = /^commander(\/|$)/;
/**
 * The modules behind `drover ls` and `drover show` (the start-up target; paths from the package root, as `input`): the
 * command tree, the task commands and what they import statically, commander
 * included. They go into one chunk, `cli`, which the other commands' chunks
 * import from too; everything else is split by rolldown's default (a chunk per
 * lazily loaded command, and chunks for what several of those share).
 */
const SHORT_PATH_ROOTS = ['dist/src/cli/signals.js', 'dist/src/cli/program.js', 'dist/src/cli/commands/tasks.js'];
const shortPath = new Set();

/** Fills shortPath: the static-import closure of SHORT_PATH_ROOTS, known once the module graph is built. */
const shortPathPlugin = {
  name: 'drover-short-path',
  buildEnd() {
    shortPath.clear();
    const todo = SHORT_PATH_ROOTS.map((f) => resolve(f));
    while (todo.length > 0) {
      const id = todo.pop();
      if (shortPath.has(id)) continue;
      const info = this.getModuleInfo(id);
      if (!info) throw new Error(`rolldown.config.js: ${id} is not in the bundle's graph`);
      if (info.isExternal) continue;
      shortPath.add(id);
      todo.push(...info.importedIds);
    }
  },
};

export default defineConfig({
  input: { main: 'dist/src/cli/main.js' },
  platform: 'node',
  plugins: [shortPathPlugin],
  // main.ts and program.ts import lazily what the long-running commands import statically: the lazy
  // import is for the short commands, so rolldown's note that it moves nothing is expected.
  checks: { ineffectiveDynamicImport: false },
  external: (id) => {
    if (id.startsWith('\0')) return false;
    if (id.startsWith('.') || id.startsWith('/')) return false;
    return !BUNDLED_PACKAGES.test(id);
  },
  output: {
    dir: 'dist/cli',
    format: 'cjs',
    entryFileNames: '[name].cjs',
    chunkFileNames: '[name]-[hash].cjs',
    dynamicImportInCjs: false,
    cleanDir: true,
    sourcemap: true,
    // Every chunk pure ASCII, so V8 holds each chunk's source (kept for lazy compilation) as a one-byte
    // string, not a two-byte one: non-ASCII characters in string literals escaped, and JSDoc comments
    // (ours hold arrows and the like; dist/src/ and the source maps keep them) left out. Measured: the
    // agent's heap held the cli, agent and worker chunks' sources as 583 KB of two-byte strings; with
    // this, 207 KB of one-byte ones, and a 10-slot agent's VmRSS went from 56.0 to 55.6 MB (2026-12-03).
    charset: 'ascii',
    comments: { legal: true, annotation: true, jsdoc: false },
    codeSplitting: {
      groups: [{ name: 'cli', test: (id) => shortPath.has(id) }],
    },
  },
});
