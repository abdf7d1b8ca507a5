/**
 * `drover cron` through the real CLI: `cron next` computed locally (no
 * server: it runs with a URL nobody listens on), every flag checked before
 * any request (exit 2, the flag named), and add / ls / show / pause / resume
 * / run / rm plus `drover ls --schedule` against a real server.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { catchupLines } from '../../src/cli/commands/cron-output.js';
import { parseSchedule } from '../../src/core/cron/schedule.js';
import { newTaskId } from '../../src/core/ids.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { startCluster, type Cluster } from '../e2e/harness.js';
import { makeSpec } from '../store/contract.js';
import { runCli } from './fake-api.js';

/** Nothing listens here: a command that reached the network would fail with exit 1, not 2. */
const NOWHERE = { DROVER_URL: 'http://127.0.0.1:9', DROVER_TOKEN: 'tok' };

describe('drover cron next (local, no server)', () => {
  it('prints UTC and wall-clock times; a time in the skipped hour runs once right after the jump', async () => {
    const r = await runCli(['cron', 'next', '30 2 * * *', '--tz', 'America/New_York', '--from', '2026-03-07T12:00:00Z', '--count', '3'], { env: NOWHERE });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(
      r.stdout,
      '2026-03-08T07:00:00Z  2026-03-08 03:00:00 EDT\n' + '2026-03-09T06:30:00Z  2026-03-09 02:30:00 EDT\n' + '2026-03-10T06:30:00Z  2026-03-10 02:30:00 EDT\n',
    );
  });

  it('--json, seconds field, default count 5', async () => {
    const r = await runCli(['cron', 'next', '*/20 * * * * *', '--from', '2026-01-01T00:00:05Z', '--json'], { env: NOWHERE });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), {
      schedule: '*/20 * * * * *',
      tz: 'UTC',
      next: ['2026-01-01T00:00:20.000Z', '2026-01-01T00:00:40.000Z', '2026-01-01T00:01:00.000Z', '2026-01-01T00:01:20.000Z', '2026-01-01T00:01:40.000Z'],
    });
  });

  it('rejects bad input naming the flag, exit 2', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['cron', 'next', '61 * * * *'], /invalid expression: "61 \* \* \* \*": minute 61/],
      [['cron', 'next', '* * * * *', '--tz', 'Nowhere/Land'], /invalid --tz: unknown time zone 'Nowhere\/Land'/],
      [['cron', 'next', '* * * * *', '--from', 'tomorrow'], /invalid --from "tomorrow"/],
      [['cron', 'next', '* * * * *', '--from', '2026-01-01T00:00'], /invalid --from .*with a zone/],
      [['cron', 'next', '* * * * *', '--count', '0'], /invalid --count "0": expected an integer 1\.\.1000/],
      [['cron', 'next', '* * * * *', '--count', '1001'], /invalid --count/],
    ];
    for (const [args, msg] of cases) {
      const r = await runCli(args, { env: NOWHERE });
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, msg);
      assert.equal(r.stdout, '');
    }
  });
});

