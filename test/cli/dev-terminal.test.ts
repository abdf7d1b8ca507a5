/**
 * The pure parts of what `drover dev` and `drover worker --log-format human`
 * print: log lines (local HH:MM:SS, fields flattened, epoch-ms `...At` fields
 * as ISO, control characters escaped), level filtering, the task-end line and
 * its durations, the worker-line tag, the banner's plurals and advice, and the
 * undo of a failed start's files. A fixed clock; no processes.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { clockTime, formatLogLine, humanizePinoLine, humanLogger, humanPinoDestination, isLogLevel } from '../../src/cli/human-log.js';
import { formatTaskEnd, shortDuration } from '../../src/cli/dev-task-ends.js';
import { devBanner, type DevBannerFacts } from '../../src/cli/dev-banner.js';
import { tagLine } from '../../src/cli/commands/dev.js';
import { snapshotDir } from '../../src/cli/created-paths.js';
import { plural } from '../../src/cli/plural.js';
import { buildWorkerConfig, defaultLogFormat } from '../../src/cli/commands/worker.js';
import { buildDevConfig } from '../../src/cli/commands/dev.js';
import { UsageError } from '../../src/cli/usage-error.js';

/** 2026-12-01 12:00:01 local time. */
const NOON = new Date(2026, 11, 1, 12, 0, 1).getTime();

describe('human log lines', () => {
  it('local HH:MM:SS, the level, the message, the fields; never epoch ms', () => {
    assert.equal(clockTime(NOON), '12:00:01');
    const at = Date.UTC(2026, 11, 1, 11, 0, 0);
    assert.equal(
      formatLogLine(NOON, 'warn', { reason: 'closed (1000)', attempts: [1, 2], err: new Error('boom'), sentAt: at, n: 5 }, 'lost it'),
      `12:00:01 warn  lost it (reason=closed (1000), attempts=[1,2], err=boom, sentAt=2026-12-01T11:00:00.000Z, n=5)`,
    );
    assert.equal(formatLogLine(NOON, 'info', 'just text'), '12:00:01 info  just text');
  });

  it('escapes control characters from task data and keeps one line', () => {
    assert.equal(formatLogLine(NOON, 'warn', { name: 'a\u001b[2Jb' }, 'x\ny'), '12:00:01 warn  x y (name=a\\x1b[2Jb)');
  });

  it('writes the level and above only', () => {
    const lines: string[] = [];
    const log = humanLogger('warn', (l) => lines.push(l), () => NOON);
    log.debug('d');
    log.info('i');
    log.warn('w');
    log.error({ code: 1 }, 'e');
    assert.deepEqual(lines, ['12:00:01 warn  w\n', '12:00:01 error e (code=1)\n']);
    const none: string[] = [];
    humanLogger('silent', (l) => none.push(l)).error('x');
    assert.deepEqual(none, []);
    assert.equal(isLogLevel('warn'), true);
    assert.equal(isLogLevel('loud'), false);
  });

  it('pino JSON lines (the in-process server\'s) become the same human lines', () => {
    const json = JSON.stringify({ level: 40, time: NOON, pid: 1, hostname: 'h', svc: 'drover-server', attemptId: 7, err: { type: 'Error', message: 'disk full', stack: 'x' }, msg: 'lease expired: attempt lost' });
    assert.equal(humanizePinoLine(json), '12:00:01 warn  lease expired: attempt lost (attemptId=7, err=disk full)');
    assert.equal(humanizePinoLine('not json \u001b'), 'not json \\x1b');
    const lines: string[] = [];
    humanPinoDestination((l) => lines.push(l)).write(`${json}\n${JSON.stringify({ level: 30, time: NOON, msg: 'hi' })}\n`);
    assert.deepEqual(lines, ['12:00:01 warn  lease expired: attempt lost (attemptId=7, err=disk full)', '12:00:01 info  hi']);
  });

  it('a worker\'s line gets its name after the time', () => {
    assert.equal(tagLine('w1', '12:00:01 warn  lost it', NOON), '12:00:01 [w1] warn  lost it');
    assert.equal(tagLine('w1', 'cannot start: ENOENT', NOON), '12:00:01 [w1] cannot start: ENOENT');
  });
});

describe('task-end lines (drover dev --verbose)', () => {
  const base = { id: '01JD0000000000000000000000', name: 'backup', workerId: 'dev-w1', endedAt: NOON, exitCode: 0, signal: null, error: null };
  it('succeeded, failed (with why), cancelled', () => {
    assert.equal(formatTaskEnd({ ...base, state: 'succeeded', durationMs: 1234 }, 0), '12:00:01 task 01JD0000000000000000000000 (backup) succeeded in 1.2s on dev-w1');
    assert.equal(formatTaskEnd({ ...base, state: 'failed', durationMs: 35, exitCode: 3 }, 0), '12:00:01 task 01JD0000000000000000000000 (backup) failed in 35ms on dev-w1: exit code 3');
    assert.equal(formatTaskEnd({ ...base, state: 'failed', durationMs: 30_000, exitCode: null, error: 'timed out after 30 s' }, 0), '12:00:01 task 01JD0000000000000000000000 (backup) failed in 30.0s on dev-w1: timed out after 30 s');
    assert.equal(formatTaskEnd({ ...base, state: 'cancelled', durationMs: null, workerId: null, endedAt: null }, NOON), '12:00:01 task 01JD0000000000000000000000 (backup) cancelled');
  });
  it('a task name cannot put control characters on the terminal', () => {
    assert.match(formatTaskEnd({ ...base, name: 'x\u001b]0;pwned\u0007', state: 'succeeded', durationMs: 1 }, 0), /\(x\\x1b\]0;pwned\\x07\)/);
  });
  it('durations', () => {
    assert.deepEqual([0, 999, 1000, 1999, 59_999, 60_000, 125_000, 3_600_000, 3_720_000].map(shortDuration), ['0ms', '999ms', '1.0s', '1.9s', '59.9s', '1m00s', '2m05s', '1h00m', '1h02m']);
  });
});

