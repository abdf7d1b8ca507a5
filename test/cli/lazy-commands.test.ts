/**
 * Start-up of the CLI loads only what the command run needs: `--version`
 * loads no command module, `--help` and `ls` none of the server, the store,
 * the agent or their libraries (fastify, better-sqlite3, pg, ws, pino), and a
 * named command only its own command module. Checked on the real CLI process,
 * with a resolve hook that records every module it loads (module-recorder.ts).
 * Also: which modules commandsToLoad picks for an argument list, and that the
 * help a lazily built tree prints is the whole tree's.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, it } from 'node:test';
import { buildProgram, commandsToLoad } from '../../src/cli/program.js';
import { CLI_MAIN, closedPort, type CliResult } from './fake-api.js';

const RECORDER = fileURLToPath(new URL('./module-recorder.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'drover-lazy-'));
let runs = 0;

/** Runs the CLI with the recorder; returns its result and the modules it loaded (file paths and package names). */
function runRecorded(args: string[], env: Record<string, string> = {}): Promise<CliResult & { modules: string[] }> {
  const log = join(dir, `modules-${++runs}.txt`);
  const childEnv: NodeJS.ProcessEnv = { ...process.env, DROVER_MODULE_LOG: log, ...env };
  for (const k of Object.keys(childEnv)) if (k.startsWith('DROVER_') && k !== 'DROVER_MODULE_LOG' && !(k in env)) delete childEnv[k];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', RECORDER, CLI_MAIN, ...args], { env: childEnv, cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => {
      let modules: string[] = [];
      try {
        modules = [...new Set(readFileSync(log, 'utf8').split('\n').filter(Boolean))];
      } catch {
        // nothing recorded: the assertions below say so
      }
      resolve({ code, stdout, stderr, modules });
    });
  });
}

