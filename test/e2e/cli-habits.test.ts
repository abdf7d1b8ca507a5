/**
 * The CLI's habits (issue 10), through the real `drover` against a real
 * server and worker: bare-number durations are seconds, shell exit codes
 * with one summary line, id prefixes, the ls table, login/logout and the
 * user config directory, connection/401 hints, revoking the token in use,
 * completion scripts, colour.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { BIN, startCluster, type Cluster } from './harness.js';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `drover` with only the DROVER_* variables given (none inherited), in `cwd`, with XDG_CONFIG_HOME an empty directory by default. */
function drover(args: string[], opts: { env?: Record<string, string>; cwd?: string; stdin?: string } = {}): Promise<Run> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('DROVER_') || k === 'NO_COLOR' || k === 'FORCE_COLOR' || k === 'COLUMNS') delete env[k];
  Object.assign(env, { XDG_CONFIG_HOME: emptyConfig }, opts.env);
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { env, cwd: opts.cwd ?? scratch, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.stdin.end(opts.stdin ?? '');
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

let scratch = '';
let emptyConfig = '';

async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe('e2e: the CLI\'s habits', () => {
  let c: Cluster;
  let auth: Record<string, string>;
  before(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'drover-habits-'));
    emptyConfig = join(scratch, 'no-config');
    c = await startCluster({ workers: 1, slots: 4 });
    auth = { DROVER_URL: c.url, DROVER_TOKEN: c.api.token };
  });
  after(async () => {
    await c?.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('a bare --timeout is seconds; a timeout exits 124 with one summary line', async () => {
    const r = await drover(['submit', '--wait', '--timeout', '1', '--retries', '0', '--', 'sleep', '30'], { env: auth });
    assert.equal(r.code, 124, r.stderr);
    const lines = r.stderr.trim().split('\n');
    assert.equal(lines.length, 1, r.stderr);
    assert.match(lines[0]!, /^drover: task [0-9A-Z]{26} failed: timed out after 1000 ms \(attempts 1, duration 1(\.\d+)?s\)$/);
    const id = lines[0]!.split(' ')[2]!;
    assert.equal((await c.api.task(id)).task.timeoutMs, 1000);
    const help = await drover(['submit', '--help']);
    assert.equal(help.code, 0);
  });

  it('exit codes: the task\'s own, 128+signal, and logs -f the same way (plain logs 0)', async () => {
    const five = await drover(['submit', '--wait', '--retries', '0', '--', 'sh', '-c', 'echo five; exit 5'], { env: auth });
    assert.equal(five.code, 5);
    assert.equal(five.stdout, 'five\n');
    assert.match(five.stderr, /^drover: task ([0-9A-Z]{26}) failed: exit code 5 \(attempts 1, duration [\d.]+m?s\)\n$/);
    const id = five.stderr.split(' ')[2]!;
    const follow = await drover(['logs', '-f', id], { env: auth });
    assert.equal(follow.code, 5);
    assert.equal(follow.stdout, 'five\n');
    assert.match(follow.stderr, /failed: exit code 5/);
    const plain = await drover(['logs', id], { env: auth });
    assert.deepEqual([plain.code, plain.stderr], [0, '']);

    const killed = await drover(['submit', '--wait', '--retries', '0', '--', 'sh', '-c', 'kill -9 $$'], { env: auth });
    assert.equal(killed.code, 137, killed.stderr);
    assert.match(killed.stderr, /failed: killed by SIGKILL \(attempts 1,/);

    const ok = await drover(['submit', '--wait', '--', 'true'], { env: auth });
    assert.deepEqual([ok.code, ok.stderr], [0, '']);
  });

  it('a unique id prefix of 6+ characters works in any case; shorter is a usage error; an ambiguous one lists the matches', async () => {
    const id = (await drover(['submit', '--name', 'prefixed', '--', 'true'], { env: auth })).stdout.trim();
    await c.api.waitDone(id);
    const show = await drover(['show', id.slice(0, 14).toLowerCase()], { env: auth });
    assert.equal(show.code, 0, show.stderr);
    assert.match(show.stdout, new RegExp(`^id:\\s+${id}$`, 'm'));
    for (const cmd of [['show'], ['logs'], ['cancel'], ['retry']]) {
      const short = await drover([...cmd, id.slice(0, 5)], { env: auth });
      assert.equal(short.code, 2, `${cmd}: ${short.stderr}`);
      assert.match(short.stderr, /at least 6 characters/);
    }
    const logs = await drover(['logs', id.slice(0, 16)], { env: auth });
    assert.equal(logs.code, 0, logs.stderr);
    const missing = await drover(['show', 'ZZZZZZZZ'], { env: auth });
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /no task id starts with ZZZZZZZZ/);

    // Two tasks of one batch are created in the same millisecond: their ids share a long prefix.
    const b = await c.api.req('POST', '/v1/tasks/batch', { tasks: [{ command: 'true', name: 'twin-a' }, { command: 'true', name: 'twin-b' }] });
    assert.equal(b.status, 201, b.text);
    const [a1, a2] = b.body.tasks.map((t: { id: string }) => t.id) as [string, string];
    let n = 0;
    while (a1[n] === a2[n]) n++;
    assert.ok(n >= 6, `${a1} ${a2}`);
    const amb = await drover(['show', a1.slice(0, n)], { env: auth });
    assert.equal(amb.code, 2);
    assert.equal(amb.stderr.trim().split('\n').length, 1);
    assert.match(amb.stderr, /ambiguous task id/);
    assert.ok(amb.stderr.includes(`${a1} (twin-a, `) && amb.stderr.includes(`${a2} (twin-b, `), amb.stderr);
  });

  it('ls: worker, exit, duration and outcome columns within 80 columns; a timeout says timeout, never SIGTERM', async () => {
    const long = 'a-task-name-that-is-much-too-long-for-an-eighty-column-terminal-really';
    const r = await drover(['submit', '--wait', '--name', long, '--timeout', '500ms', '--retries', '0', '--', 'sleep', '30'], { env: auth });
    assert.equal(r.code, 124);
    const id = r.stderr.split(' ')[2]!;
    const ls = await drover(['ls'], { env: auth });
    assert.equal(ls.code, 0, ls.stderr);
    const lines = ls.stdout.trimEnd().split('\n');
    assert.match(lines[0]!, /^ID\s+NAME\s+STATE\s+WORKER\s+EXIT\s+DURATION\s+AGE$/);
    for (const l of lines) assert.ok(l.length <= 80, `${l.length} columns: ${l}`);
    const row = lines.find((l) => l.startsWith(id.slice(0, 12)));
    assert.ok(row, ls.stdout);
    assert.match(row!, /failed \(timed_out\)\s+w1\s+timeout\s+5\d\dms\s+\d+s$/);
    assert.doesNotMatch(ls.stdout, /SIGTERM/);
    const wide = await drover(['ls', '--wide'], { env: auth });
    assert.ok(wide.stdout.includes(id) && wide.stdout.includes(long), wide.stdout);
    const show = await drover(['show', id], { env: auth });
    assert.match(show.stdout, /^created:\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/m);
    assert.doesNotMatch(show.stdout, /\b1\d{12}\b/, 'no epoch-ms numbers');
  });

  it('colour: on with FORCE_COLOR, off with NO_COLOR (any value), --no-color, or a pipe', async () => {
    const id = (await drover(['submit', '--', 'true'], { env: auth })).stdout.trim();
    await c.api.waitDone(id);
    const forced = await drover(['ls'], { env: { ...auth, FORCE_COLOR: '1' } });
    assert.ok(forced.stdout.includes('\x1b[32msucceeded\x1b[0m'), JSON.stringify(forced.stdout.slice(0, 400)));
    const show = await drover(['show', id], { env: { ...auth, FORCE_COLOR: '1' } });
    assert.ok(show.stdout.includes('\x1b[32msucceeded\x1b[0m'));
    for (const [args, env] of [[['ls'], { NO_COLOR: '' }], [['--no-color', 'ls'], { FORCE_COLOR: '1' }], [['ls'], {}]] as const) {
      const r = await drover([...args], { env: { ...auth, ...env } });
      assert.equal(r.code, 0, r.stderr);
      assert.doesNotMatch(r.stdout, /\x1b/, `${args.join(' ')} ${JSON.stringify(env)}`);
    }
  });

  it('login stores {url, token} 0600 in the user config dir (0700), used from any directory; a bad token stores nothing; logout removes it', async () => {
    const xdg = join(scratch, 'xdg');
    const elsewhere = mkdtempSync(join(scratch, 'elsewhere-'));
    const bad = await drover(['login', c.url, '--token', 'drv_not_a_token'], { env: { XDG_CONFIG_HOME: xdg } });
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /rejected the token.*nothing was stored/);
    assert.equal(existsSync(join(xdg, 'drover', 'credentials.json')), false);

    // The token from a pipe on stdin (not a TTY: no prompt).
    const r = await drover(['login', c.url], { env: { XDG_CONFIG_HOME: xdg }, stdin: `${c.api.token}\n` });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /logged in to .* as admin \(admin\)/);
    const file = join(xdg, 'drover', 'credentials.json');
    assert.deepEqual(JSON.parse(readFileSync(file, 'utf8')), { url: c.url, token: c.api.token });
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal(statSync(join(xdg, 'drover')).mode & 0o777, 0o700);

    const ls = await drover(['ls'], { env: { XDG_CONFIG_HOME: xdg }, cwd: elsewhere });
    assert.equal(ls.code, 0, ls.stderr);
    assert.match(ls.stdout, /^ID\s+NAME/);

    const noToken = await drover(['login', c.url], { env: { XDG_CONFIG_HOME: xdg } });
    assert.equal(noToken.code, 2);
    assert.match(noToken.stderr, /no token: pass --token/);

    const out = await drover(['logout'], { env: { XDG_CONFIG_HOME: xdg } });
    assert.equal(out.code, 0);
    assert.equal(existsSync(file), false);
    const after = await drover(['ls'], { env: { XDG_CONFIG_HOME: xdg, DROVER_URL: c.url }, cwd: elsewhere });
    assert.equal(after.code, 1);
    assert.match(after.stderr, /not authenticated: no token found.*drover login URL.*drover dev.*DROVER_URL and DROVER_TOKEN/);
  });

  it('a connection error names where the url came from', async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    const env = await drover(['ls'], { env: { DROVER_URL: url } });
    assert.equal(env.code, 1);
    assert.equal(env.stderr, `drover: cannot reach Drover at ${url} (url from DROVER_URL): ECONNREFUSED\n`);
    const flag = await drover(['--url', url, 'ls']);
    assert.match(flag.stderr, /\(url from --url\): ECONNREFUSED/);
  });

  it('token revoke of the token in use needs --force', async () => {
    const made = await c.api.req('POST', '/v1/tokens', { name: 'second-admin', role: 'admin' });
    assert.equal(made.status, 201, made.text);
    const { secret, token } = made.body as { secret: string; token: { id: string } };
    const own = { DROVER_URL: c.url, DROVER_TOKEN: secret };
    const refused = await drover(['token', 'revoke', token.id], { env: own });
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /refusing to revoke .*it is the token this CLI is using.*--force/);
    assert.equal((await drover(['ls'], { env: own })).code, 0, 'still valid');
    const forced = await drover(['token', 'revoke', '--force', token.id], { env: own });
    assert.equal(forced.code, 0, forced.stderr);
    assert.equal((await drover(['ls'], { env: own })).code, 1);
  });

  it('completion bash|zsh|fish lists every command and flag of the tree; bash parses it', async () => {
    const bash = await drover(['completion', 'bash']);
    assert.equal(bash.code, 0, bash.stderr);
    for (const name of ['submit', 'ls', 'show', 'logs', 'cancel', 'retry', 'token', 'workers', 'server', 'worker', 'dev', 'login', 'logout', 'completion']) {
      assert.match(bash.stdout, new RegExp(`'[^']*\\b${name}\\b`), name);
    }
    for (const flag of ['--timeout', '--wide', '--no-color', '--force']) assert.ok(bash.stdout.includes(flag), flag);
    assert.equal(spawnSync('bash', ['-n'], { input: bash.stdout }).status, 0, 'bash -n');
    // Sourced, it completes: `drover token r<TAB>` -> revoke.
    const probe = spawnSync('bash', ['-c', `${bash.stdout}\nCOMP_WORDS=(drover token r); COMP_CWORD=2; _drover; echo "\${COMPREPLY[@]}"`], { encoding: 'utf8' });
    assert.equal(probe.stdout.trim(), 'revoke', probe.stderr);
    const zsh = await drover(['completion', 'zsh']);
    assert.match(zsh.stdout, /^#compdef drover/);
    const fish = await drover(['completion', 'fish']);
    assert.match(fish.stdout, /complete -c drover -n '__fish_use_subcommand' -a 'submit'/);
    assert.match(fish.stdout, /-l timeout/);
    const badShell = await drover(['completion', 'tcsh']);
    assert.equal(badShell.code, 2);
    assert.match(badShell.stderr, /invalid shell "tcsh": expected one of bash, zsh, fish/);
  });
});
