/**
 * The bundle the `drover` executable runs (dist/cli/, rolldown.config.js):
 * - `drover ls` and `drover show` read a handful of files, all of them the
 *   bundle's: no module of dist/src/ and no package file (commander is inside;
 *   nothing else is needed before the request). Their start-up is a target
 *   (≤ 1.5 × `node -e 0`, bench/sections/startup.ts), and each module Node's
 *   loader reads costs about 0.6 ms here;
 * - it is CommonJS, entry point included (bin/drover.js, bin/package.json): no
 *   ES module of ours loads for them (an ESM entry point cost ls 9 ms);
 * - every relative import of a chunk names a file that exists, and none is the
 *   reaper's module (an ES module an agent must not load: worker/reaper-command.ts);
 * - it was built from this build's dist/src (npm run build runs tsc, then
 *   rolldown; tsc alone would leave the executable on older code);
 * - bin/drover.js runs it, and `--version` finds package.json from it; without
 *   it, bin/drover.js says to build (one line, exit 1).
 * The dashboard served from a bundled server is web-auth-static's e2e test;
 * everything else the CLI does is tested on the bundle through fake-api.ts.
 */
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, it } from 'node:test';
import { CLI_MAIN, closedPort, makeSummary, makeTask, sendJson, startFakeApi, TASK_ID, type CliResult } from './fake-api.js';
import { runRecorded } from './recorded-run.js';

const BUNDLE_DIR = dirname(CLI_MAIN);
const DIST = resolve(BUNDLE_DIR, '..');
const PACKAGE_ROOT = resolve(DIST, '..');
const BIN = join(PACKAGE_ROOT, 'bin', 'drover.js');
const dir = mkdtempSync(join(tmpdir(), 'drover-bundle-'));
let runs = 0;

/** Runs `entry` with the module recorder; returns its result and the files it loaded. */
async function record(entry: string, args: string[], env: Record<string, string> = {}): Promise<CliResult & { files: string[] }> {
  const r = await runRecorded(entry, args, { log: join(dir, `modules-${++runs}.txt`), cwd: dir, env: { NO_COLOR: '1', ...env } });
  return { ...r, files: r.modules.filter((u) => u.startsWith('file:')).map((u) => fileURLToPath(u)) };
}

/** The files of this package a run loaded, relative to the package root, besides bin/drover.js. */
const packageFiles = (files: string[]) => files.filter((f) => f.startsWith(PACKAGE_ROOT + '/')).map((f) => f.slice(PACKAGE_ROOT.length + 1)).filter((f) => f !== 'bin/drover.js');

