/**
 * Start-up of the CLI loads only what the command run needs: `--version`
 * loads no command module, `--help` and `ls` none of the server, the store,
 * the agent or their libraries (fastify, better-sqlite3, pg, ws, pino), and a
 * named command only its own command module. Checked on the real CLI process,
 * with a resolve hook that records every module it loads (module-recorder.ts),
 * run from tsc's output (one file per module, so the names say what loaded);
 * cli-bundle.test.ts checks the bundle the executable runs.
 * Also: which modules commandsToLoad picks for an argument list, and that the
 * help a lazily built tree prints is the whole tree's.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { buildProgram, commandsToLoad } from '../../src/cli/program.js';
import { CLI_SOURCE_MAIN, closedPort, type CliResult } from './fake-api.js';
import { runRecorded } from './recorded-run.js';

const dir = mkdtempSync(join(tmpdir(), 'drover-lazy-'));
let runs = 0;

/** Runs tsc's CLI with the recorder; returns its result and the modules it loaded (URLs). */
function record(args: string[], env: Record<string, string> = {}): Promise<CliResult & { modules: string[] }> {
  return runRecorded(CLI_SOURCE_MAIN, args, { log: join(dir, `modules-${++runs}.txt`), cwd: dir, env });
}

// The worker command's own help and flag checks use small pure modules of src/worker (task-env, noop-executor): not the agent.
const HEAVY = [/\/node_modules\/(fastify|@fastify\/[^/]+|better-sqlite3|pg|ws|pino|ajv)\//, /\/dist\/src\/(server|store)\//, /\/dist\/src\/worker\/(agent|connection|process-runner|held-attempt|reaper[^/]*)\.js$/];
const heavy = (modules: string[]) => modules.filter((m) => HEAVY.some((re) => re.test(m)));
const commandModules = (modules: string[]) => modules.filter((m) => /\/dist\/src\/cli\/commands\//.test(m)).map((m) => m.replace(/.*\/commands\//, ''));

describe('CLI start-up loads only what the command needs', () => {
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('the recorder sees the modules of a command that needs the server (so an empty list below means something)', async () => {
    const r = await record(['server', '--port', '70000']);
    assert.equal(r.code, 2, r.stderr);
    assert.deepEqual(commandModules(r.modules), ['server.js']);
    assert.ok(r.modules.some((m) => m.endsWith('/dist/src/cli/program.js')), r.modules.join('\n'));
  });

  it('--version: no command module, nothing of the server', async () => {
    for (const args of [['--version'], ['-V'], ['--url', 'http://127.0.0.1:1', '--version']]) {
      const r = await record(args);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /^\d+\.\d+\.\d+\n$/);
      assert.deepEqual(commandModules(r.modules), [], args.join(' '));
      assert.deepEqual(heavy(r.modules), [], args.join(' '));
    }
  });

  it('--help: every command is listed, nothing of the server loads', async () => {
    const r = await record(['--help']);
    assert.equal(r.code, 0, r.stderr);
    for (const name of ['submit', 'ls', 'show', 'logs', 'cancel', 'retry', 'token', 'workers', 'server', 'worker', 'dev']) {
      assert.match(r.stdout, new RegExp(`^  ${name}\\b`, 'm'), `${name} in\n${r.stdout}`);
    }
    assert.deepEqual(heavy(r.modules), []);
  });

  it('ls: only the tasks command module, nothing of the server', async () => {
    const r = await record(['ls'], { DROVER_URL: `http://127.0.0.1:${await closedPort()}`, DROVER_TOKEN: 't' });
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /^drover: cannot reach Drover/);
    assert.deepEqual(commandModules(r.modules), ['tasks.js']);
    assert.deepEqual(heavy(r.modules), []);
  });

  it('dag ls: only the dag command\'s modules; the DAG file reader and its YAML parser only for dag apply', async () => {
    const env = { DROVER_URL: `http://127.0.0.1:${await closedPort()}`, DROVER_TOKEN: 't' };
    const ls = await record(['dag', 'ls'], env);
    assert.equal(ls.code, 1, ls.stderr);
    assert.match(ls.stderr, /^drover: cannot reach Drover/);
    assert.deepEqual(commandModules(ls.modules).filter((m) => !m.startsWith('dag')), []);
    assert.ok(commandModules(ls.modules).includes('dag.js'));
    assert.ok(!commandModules(ls.modules).includes('dag-file.js'));
    assert.deepEqual(ls.modules.filter((m) => /\/node_modules\/yaml\//.test(m)), []);
    assert.deepEqual(heavy(ls.modules), []);
    const apply = await record(['dag', 'apply', '-'], env);
    assert.equal(apply.code, 2, apply.stderr);
    assert.ok(commandModules(apply.modules).includes('dag-file.js'));
    assert.deepEqual(heavy(apply.modules), []);
  });

  it('help NAME and NAME --help print the same, from only that command module', async () => {
    const a = await record(['help', 'worker']);
    const b = await record(['worker', '--help']);
    assert.equal(b.code, 0, b.stderr);
    assert.equal(a.stdout, b.stdout);
    assert.match(a.stdout, /^Usage: drover worker \[options\]/);
    assert.deepEqual(commandModules(a.modules), ['worker.js']);
    assert.deepEqual(heavy(a.modules), []);
  });

  it('an unknown command still gets its suggestion (all modules are loaded for it)', async () => {
    const r = await record(['submt']);
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