describe('drover cron against a server', () => {
  let c: Cluster;
  let dir: string;
  let env: Record<string, string>;
  before(async () => {
    c = await startCluster({ workers: 0 });
    dir = mkdtempSync(join(tmpdir(), 'drover-cron-cli-'));
    env = { DROVER_URL: c.url, DROVER_TOKEN: c.api.token };
  });
  after(async () => {
    await c?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('add validates every flag before any request (exit 2, flag named)', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['nightly', '--schedule', '0 0 31 2 *', '--', 'true'], /invalid --schedule: "0 0 31 2 \*": never fires/],
      [['nightly', '--schedule', '* * *', '--', 'true'], /invalid --schedule/],
      [['nightly', '--schedule', '@daily', '--tz', '+01:00', '--', 'true'], /invalid --tz/],
      [['nightly', '--schedule', '@daily', '--overlap', 'maybe', '--', 'true'], /invalid --overlap "maybe": expected one of allow, forbid, replace/],
      [['nightly', '--schedule', '@daily', '--catchup', 'every', '--', 'true'], /invalid --catchup "every": expected one of none, latest, all/],
      [['nightly', '--schedule', '@daily', '--max-catchup', '0', '--', 'true'], /invalid --max-catchup "0": expected an integer 1\.\.1000/],
      [['nightly', '--schedule', '@daily', '--max-catchup', '5', '--', 'true'], /--max-catchup caps --catchup all; give --catchup all with it/],
      [['nightly', '--schedule', '@daily', '--catchup', 'latest', '--max-catchup', '5', '--', 'true'], /--max-catchup caps --catchup all/],
      [['nightly', '--schedule', '@daily', '--task-name', '', '--', 'true'], /invalid --task-name "": expected 1\.\.200 characters/],
      [['nightly', '--schedule', '@daily', '--script', '/dev/null'], /invalid --script "\/dev\/null": the script is empty/],
      [['nightly', '--schedule', '@daily', '--retries', '-1', '--', 'true'], /invalid --retries/],
      [['nightly', '--schedule', '@daily', '--timeout', 'soon', '--', 'true'], /invalid --timeout "soon"/],
      [['nightly', '--schedule', '@daily', '--env', 'NOEQUALS', '--', 'true'], /invalid --env "NOEQUALS"/],
      [['bad/name', '--schedule', '@daily', '--', 'true'], /invalid schedule name "bad\/name"/],
      [['nightly', '--schedule', '@daily'], /missing command: drover cron add nightly --schedule EXPR -- CMD/],
      [['nightly', '--', 'true'], /--schedule/],
    ];
    for (const [args, msg] of cases) {
      const r = await runCli(['cron', 'add', ...args], { env });
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, msg, args.join(' '));
    }
    for (const sub of ['show', 'pause', 'resume', 'rm', 'run']) {
      const r = await runCli(['cron', sub, 'a b'], { env });
      assert.equal(r.code, 2, `${sub}: ${r.stderr}`);
      assert.match(r.stderr, /invalid schedule name "a b"/);
    }
    const ls = await runCli(['ls', '--schedule', 'no/such'], { env });
    assert.equal(ls.code, 2);
    assert.match(ls.stderr, /invalid --schedule "no\/such"/);
    assert.deepEqual((await c.api.req('GET', '/v1/schedules')).body.schedules, [], 'nothing was created');
  });

  it('add, ls, show, pause, resume, run, ls --schedule, rm', async () => {
    const script = join(dir, 'backup.sh');
    writeFileSync(script, 'echo backing up\n');
    const add = await runCli(['cron', 'add', 'backup', '--schedule', '0 3 * * *', '--tz', 'Europe/Berlin', '--overlap', 'forbid', '--catchup', 'all', '--max-catchup', '4', '--retries', '1', '--timeout', '10m', '--env', 'TARGET=s3', '--script', script], { env });
    assert.equal(add.code, 0, add.stderr);
    assert.equal(add.stdout, 'backup\n');
    assert.match(add.stderr, /created schedule backup \(0 3 \* \* \*, Europe\/Berlin\); next run 20\d\d-/);
    const add2 = await runCli(['cron', 'add', 'ping', '--schedule', '*/10 * * * * *', '--json', '--', 'echo', 'pong'], { env });
    assert.equal(add2.code, 0, add2.stderr);
    const ping = JSON.parse(add2.stdout);
    assert.deepEqual([ping.name, ping.task.command, ping.task.args, ping.catchup, ping.overlap], ['ping', 'echo', ['pong'], 'latest', 'allow']);
    const dup = await runCli(['cron', 'add', 'ping', '--schedule', '@daily', '--', 'true'], { env });
    assert.equal(dup.code, 1);
    assert.match(dup.stderr, /schedule "ping" already exists/);

    const s = (await c.api.req('GET', '/v1/schedules/backup')).body.schedule;
    assert.deepEqual([s.overlap, s.catchup, s.maxCatchup, s.task.retry.maxRetries, s.task.timeoutMs, s.task.env, s.task.script, s.task.name], ['forbid', 'all', 4, 1, 600_000, { TARGET: 's3' }, 'echo backing up\n', 'backup']);

    const ls = await runCli(['cron', 'ls'], { env });
    assert.equal(ls.code, 0, ls.stderr);
    const lines = ls.stdout.trimEnd().split('\n');
    assert.match(lines[0]!, /^NAME\s+OWNER\s+SCHEDULE\s+TZ\s+RUNS\s+NEXT\s+LAST SLOT\s+OVERLAP\s+CATCHUP\s+STATE$/);
    assert.match(lines[1]!, /^backup\s+admin\s+0 3 \* \* \*\s+Europe\/Berlin\s+script\s+20\S+Z\s+-\s+forbid\s+all \(max 4\)\s+active$/);
    assert.match(lines[2]!, /^ping\s+admin\s+\*\/10 \* \* \* \* \*\s+UTC\s/);

    const show = await runCli(['cron', 'show', 'backup'], { env });
    assert.equal(show.code, 0, show.stderr);
    assert.match(show.stdout, /^schedule: +0 3 \* \* \* \(Europe\/Berlin\)$/m);
    assert.match(show.stdout, /^env: +TARGET$/m);
    const next = show.stdout.split('\nNEXT\n')[1]!.split('\n\n')[0]!.split('\n');
    assert.equal(next.length, 5);
    for (const l of next) assert.match(l, /^20\d\d-\d\d-\d\dT0[12]:00:00Z {2}20\d\d-\d\d-\d\d 03:00:00 GMT\+[12]$/);
    assert.match(show.stdout, /\nRECENT RUNS\n\(none\)\n$/);

    const pause = await runCli(['cron', 'pause', 'backup'], { env });
    assert.deepEqual([pause.code, pause.stdout], [0, 'paused backup\n']);
    assert.match((await runCli(['cron', 'ls'], { env })).stdout, /^backup .* paused$/m);
    assert.match((await runCli(['cron', 'show', 'backup'], { env })).stdout, /\nNEXT \(if resumed\)\n/);
    const resume = await runCli(['cron', 'resume', 'backup'], { env });
    assert.equal(resume.code, 0, resume.stderr);
    assert.match(resume.stdout, /^resumed backup; next run 20\S+Z\n$/);

    const run = await runCli(['cron', 'run', 'backup'], { env });
    assert.equal(run.code, 0, run.stderr);
    const taskId = run.stdout.trim();
    assert.match(taskId, /^[0-9A-Z]{26}$/);
    const runs = await runCli(['ls', '--schedule', 'backup', '--json'], { env });
    assert.equal(runs.code, 0, runs.stderr);
    assert.deepEqual(JSON.parse(runs.stdout).tasks.map((t: any) => t.id), [taskId]);
    const none = await runCli(['ls', '--schedule', 'nope'], { env });
    assert.equal(none.code, 1);
    assert.match(none.stderr, /schedule nope not found/);

    const rm = await runCli(['cron', 'rm', 'backup'], { env });
    assert.deepEqual([rm.code, rm.stdout], [0, 'removed backup\n']);
    const gone = await runCli(['cron', 'show', 'backup'], { env });
    assert.equal(gone.code, 1);
    assert.match(gone.stderr, /schedule backup not found/);
    assert.equal((await c.api.req('GET', `/v1/tasks/${taskId}`)).status, 200, 'its task stays');
  });

  it('unknown or missing subcommand is a usage error', async () => {
    const a = await runCli(['cron'], { env });
    assert.equal(a.code, 2);
    assert.match(a.stderr, /missing subcommand: drover cron add\|ls\|show/);
    const b = await runCli(['cron', 'list'], { env });
    assert.equal(b.code, 2);
    assert.match(b.stderr, /unknown subcommand "cron list"/);
  });

  it('a capped catch-up is stored with its count: the API returns it on the first and last dropped slot, `cron show` prints a warning', async () => {
    // A per-second schedule created 20 s ago (through a second connection to the server's file) with
    // catch-up all, at most 2: the server's next tick finds ~15 missed slots, runs the newest 2, drops the rest.
    const store = openSqliteStore(join(c.dir, 'drover.db'));
    let name = '';
    try {
      const sched = parseSchedule({ expr: '* * * * * *' });
      const created = Math.floor(Date.now() / 1000) * 1000 - 20_000;
      name = 'capped';
      await store.createSchedule(newTaskId(created), 'admin', { name, expr: sched.expr, tz: sched.tz, overlap: 'allow', catchup: 'all', maxCatchup: 2, template: makeSpec({ name, command: 'true', args: [] }) }, created, created + 1000);
    } finally {
      await store.close();
    }
    let runs: any[] = [];
    const deadline = Date.now() + 15_000;
    while (!(runs = (await c.api.req('GET', `/v1/schedules/${name}`)).body.runs).some((r: any) => r.reason === 'catchup_capped')) {
      assert.ok(Date.now() < deadline, 'the server fired the schedule');
      await new Promise((r) => setTimeout(r, 100));
    }
    await c.api.req('POST', `/v1/schedules/${name}/pause`);
    runs = (await c.api.req('GET', `/v1/schedules/${name}`)).body.runs;
    const capped = runs.filter((r: any) => r.reason === 'catchup_capped');
    assert.equal(capped.length, 2, JSON.stringify(runs));
    const [last, first] = capped;
    const dropped = (Date.parse(last.slotAt) - Date.parse(first.slotAt)) / 1000 + 1;
    assert.ok(dropped >= 5, `${dropped} slots dropped`);
    for (const r of capped) {
      assert.deepEqual(r.catchup, { skipped: dropped, exact: true });
      assert.deepEqual([r.outcome, r.taskId, r.latenessMs], ['skipped', null, null]);
    }
    for (const r of runs.filter((x: any) => x.reason !== 'catchup_capped')) assert.equal(r.catchup, null);
    const show = await runCli(['cron', 'show', name], { env });
    assert.equal(show.code, 0, show.stderr);
    const span = `${first.slotAt.replace('.000Z', 'Z')} … ${last.slotAt.replace('.000Z', 'Z')}`;
    assert.ok(show.stdout.includes(`\nwarning: catch-up capped: ${dropped} missed runs dropped (${span}); only the newest --max-catchup ran\n`), show.stdout);
  });
});

