/**
 * `drover dev` as a first-time user meets it, on real processes
 * (bin/drover.js dev --port 0 --dir TMP): one dev per data directory (a
 * second is refused before it touches credentials.json, naming where the first
 * runs), a failed start leaves no file behind, the terminal shows human lines
 * (a line per task end with --verbose; no JSON, no epoch milliseconds), and a
 * Ctrl-C (SIGINT to the whole foreground process group, as a terminal sends
 * it) stops everything without warnings.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { Api, BIN, startProc, stopAll } from './harness.js';

const READY = /^Dashboard: (http:\/\/127\.0\.0\.1:(\d+))\/sign-in#code=/m;

interface Dev {
  child: ChildProcess;
  url: string;
  out(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Starts `drover dev` in a process group of its own (detached), as a shell
 * starts a foreground job, so the test can signal the whole group like a
 * terminal's Ctrl-C. Resolves when the banner's Dashboard line is out.
 */
function startDev(args: string[], cwd: string): Promise<Dev> {
  const child = spawn(process.execPath, [BIN, 'dev', ...args], { cwd, detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, DROVER_EXIT_WITH_PARENT: '1' } });
  started.add(child);
  let out = '';
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => child.once('exit', (code, signal) => r({ code, signal })));
  return new Promise((resolve, reject) => {
    const onData = (d: Buffer) => {
      out += d.toString();
      const m = READY.exec(out);
      if (m) resolve({ child, url: m[1]!, out: () => out, exited });
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    void exited.then((e) => reject(new Error(`drover dev exited (${e.code ?? e.signal}) before it was ready:\n${out}`)));
  });
}

/** Runs `drover ARGS` to its end. */
function run(args: string[], cwd: string, env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, DROVER_EXIT_WITH_PARENT: '1', ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Waits (bounded) until `pred()` holds, checking on each output chunk of `child`. */
async function waitOutput(dev: Dev, pred: (out: string) => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  if (pred(dev.out())) return;
  await new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`timed out waiting for ${what}; output:\n${dev.out()}`)), timeoutMs);
    const check = () => {
      if (pred(dev.out())) {
        clearTimeout(t);
        dev.child.stdout!.off('data', check);
        dev.child.stderr!.off('data', check);
        resolve();
      }
    };
    dev.child.stdout!.on('data', check);
    dev.child.stderr!.on('data', check);
  });
}

async function stopGroup(dev: Dev, signal: NodeJS.Signals = 'SIGINT'): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (dev.child.exitCode === null && dev.child.signalCode === null) process.kill(-dev.child.pid!, signal);
  return dev.exited;
}

const started = new Set<ChildProcess>();
const root = mkdtempSync(join(tmpdir(), 'drover-dev-first-'));

/**
 * Every file under `dir`, relative, with its size and mtime: what "touched
 * nothing" compares. The database's own files change under their live holder
 * (its sweeps write), so only their names count.
 */
function tree(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  const walk = (d: string, rel: string) => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name);
      const st = statSync(p);
      if (st.isDirectory()) walk(p, `${rel}${name}/`);
      else out.push(/^drover\.db(-wal|-shm)?$/.test(name) ? `${rel}${name}` : `${rel}${name} ${st.size} ${st.mtimeMs}`);
    }
  };
  walk(dir, '');
  return out;
}

async function takenPort(): Promise<{ port: number; server: Server }> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { port: (server.address() as { port: number }).port, server };
}