describe('the CLI bundle', () => {
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('bin/drover.js runs it: --version loads only its files and reads the version from package.json', async () => {
    const r = await record(BIN, ['--version']);
    assert.equal(r.code, 0, r.stderr);
    const pkg = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string };
    assert.equal(r.stdout, `${pkg.version}\n`);
    assert.ok(r.files.includes(BIN), r.files.join('\n'));
    const own = packageFiles(r.files);
    assert.ok(own.includes('dist/cli/main.cjs'), own.join('\n'));
    assert.deepEqual(own.filter((f) => !f.startsWith('dist/cli/')), [], 'files outside the bundle');
  });

  it('ls and show: a handful of the bundle\'s files, nothing from dist/src or node_modules, and they work', async () => {
    const api = await startFakeApi((req, res) => {
      if (req.path === '/v1/tasks') sendJson(res, 200, { tasks: [makeSummary({ name: 'nightly' })], nextCursor: null });
      else if (req.path === `/v1/tasks/${TASK_ID}`) sendJson(res, 200, { task: makeTask({ name: 'nightly' }), attempts: [], events: [] });
      else sendJson(res, 404, { error: { code: 'not_found', message: `no route ${req.method} ${req.path}` } });
    });
    try {
      const env = { DROVER_URL: api.url, DROVER_TOKEN: 't' };
      for (const args of [['ls'], ['show', TASK_ID]]) {
        const r = await record(CLI_MAIN, args, env);
        assert.equal(r.code, 0, r.stderr);
        assert.match(r.stdout, /nightly/);
        const own = packageFiles(r.files);
        assert.deepEqual(own.filter((f) => !f.startsWith('dist/cli/')), [], `${args[0]}: files outside the bundle`);
        // main.cjs, the shared `cli` chunk (program, signals and the task commands) and
        // rolldown's runtime helpers: 3 today.
        assert.ok(own.length <= 4, `${args[0]} loaded ${own.length} files of the bundle:\n${own.join('\n')}`);
        assert.deepEqual(own.filter((f) => !f.endsWith('.cjs')), [], `${args[0]}: files of the bundle that are not CommonJS`);
        assert.deepEqual(r.files.filter((f) => f.includes('/node_modules/')), [], `${args[0]}: package files`);
      }
    } finally {
      await api.close();
    }
  });

  it('the recorder sees a command that loads more (so the short lists above mean something)', async () => {
    const r = await record(CLI_MAIN, ['server', '--port', '70000']);
    assert.equal(r.code, 2, r.stderr);
    assert.ok(packageFiles(r.files).length > 4, packageFiles(r.files).join('\n'));
    const ls = await record(CLI_MAIN, ['ls'], { DROVER_URL: `http://127.0.0.1:${await closedPort()}`, DROVER_TOKEN: 't' });
    assert.equal(ls.code, 1, ls.stderr);
    assert.ok(packageFiles(r.files).length > packageFiles(ls.files).length);
  });

  it('every relative require of a chunk names a file that exists, and none loads the reaper (an ES module: worker/reaper-command.ts)', () => {
    const chunks = readdirSync(BUNDLE_DIR).filter((f) => f.endsWith('.cjs'));
    assert.ok(chunks.length > 5, chunks.join(' '));
    const specifiers = new Set<string>();
    for (const c of chunks) {
      // Code lines only: bundled commander's JSDoc holds `import("./argument.js")` types.
      const code = readFileSync(join(BUNDLE_DIR, c), 'utf8').split('\n').filter((l) => !/^\s*(\*|\/\/|\/\*)/.test(l)).join('\n');
      // No ES module syntax is left to load anything (an import() would go through the ESM loader).
      assert.doesNotMatch(code, /^\s*(?:import|export)\b[^(]|\bimport\s*\(\s*["'`]/m, `${c} has ES module syntax`);
      for (const m of code.matchAll(/\brequire\s*\(\s*"(\.\.?\/[^"]+)"\s*\)/g)) {
        const target = resolve(BUNDLE_DIR, m[1]!);
        specifiers.add(m[1]!);
        assert.ok(existsSync(target), `${c} imports ${m[1]}, which is not there (${target})`);
      }
    }
    assert.ok(specifiers.size > 5, [...specifiers].join('\n'));
    assert.ok(![...specifiers].some((s) => /reaper/.test(s)), [...specifiers].join('\n'));
  });

  it('bin/drover.js without a bundle beside it says to build, exit 1 (in a directory whose name has # and %)', async () => {
    // `#` and `%` would break an import of the bundle by path (read as a URL), where Node would say "Cannot find module '.../un'".
    const pkg = join(dir, 'un#built %pkg');
    mkdirSync(join(pkg, 'bin'), { recursive: true });
    copyFileSync(BIN, join(pkg, 'bin', 'drover.js'));
    copyFileSync(join(PACKAGE_ROOT, 'bin', 'package.json'), join(pkg, 'bin', 'package.json'));
    writeFileSync(join(pkg, 'package.json'), '{"type":"module"}');
    const r = await record(join(pkg, 'bin', 'drover.js'), ['ls']);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.equal(r.stderr, `drover: ${join(pkg, 'dist', 'cli', 'main.cjs')} is not built: run \`npm run build\` in ${pkg}/ (npm install builds it too)\n`);
  });

  it('is newer than every module tsc wrote (npm run build makes both)', () => {
    const built = statSync(CLI_MAIN).mtimeMs;
    const stale: string[] = [];
    const walk = (d: string) => {
      for (const e of readdirSync(d, { withFileTypes: true })) {
        const p = join(d, e.name);
        if (e.isDirectory()) walk(p);
        else if (e.name.endsWith('.js') && statSync(p).mtimeMs > built) stale.push(p);
      }
    };
    walk(join(DIST, 'src'));
    assert.deepEqual(stale, [], 'modules changed after the bundle was built: run `npm run build`, not tsc alone');
  });
});