describe('cron show: catch-up lines', () => {
  const run = (slotAt: string, reason: string | null, catchup: { skipped: number; exact: boolean } | null) =>
    ({ slotAt, outcome: reason ? 'skipped' : 'fired', reason, taskId: null, taskState: null, dagRunId: null, dagRunState: null, latenessMs: null, catchup }) as const;
  it('pairs a catch-up\'s first and last record, newest first, with thousands separators and lower bounds', () => {
    const lines = catchupLines([
      run('2026-01-02T00:00:05.000Z', null, null),
      run('2026-01-02T00:00:04.000Z', 'catchup_capped', { skipped: 1234, exact: true }),
      run('2026-01-01T23:40:00.000Z', 'catchup_capped', { skipped: 1234, exact: true }),
      run('2026-01-01T12:00:00.000Z', 'overlap_forbid', null),
      run('2026-01-01T11:00:00.000Z', 'catchup_none', { skipped: 1, exact: true }),
      run('2026-01-01T10:00:00.000Z', 'catchup_latest', { skipped: 2001, exact: false }),
    ]);
    assert.deepEqual(lines, [
      'warning: catch-up capped: 1,234 missed runs dropped (2026-01-01T23:40:00Z … 2026-01-02T00:00:04Z); only the newest --max-catchup ran',
      'missed: 1 run skipped by --catchup none (2026-01-01T11:00:00Z)',
      'missed: at least 2,001 runs skipped by --catchup latest, which ran the newest one (… 2026-01-01T10:00:00Z)',
    ]);
    assert.deepEqual(catchupLines([run('2026-01-01T10:00:00.000Z', null, null)]), []);
  });
});