// The worker command's own help and flag checks use small pure modules of src/worker (task-env, noop-executor): not the agent.
const HEAVY = [/\/node_modules\/(fastify|@fastify\/[^/]+|better-sqlite3|pg|ws|pino|ajv)\//, /\/dist\/src\/(server|store)\//, /\/dist\/src\/worker\/(agent|connection|process-runner|held-attempt|reaper[^/]*)\.js$/];
const heavy = (modules: string[]) => modules.filter((m) => HEAVY.some((re) => re.test(m)));
const commandModules = (modules: string[]) => modules.filter((m) => /\/dist\/src\/cli\/commands\//.test(m)).map((m) => m.replace(/.*\/commands\//, ''));

describe('CLI start-up loads only what the command needs', () => {
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('the recorder sees the modules of a command that needs the server (so an empty list below means something)', async () => {
    const r = await runRecorded(['server', '--port', '70000']);
    assert.equal(r.code, 2, r.stderr);
    assert.deepEqual(commandModules(r.modules), ['server.js']);
    assert.ok(r.modules.some((m) => m.endsWith('/dist/src/cli/program.js')), r.modules.join('\n'));
  });

  it('--version: no command module, nothing of the server', async () => {
    for (const args of [['--version'], ['-V'], ['--url', 'http://127.0.0.1:1', '--version']]) {
      const r = await runRecorded(args);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /^\d+\.\d+\.\d+\n$/);
      assert.deepEqual(commandModules(r.modules), [], args.join(' '));
      assert.deepEqual(heavy(r.modules), [], args.join(' '));
    }
  });

  it('--help: every command is listed, nothing of the server loads', async () => {
    const r = await runRecorded(['--help']);
    assert.equal(r.code, 0, r.stderr);
    for (const name of ['submit', 'ls', 'show', 'logs', 'cancel', 'retry', 'token', 'workers', 'server', 'worker', 'dev']) {
      assert.match(r.stdout, new RegExp(`^  ${name}\\b`, 'm'), `${name} in\n${r.stdout}`);
    }
    assert.deepEqual(heavy(r.modules), []);
  });

  it('ls: only the tasks command module, nothing of the server', async () => {
    const r = await runRecorded(['ls'], { DROVER_URL: `http://127.0.0.1:${await closedPort()}`, DROVER_TOKEN: 't' });
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /^drover: cannot reach Drover/);
    assert.deepEqual(commandModules(r.modules), ['tasks.js']);
    assert.deepEqual(heavy(r.modules), []);
  });

  it('dag ls: only the dag command\'s modules; the DAG file reader and its YAML parser only for dag apply', async () => {
    const env = { DROVER_URL: `http://127.0.0.1:${await closedPort()}`, DROVER_TOKEN: 't' };
    const ls = await runRecorded(['dag', 'ls'], env);
    assert.equal(ls.code, 1, ls.stderr);
    assert.match(ls.stderr, /^drover: cannot reach Drover/);
    assert.deepEqual(commandModules(ls.modules).filter((m) => !m.startsWith('dag')), []);
    assert.ok(commandModules(ls.modules).includes('dag.js'));
    assert.ok(!commandModules(ls.modules).includes('dag-file.js'));
    assert.deepEqual(ls.modules.filter((m) => /\/node_modules\/yaml\//.test(m)), []);
    assert.deepEqual(heavy(ls.modules), []);
    const apply = await runRecorded(['dag', 'apply', '-'], env);
    assert.equal(apply.code, 2, apply.stderr);
    assert.ok(commandModules(apply.modules).includes('dag-file.js'));
    assert.deepEqual(heavy(apply.modules), []);
  });

  it('help NAME and NAME --help print the same, from only that command module', async () => {
    const a = await runRecorded(['help', 'worker']);
    const b = await runRecorded(['worker', '--help']);
    assert.equal(b.code, 0, b.stderr);
    assert.equal(a.stdout, b.stdout);
    assert.match(a.stdout, /^Usage: drover worker \[options\]/);
    assert.deepEqual(commandModules(a.modules), ['worker.js']);
    assert.deepEqual(heavy(a.modules), []);
  });

  it('an unknown command still gets its suggestion (all modules are loaded for it)', async () => {
    const r = await runRecorded(['submt']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^drover: unknown command 'submt' \(Did you mean submit\?\)\n$/);
  });
});

describe('a tree built for one command', () => {
  it('gives that command the same help as the whole tree', async () => {
    const full = await buildProgram();
    for (const sub of full.commands) {
      const lazy = await buildProgram([sub.name(), '--help']);
      assert.deepEqual(lazy.commands.map((c) => c.name()).filter((n) => n === sub.name()), [sub.name()]);
      assert.equal(lazy.commands.find((c) => c.name() === sub.name())!.helpInformation(), sub.helpInformation(), sub.name());
      for (const leaf of sub.commands) {
        assert.equal(lazy.commands.find((c) => c.name() === sub.name())!.commands.find((c) => c.name() === leaf.name())!.helpInformation(), leaf.helpInformation());
      }
    }
    assert.equal((await buildProgram(['--help'])).helpInformation(), full.helpInformation());
  });
});

describe('commandsToLoad', () => {
  const cases: Array<[string[], 'none' | 'all' | string[]]> = [
    [[], 'all'],
    [['--version'], 'none'],
    [['-V'], 'none'],
    [['--token', 't', '-V'], 'none'],
    [['--url=http://x', '--version'], 'none'],
    [['--help'], 'all'],
    [['-h'], 'all'],
    [['help'], 'all'],
    [['help', 'ls'], ['ls', 'show', 'logs', 'cancel', 'retry']],
    [['dag', 'show', 'etl', '--version', '2'], ['dag']],
    [['help', 'nope'], 'all'],
    [['ls', '--version'], ['ls', 'show', 'logs', 'cancel', 'retry']],
    [['--url', 'http://x', 'worker', '--slots', '2'], ['worker']],
    // commander takes the next argument as --token's value, whatever it looks like
    [['--token', '--version', 'submit'], ['submit']],
    [['--token=--version', 'token', 'ls'], ['token']],
    [['frobnicate'], 'all'],
    [['--colour', 'ls'], 'all'],
    [['--', 'ls'], 'all'],
  ];
  for (const [argv, want] of cases) {
    it(`${JSON.stringify(argv)} → ${JSON.stringify(want)}`, () => {
      const got = commandsToLoad(argv);
      assert.deepEqual(typeof got === 'string' ? got : [...got], want);
    });
  }
});