describe('the dev banner', () => {
  const facts: DevBannerFacts = {
    url: 'http://127.0.0.1:7070',
    pid: 42,
    dir: '/p/.drover',
    workers: 1,
    slots: 1,
    credentialsPath: '/p/.drover/credentials.json',
    cliFindsCredentials: true,
    token: 'drv_x',
    dashboardLink: 'http://127.0.0.1:7070/sign-in#code=abc',
    cli: 'drover',
    verbose: false,
  };
  it('says what runs where, in the right plural, with the link on its own line', () => {
    const b = devBanner(facts);
    assert.match(b, /1 local worker × 1 slot;/);
    assert.match(devBanner({ ...facts, workers: 2, slots: 4 }), /2 local workers × 4 slots;/);
    assert.match(devBanner({ ...facts, workers: 0 }), /no local workers/);
    assert.match(b, /^Dashboard: http:\/\/127\.0\.0\.1:7070\/sign-in#code=abc$/m);
    assert.match(b, /valid 10 minutes/);
    assert.match(b, /^ {2}drover submit --wait -- echo hello$/m);
    assert.ok(b.split('\n').length <= 14, 'short');
    // Lines fit a 110-column terminal but for the URLs and the token they carry.
    for (const l of b.split('\n')) assert.ok(l.replace(/http\S+|drv_\S+/g, 'U').length <= 110, l);
  });
  it('says how to get an admin token back, and how to use the CLI elsewhere', () => {
    const b = devBanner(facts);
    assert.match(b, /restart drover dev: it replaces a token the server no longer accepts/);
    assert.match(b, /drover token create --name NAME --role admin/);
    assert.match(b, /drover login http:\/\/127\.0\.0\.1:7070 --token drv_x/);
    assert.match(b, /export DROVER_URL=http:\/\/127\.0\.0\.1:7070 DROVER_TOKEN=drv_x/);
    assert.match(devBanner({ ...facts, cliFindsCredentials: false }), /finds it from \/p and below/);
    const npx = devBanner({ ...facts, cli: 'npx drover' });
    assert.match(npx, /^ {2}npx drover ls$/m);
    assert.match(npx, /^Elsewhere: drover login /m);
    assert.match(npx, /npm link --ignore-scripts in the Drover checkout/);
    assert.match(devBanner({ ...facts, cliFindsCredentials: false, dir: '/data/dev' }), /set it up with the Elsewhere line below/);
  });
  it('plural', () => {
    assert.deepEqual([plural(0, 'slot'), plural(1, 'slot'), plural(2, 'slot')], ['0 slots', '1 slot', '2 slots']);
  });
});

describe('undo of a failed start', () => {
  const root = mkdtempSync(join(tmpdir(), 'drover-undo-'));
  after(() => rmSync(root, { recursive: true, force: true }));
  it('removes the directories it had to make, top-most first', () => {
    const dir = join(root, 'a', 'b', 'c');
    const s = snapshotDir(dir);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'drover.db'), '');
    s.undo();
    assert.equal(existsSync(join(root, 'a')), false);
  });
  it('in a directory that existed, removes only what was added', () => {
    const dir = join(root, 'mine');
    mkdirSync(dir);
    writeFileSync(join(dir, 'notes.txt'), 'keep');
    const s = snapshotDir(dir);
    writeFileSync(join(dir, 'drover.db'), '');
    mkdirSync(join(dir, 'work'));
    s.undo();
    assert.deepEqual(readdirSync(dir), ['notes.txt']);
  });
});

describe('log flags', () => {
  const usage = (re: RegExp) => (e: unknown) => e instanceof UsageError && re.test(e.message);
  it('--log-level and --log-format are checked, naming the flag and the choices', () => {
    const base = { server: ['http://a'], logLevel: 'info' };
    assert.throws(() => buildWorkerConfig({ ...base, logLevel: 'loud' }, 't', {}), usage(/^invalid --log-level "loud": expected one of fatal, error, warn, info, debug, trace, silent$/));
    assert.throws(() => buildWorkerConfig({ ...base, logFormat: 'xml' }, 't', {}), usage(/^invalid --log-format "xml": expected human or json$/));
    assert.equal(buildWorkerConfig({ ...base, logFormat: 'human' }, 't', {}).logFormat, 'human');
    assert.equal(buildWorkerConfig({ ...base, logLevel: 'warn' }, 't', {}).logLevel, 'warn');
    assert.throws(() => buildDevConfig({ port: '0', workers: '1', slots: '1', dir: 'd', logLevel: 'chatty' }, '/'), usage(/^invalid --log-level "chatty"/));
  });
  it('a worker logs human lines on a terminal, JSON elsewhere', () => {
    assert.equal(defaultLogFormat(true), 'human');
    assert.equal(defaultLogFormat(false), 'json');
  });
});