describe('e2e: drover dev on a first run', () => {
  after(async () => {
    for (const c of started) if (c.exitCode === null && c.signalCode === null) process.kill(-c.pid!, 'SIGKILL');
    await stopAll();
    rmSync(root, { recursive: true, force: true });
  });

  it('a second drover dev on the same directory is refused, names the first one\'s URL and pid, and changes no file', async () => {
    const cwd = join(root, 'lock');
    mkdirSync(cwd);
    const first = await startDev(['--port', '0', '--workers', '0'], cwd);
    try {
      const data = join(cwd, '.drover');
      const before = tree(data);
      const creds = readFileSync(join(data, 'credentials.json'), 'utf8');
      const second = await run(['dev', '--port', '0', '--workers', '0'], cwd);
      assert.equal(second.code, 1, second.stderr);
      assert.match(second.stderr, new RegExp(`^drover: ${data.replace(/[.]/g, '\\.')} is in use by another drover dev: ${first.url.replace(/[.]/g, '\\.')} \\(pid ${first.child.pid}, since [0-9T:.-]+Z\\); stop that one first, or use another --dir\\n$`));
      assert.equal(second.stdout, '');
      assert.deepEqual(tree(data), before, 'nothing in the data directory changed');
      assert.equal(readFileSync(join(data, 'credentials.json'), 'utf8'), creds);
      // The CLI here still reaches the first one.
      const ls = await run(['ls'], cwd);
      assert.equal(ls.code, 0, ls.stderr);
      // On its default port too: the lock is checked before the port, so the answer is the same.
      const third = await run(['dev', '--port', first.url.split(':')[2]!, '--workers', '0'], cwd);
      assert.match(third.stderr, /is in use by another drover dev/);
    } finally {
      assert.equal((await stopGroup(first)).code, 0);
    }
    // Its holder note is gone with it; a new dev starts on the same directory.
    assert.equal(existsSync(join(cwd, '.drover', 'drover.db.holder.json')), false);
    const again = await startDev(['--port', '0', '--workers', '0'], cwd);
    assert.equal((await stopGroup(again)).code, 0);
  });

  it('what the banner says about admin tokens works: token create --role admin, and a restart replaces a revoked token', async () => {
    const cwd = join(root, 'tokens');
    mkdirSync(cwd);
    const first = await startDev(['--port', '0', '--workers', '0'], cwd);
    let url = first.url;
    try {
      // Run from a directory outside the package: the banner names the package's own bin, not npx (cli-name.ts).
      assert.match(first.out(), /Another admin token: (drover|node \S+\/bin\/drover\.js) token create --name NAME --role admin\./);
      const made = await run(['token', 'create', '--name', 'second-admin', '--role', 'admin'], cwd);
      assert.equal(made.code, 0, made.stderr);
      // Revoke the token credentials.json holds (with the other admin token: the CLI's own may refuse it).
      const { token } = JSON.parse(readFileSync(join(cwd, '.drover', 'credentials.json'), 'utf8')) as { token: string };
      const api = new Api(url, token);
      const me = await api.req('GET', '/v1/me');
      assert.equal(me.status, 200, me.text);
      const tokens = (await api.req('GET', '/v1/tokens')).body.tokens as { id: string; name: string; revokedAt: string | null }[];
      const devAdmin = tokens.filter((t) => t.name === 'dev-admin' && t.revokedAt === null);
      assert.equal(devAdmin.length, 1);
      const r = await api.req('DELETE', `/v1/tokens/${devAdmin[0]!.id}`);
      assert.equal(r.status, 200, r.text);
      assert.equal((await run(['ls'], cwd)).code, 1, 'the CLI here is locked out');
    } finally {
      await stopGroup(first);
    }
    const second = await startDev(['--port', '0', '--workers', '0'], cwd);
    url = second.url;
    try {
      const ls = await run(['ls'], cwd);
      assert.equal(ls.code, 0, ls.stderr);
    } finally {
      await stopGroup(second);
    }
  });

  it('a drover server holding the directory\'s database is named the same way', async () => {
    const cwd = join(root, 'server-lock');
    mkdirSync(cwd);
    const db = join(cwd, '.drover', 'drover.db');
    const { proc, match } = await startProc(['server', '--db', `sqlite:${db}`, '--port', '0'], {}, /listening on (http:\/\/127\.0\.0\.1:\d+)/);
    try {
      const before = tree(join(cwd, '.drover'));
      const r = await run(['dev', '--port', '0', '--workers', '0'], cwd);
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, new RegExp(`is in use by another drover server: ${match![1]!.replace(/[.]/g, '\\.')} \\(pid ${proc.child.pid}, `));
      assert.deepEqual(tree(join(cwd, '.drover')), before);
      // And a second server on that file hears where the first one runs.
      const s2 = await run(['server', '--db', `sqlite:${db}`, '--port', '0'], cwd);
      assert.equal(s2.code, 1);
      assert.match(s2.stderr, new RegExp(`in use by another drover server: ${match![1]!.replace(/[.]/g, '\\.')} \\(pid ${proc.child.pid}, .*use PostgreSQL`));
    } finally {
      await proc.stop();
    }
  });

  it('a failed start leaves no file behind: port in use (new and existing directories), a bad flag', async () => {
    const cwd = join(root, 'fail');
    mkdirSync(cwd);
    const { port, server } = await takenPort();
    try {
      // A directory that does not exist, two levels deep: neither level is left.
      const r1 = await run(['dev', '--port', String(port), '--workers', '0', '--dir', 'a/b'], cwd);
      assert.equal(r1.code, 1, r1.stderr);
      assert.match(r1.stderr, new RegExp(`^drover: cannot listen on 127\\.0\\.0\\.1:${port}: the port is in use`));
      assert.deepEqual(readdirSync(cwd), []);
      // An existing, empty directory stays empty.
      const existing = join(cwd, 'mine');
      mkdirSync(existing);
      const r2 = await run(['dev', '--port', String(port), '--workers', '0', '--dir', existing], cwd);
      assert.equal(r2.code, 1, r2.stderr);
      assert.deepEqual(readdirSync(existing), []);
    } finally {
      server.close();
    }
    const r3 = await run(['dev', '--port', '0', '--log-level', 'loud'], cwd);
    assert.equal(r3.code, 2);
    assert.match(r3.stderr, /^drover: invalid --log-level "loud": expected one of fatal, error, warn, info, debug, trace, silent\n$/);
    assert.deepEqual(readdirSync(cwd), ['mine']);
  });

  it('--verbose: a human line per task end; no JSON and no epoch milliseconds on the terminal; Ctrl-C stops it cleanly', async () => {
    const cwd = join(root, 'lines');
    mkdirSync(cwd);
    const dev = await startDev(['--port', '0', '--workers', '1', '--slots', '1', '--verbose'], cwd);
    let exit: { code: number | null; signal: NodeJS.Signals | null };
    try {
      assert.match(dev.out(), /1 local worker × 1 slot;/);
      const { token } = JSON.parse(readFileSync(join(cwd, '.drover', 'credentials.json'), 'utf8')) as { token: string };
      const api = new Api(dev.url, token);
      const ok = await api.submit({ name: 'hello', command: 'true' });
      const bad = await api.submit({ name: 'boom', command: 'sh', args: ['-c', 'exit 3'], retry: { maxRetries: 0 } });
      await api.waitDone(ok);
      await api.waitDone(bad);
      await waitOutput(dev, (o) => o.includes(`task ${ok} `) && o.includes(`task ${bad} `), 'both task-end lines');
      assert.match(dev.out(), new RegExp(`^\\d\\d:\\d\\d:\\d\\d task ${ok} \\(hello\\) succeeded in \\d+(ms|\\.\\ds) on dev-w1$`, 'm'));
      assert.match(dev.out(), new RegExp(`^\\d\\d:\\d\\d:\\d\\d task ${bad} \\(boom\\) failed in \\d+(ms|\\.\\ds) on dev-w1: .*3`, 'm'));
    } finally {
      exit = await stopGroup(dev);
    }
    assert.equal(exit.code, 0, dev.out());
    const out = dev.out();
    assert.doesNotMatch(out, /\{"level"/, 'no JSON log lines');
    assert.doesNotMatch(out, /\b1\d{12}\b/, 'no epoch-ms times');
    assert.doesNotMatch(out, /again|stopping the running attempts now/, 'each worker got one signal, from dev');
    assert.doesNotMatch(out, /\b1 slots\b/);
    assert.match(out, /^\d\d:\d\d:\d\d drover dev: stopping the workers, then the server$/m);
  });

  it(
    '--log-level info: every line of the server and the workers is a human line',
    // The in-process server's lines go through dev's human destination (ServerOptions.logDestination).
    async () => {
      const cwd = join(root, 'info');
      mkdirSync(cwd);
      const dev = await startDev(['--port', '0', '--workers', '1', '--log-level', 'info'], cwd);
      await waitOutput(dev, (o) => /\[w1\] info {2}connected/.test(o) && /worker connected/.test(o), 'the worker\'s and the server\'s connect lines');
      assert.equal((await stopGroup(dev)).code, 0);
      const banner = dev.out().indexOf('Ctrl-C stops everything.\n');
      const lines = dev.out().slice(banner).split('\n').slice(1).filter(Boolean);
      for (const l of lines) assert.match(l, /^\d\d:\d\d:\d\d (\[(w1|server)\] )?(\S+ {1,2})?\S/, l);
      assert.doesNotMatch(dev.out(), /\{"level"/);
    },
  );

  it(
    'a normal shutdown logs no "lost the server connection" warning',
    // The agent's own close() ends the connection: that is not a lost connection (agent.ts onDown).
    async () => {
      const cwd = join(root, 'shutdown');
      mkdirSync(cwd);
      const dev = await startDev(['--port', '0', '--workers', '2'], cwd);
      // Wait until both agents are connected (their connection is what could be reported lost).
      const { token } = JSON.parse(readFileSync(join(cwd, '.drover', 'credentials.json'), 'utf8')) as { token: string };
      const api = new Api(dev.url, token);
      for (;;) {
        const r = await api.req('GET', '/v1/workers');
        if (r.body.workers.filter((w: { state: string }) => w.state === 'connected').length === 2) break;
        await new Promise((res) => setTimeout(res, 50));
      }
      const exit = await stopGroup(dev);
      assert.equal(exit.code, 0);
      assert.doesNotMatch(dev.out(), /lost the server connection/);
      assert.doesNotMatch(dev.out(), /\bwarn\b/);
    },
  );
});
