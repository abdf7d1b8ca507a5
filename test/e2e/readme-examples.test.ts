/**
 * Every shell example of README.md that needs no second machine runs as
 * written against a real `drover dev` (bin/drover.js dev --port 0, in a fresh
 * directory that plays the user's project directory), in README order, each
 * line under bash with `drover` on PATH (a shim running this build).
 *
 * How a line is read (the README's own conventions, so no example is rewritten):
 * - `ID` is the id of the task the latest `submit`/`rerun` line printed
 *   (26 Crockford base32 characters, the last one on its stdout); `RUN` the id
 *   of the DAG run the latest `drover dag run` line printed (the first one).
 * - A line with a quoted heredoc (`cat > f <<'EOF'`) runs with the lines up to
 *   its terminator, verbatim, as one example (its comment, if any, on its first line).
 * - `http://127.0.0.1:7070` is the dev's URL (the README shows dev's default
 *   port; the test's dev listens on a free one) and `drv_...` its admin token.
 * - A trailing `# ... exits N` comment is the exit status the line must
 *   have; every other line must exit 0.
 * - HOME and XDG_CONFIG_HOME are fresh directories (login writes there).
 *
 * Skipped, each with its reason (SKIP below): npm commands (installing and
 * testing the checkout is what this suite runs inside), `drover server` /
 * `drover worker` against other machines or system paths, and examples that
 * need a placeholder only a person can fill in.
 *
 * FEATURES are probed on the real CLI and server before the examples run: an
 * example that uses a feature the probe finds missing FAILS, naming the feature
 * (a broken feature is never turned into a skip).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Api, BIN, startProc, stopAll, type Proc } from './harness.js';

const README = resolve(import.meta.dirname, '../../../README.md');

/** Lines never run here, with the reason (matched against the line as written). */
const SKIP: { pattern: RegExp; reason: string }[] = [
  { pattern: /^npm (install|start|link|test|run)\b/, reason: 'installs, starts or tests the checkout itself: the suite runs inside an installed checkout and starts drover dev itself' },
  { pattern: /^DROVER_BIN=.* npm run bench/, reason: 'a benchmark of another checkout' },
  { pattern: /^drover server --db sqlite:\/var\/lib\//, reason: 'a system path (/var/lib/drover) and the fixed port 7070: the production example' },
  { pattern: /^drover server --db postgres:\/\/drover@db\.internal/, reason: 'needs the PostgreSQL host db.internal (a second machine)' },
  { pattern: /^drover worker --server http:\/\/(server|a):7070/, reason: 'needs the hosts "server" / "a" and "b" (other machines)' },
];

/** A feature the README's examples use, and how to check on the real CLI and server that this build has it. */
interface Feature {
  name: string;
  /** Lines that need it. */
  uses: RegExp;
  /** True when this build has it. */
  probe: () => Promise<boolean>;
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

describe('e2e: the README\'s shell examples run as written', () => {
  const root = mkdtempSync(join(tmpdir(), 'drover-readme-'));
  const project = join(root, 'project');
  const home = join(root, 'home');
  const shimDir = join(root, 'bin');
  let dev: Proc;
  let url = '';
  let token = '';
  const env = () => ({
    ...process.env,
    PATH: `${shimDir}:${process.env.PATH ?? ''}`,
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    NO_COLOR: '1',
    DROVER_EXIT_WITH_PARENT: '1',
  });
  const strip = (e: NodeJS.ProcessEnv) => {
    for (const k of Object.keys(e)) if (k.startsWith('DROVER_') && k !== 'DROVER_EXIT_WITH_PARENT') delete e[k];
    return e;
  };
  const bash = (line: string, timeoutMs = 60_000): Promise<Run> =>
    new Promise((resolvePromise, reject) => {
      const child = spawn('bash', ['-c', line], { cwd: project, env: strip(env()), stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      const t = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('error', reject);
      child.on('close', (code) => {
        clearTimeout(t);
        resolvePromise({ code, stdout, stderr });
      });
    });

  let help = '';
  let submitHelp = '';
  const FEATURES: Feature[] = [
    { name: 'submit --cwd', uses: /\bsubmit\b.*--cwd\b/, probe: async () => /--cwd\b/.test(submitHelp) },
    { name: 'submit --at/--in', uses: /\bsubmit\b.*--(at|in)\b/, probe: async () => /--at\b/.test(submitHelp) && /--in\b/.test(submitHelp) },
    { name: 'drover rerun', uses: /^drover rerun\b/, probe: async () => /^\s+rerun\b/m.test(help) },
    { name: 'drover login/logout', uses: /^drover (login|logout)\b/, probe: async () => /^\s+login\b/m.test(help) && /^\s+logout\b/m.test(help) },
    { name: 'drover completion', uses: /\bdrover completion\b/, probe: async () => /^\s+completion\b/m.test(help) },
    { name: 'drover dag', uses: /^drover dag\b/, probe: async () => /^\s+dag\b/m.test(help) },
    {
      name: 'bare-number durations are seconds',
      uses: /--(timeout|in|retry-base|retry-cap) \d+(\s|$)/,
      // Behaviour, not help text: a 0.2 s task under --timeout 2 succeeds only if 2 means seconds (2 ms would time it out).
      probe: async () => (await bash('drover submit --wait --retries 0 --timeout 2 -- sleep 0.2')).code === 0,
    },
    {
      name: 'a #! script runs by its shebang',
      uses: /--script \S+\.py\b/,
      probe: async () => {
        // The real behaviour, on the real server and worker: a python script submitted without an interpreter.
        const api = new Api(url, token);
        const id = await api.submit({ script: '#!/usr/bin/env python3\nimport sys\nprint(sys.version_info[0])\n', retry: { maxRetries: 0 } });
        const done = await api.waitDone(id);
        return done.task.state === 'succeeded';
      },
    },
  ];
  const have = new Map<string, boolean>();

  before(async () => {
    mkdirSync(project);
    mkdirSync(home);
    mkdirSync(shimDir);
    const shim = join(shimDir, 'drover');
    writeFileSync(shim, `#!/bin/sh\nexec '${process.execPath}' '${BIN}' "$@"\n`);
    chmodSync(shim, 0o755);
    // `drover dev` from the project directory, as the README says (its data dir is ./.drover).
    const started = await startProc(['dev', '--port', '0', '--workers', '2', '--dir', join(project, '.drover')], {}, /^Dashboard: (http:\/\/127\.0\.0\.1:\d+)\//m);
    dev = started.proc;
    url = started.match![1]!;
    token = (JSON.parse(readFileSync(join(project, '.drover', 'credentials.json'), 'utf8')) as { token: string }).token;
    help = (await bash('drover --help')).stdout;
    submitHelp = (await bash('drover submit --help')).stdout;
    for (const f of FEATURES) have.set(f.name, await f.probe());
  });
  after(async () => {
    await dev?.stop('SIGINT');
    await stopAll();
    rmSync(root, { recursive: true, force: true });
  });

  /**
   * The README's ```sh blocks, as lines (comments kept: they carry the expected status); a heredoc
   * with the lines up to its terminator, joined, as one line (its text kept as written).
   */
  function exampleLines(): string[] {
    const text = readFileSync(README, 'utf8');
    const lines: string[] = [];
    for (const m of text.matchAll(/^```sh\n([\s\S]*?)^```$/gm)) {
      const block = m[1]!.split('\n');
      for (let i = 0; i < block.length; i++) {
        const l = block[i]!;
        if (!l.trim() || l.trim().startsWith('#')) continue;
        const heredoc = /<<-?'(\w+)'/.exec(l);
        if (!heredoc) {
          lines.push(l);
          continue;
        }
        const end = block.indexOf(heredoc[1]!, i + 1);
        assert.ok(end > i, `the heredoc of \`${l}\` ends in its block`);
        lines.push(block.slice(i, end + 1).join('\n'));
        i = end;
      }
    }
    return lines;
  }

  it('the README has shell examples, and the skip list matches some of them (it is not stale)', () => {
    const lines = exampleLines();
    assert.ok(lines.length >= 20, `only ${lines.length} example lines`);
    for (const s of SKIP) assert.ok(lines.some((l) => s.pattern.test(l)), `skip rule ${s.pattern} matches no README line: remove it`);
  });

  it('each example runs against a real drover dev with the documented result', { timeout: 300_000 }, async (t) => {
    let lastId: string | null = null;
    let lastRun: string | null = null;
    let ran = 0;
    for (const example of exampleLines()) {
      // A heredoc's text is not searched for a comment: only its first line is.
      const [raw, ...body] = example.split('\n') as [string, ...string[]];
      const hash = raw.search(/\s#\s/);
      const line = [(hash >= 0 ? raw.slice(0, hash) : raw).trim(), ...body].join('\n');
      const comment = hash >= 0 ? raw.slice(hash) : '';
      const skip = SKIP.find((s) => s.pattern.test(line));
      if (skip) {
        t.diagnostic(`skipped: ${line} (${skip.reason})`);
        continue;
      }
      const missing = FEATURES.filter((f) => f.uses.test(line) && !have.get(f.name));
      assert.equal(missing.length, 0, `README example \`${line}\` uses what this build lacks: ${missing.map((f) => f.name).join(', ')}`);
      if (/\bID\b/.test(line) && lastId === null) {
        t.diagnostic(`skipped: ${line} (its ID comes from an example skipped above)`);
        continue;
      }
      if (/^drover .*\bRUN\b/.test(line) && lastRun === null) {
        t.diagnostic(`skipped: ${line} (its RUN comes from an example skipped above)`);
        continue;
      }
      const cmd = line
        .replace(/\bID\b/g, lastId ?? 'ID')
        .replace(/^(drover .*)\bRUN\b/, (_, before: string) => before + (lastRun ?? 'RUN'))
        .replace(/http:\/\/127\.0\.0\.1:7070/g, url)
        .replace(/drv_\.\.\./g, token);
      const want = Number(/\bexits (\d+)\b/.exec(comment)?.[1] ?? 0);
      const r = await bash(cmd);
      ran++;
      assert.equal(r.code, want, `README example \`${line}\` exited ${r.code}, expected ${want}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
      if (/^drover (submit|rerun)\b/.test(line)) {
        // A plain submit prints the id; with --wait it streams the log instead (ID then has no meaning).
        const ids = r.stdout.match(/\b[0-9A-HJKMNP-TV-Z]{26}\b/g);
        if (!/--wait\b/.test(line)) assert.ok(ids, `\`${line}\` printed no task id:\n${r.stdout}`);
        lastId = ids ? ids[ids.length - 1]! : null;
      }
      if (/^drover dag run\b/.test(line)) {
        const run = r.stdout.match(/\b[0-9A-HJKMNP-TV-Z]{26}\b/);
        assert.ok(run, `\`${line}\` printed no run id:\n${r.stdout}`);
        lastRun = run[0];
      }
    }
    t.diagnostic(`ran ${ran} example lines`);
    assert.ok(ran >= 8, `only ${ran} lines ran`);
  });
});
