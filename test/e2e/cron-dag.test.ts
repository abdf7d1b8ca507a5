/**
 * A DAG on a cron schedule (issues 11 and 12), against a real server and a
 * real worker, through the CLI:
 *   - `drover cron add NAME --schedule "* * * * * *" --dag etl --param
 *     DAY=monday`: the next second's slot starts a run of the DAG, which
 *     runs to success on the worker (its steps see the parameter); `cron
 *     show` lists the DAG and the run with its state; `cron ls` says what
 *     runs; `cron run` starts a run out of schedule and prints its id;
 *   - bad input exits 2 naming the flag before any request (a command with
 *     --dag, a task flag with --dag, --param without --dag), and the server
 *     refuses a DAG the caller does not have (another user's DAG of that
 *     name included) and parameters the DAG does not declare, naming the
 *     field; nothing is created.
 * Waits poll the API with a deadline; nothing sleeps to let time pass.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { drover, until } from './cli-run.js';
import { startCluster, type Cluster } from './harness.js';

const RUN_ID = /^[0-9A-HJKMNP-TV-Z]{26}$/;
const ETL =
  'name: etl\n' +
  'params:\n  DAY: sunday\n' +
  'steps:\n' +
  '  - name: extract\n    command: sh\n    args: [-c, \'echo "DAY=$DROVER_PARAM_DAY" >> "$DROVER_OUTPUT"\']\n' +
  '  - name: load\n    depends_on: [extract]\n    command: sh\n    args: [-c, \'test "$DROVER_OUT_EXTRACT_DAY" = "$DROVER_PARAM_DAY"\']\n';

describe('e2e: a DAG on a cron schedule', () => {
  let c: Cluster;
  let dir: string;
  before(async () => {
    c = await startCluster({ workers: 1, slots: 4 });
    dir = mkdtempSync(join(tmpdir(), 'drover-cron-dag-'));
    writeFileSync(join(dir, 'etl.yaml'), ETL);
    const applied = await drover(c, ['dag', 'apply', 'etl.yaml'], { cwd: dir });
    assert.equal(applied.code, 0, applied.stderr);
  });
  after(async () => {
    await c?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('each slot starts a run of the DAG, which runs to success with the schedule\'s parameters; show, ls and run know it', { timeout: 60_000 }, async () => {
    const add = await drover(c, ['cron', 'add', 'nightly-etl', '--schedule', '* * * * * *', '--overlap', 'forbid', '--dag', 'etl', '--param', 'DAY=monday', '--json']);
    assert.equal(add.code, 0, add.stderr);
    const s = JSON.parse(add.stdout);
    assert.equal(s.task, null);
    assert.deepEqual(s.dag, { name: 'etl', params: { DAY: 'monday' } });

    const run = await until('a scheduled run that succeeded', async () => {
      const runs = (await c.api.req('GET', '/v1/dag-runs?limit=50')).body.runs as any[];
      return runs.find((r) => r.scheduleId === s.id && r.state === 'succeeded');
    });
    assert.ok(run.scheduledAt, 'a slot\'s run carries its slot');
    assert.equal(Date.parse(run.scheduledAt) % 1000, 0);
    assert.deepEqual(run.params, { DAY: 'monday' });
    const pause = await drover(c, ['cron', 'pause', 'nightly-etl']);
    assert.equal(pause.code, 0, pause.stderr);

    const detail = (await c.api.req('GET', `/v1/dag-runs/${run.id}`)).body;
    assert.deepEqual(detail.steps.map((x: any) => [x.name, x.state]), [['extract', 'succeeded'], ['load', 'succeeded']]);

    const show = await drover(c, ['cron', 'show', 'nightly-etl']);
    assert.equal(show.code, 0, show.stderr);
    assert.match(show.stdout, /^dag: +etl \(its newest version at each run\)$/m);
    assert.match(show.stdout, /^params: +DAY=monday$/m);
    assert.match(show.stdout, /SLOT +OUTCOME +DAG RUN +STATE/);
    assert.ok(show.stdout.includes(run.id), show.stdout);
    const api = (await c.api.req('GET', '/v1/schedules/nightly-etl')).body;
    const rec = api.runs.find((r: any) => r.dagRunId === run.id);
    assert.deepEqual([rec.outcome, rec.taskId, rec.dagRunState], ['fired', null, 'succeeded']);

    const ls = await drover(c, ['cron', 'ls']);
    assert.match(ls.stdout, /nightly-etl .*dag etl/);

    const now = await drover(c, ['cron', 'run', 'nightly-etl']);
    assert.equal(now.code, 0, now.stderr);
    const runId = now.stdout.trim();
    assert.match(runId, RUN_ID);
    assert.match(now.stderr, /drover dag status/);
    const manual = (await c.api.req('GET', `/v1/dag-runs/${runId}`)).body.run;
    assert.deepEqual([manual.scheduleId, manual.scheduledAt, manual.dag], [s.id, null, 'etl']);
  });

  it('bad input is refused, naming the flag or field, and creates nothing', { timeout: 60_000 }, async () => {
    const usage: Array<[string[], RegExp]> = [
      [['cron', 'add', 'x', '--schedule', '@daily', '--dag', 'etl', '--', 'echo', 'hi'], /--dag etl runs the DAG's steps; remove the command after --/],
      [['cron', 'add', 'x', '--schedule', '@daily', '--dag', 'etl', '--retries', '2'], /--retries is a task setting; with --dag/],
      [['cron', 'add', 'x', '--schedule', '@daily', '--param', 'A=1', '--', 'true'], /--param is a DAG run parameter; use it with --dag NAME/],
      [['cron', 'add', 'x', '--schedule', '@daily', '--dag', 'no/such'], /invalid --dag "no\/such"/],
      [['cron', 'add', 'x', '--schedule', '@daily', '--dag', 'etl', '--param', '1A=1'], /invalid --param "1A=1"/],
    ];
    for (const [args, msg] of usage) {
      const r = await drover(c, args);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, msg);
    }
    const missing = await drover(c, ['cron', 'add', 'x', '--schedule', '@daily', '--dag', 'nope']);
    assert.notEqual(missing.code, 0);
    assert.match(missing.stderr, /dag\.name.*no DAG named "nope"/);
    const undeclared = await drover(c, ['cron', 'add', 'x', '--schedule', '@daily', '--dag', 'etl', '--param', 'DATE=1']);
    assert.notEqual(undeclared.code, 0);
    assert.match(undeclared.stderr, /dag\.params\.DATE/);

    // Another user has no DAG named etl: the admin's is not theirs to schedule.
    const bob = (await c.api.req('POST', '/v1/tokens', { name: 'bob', role: 'user' })).body.secret;
    const asBob = await c.api.req('POST', '/v1/schedules', { name: 'steal', schedule: '@daily', dag: { name: 'etl' } }, bob);
    assert.equal(asBob.status, 400, asBob.text);
    assert.equal(asBob.body.error.field, 'dag.name');
    const both = await c.api.req('POST', '/v1/schedules', { name: 'both', schedule: '@daily', dag: { name: 'etl' }, task: { command: 'true' } });
    assert.equal(both.status, 400);
    assert.equal(both.body.error.field, 'dag');
    const neither = await c.api.req('POST', '/v1/schedules', { name: 'neither', schedule: '@daily' });
    assert.equal(neither.status, 400);
    assert.equal(neither.body.error.field, 'task');
    const extra = await c.api.req('POST', '/v1/schedules', { name: 'extra', schedule: '@daily', dag: { name: 'etl', version: 1 } });
    assert.equal(extra.status, 400, 'an unknown field of dag is refused');

    const names = ((await c.api.req('GET', '/v1/schedules')).body.schedules as any[]).map((x) => x.name);
    assert.deepEqual(names.filter((n) => n !== 'nightly-etl'), []);

    // A DAG schedule's parameter values go only to its owner: an admin reading carol's sees the keys with "" values.
    const carol = (await c.api.req('POST', '/v1/tokens', { name: 'carol', role: 'user' })).body.secret;
    const applied = await c.api.req('POST', '/v1/dags', { name: 'carols', steps: [{ name: 'only', command: 'true' }] }, carol);
    assert.equal(applied.status, 201, applied.text);
    const made = await c.api.req('POST', '/v1/schedules', { name: 'secretive', schedule: '@daily', dag: { name: 'carols', params: { TOKEN: 'hunter2' } } }, carol);
    assert.equal(made.status, 201, made.text);
    assert.deepEqual(made.body.schedule.dag, { name: 'carols', params: { TOKEN: 'hunter2' } });
    const asAdmin = await c.api.req('GET', '/v1/schedules/secretive?owner=carol');
    assert.equal(asAdmin.status, 200, asAdmin.text);
    assert.deepEqual(asAdmin.body.schedule.dag, { name: 'carols', params: { TOKEN: '' } });
    assert.ok(!asAdmin.text.includes('hunter2'));
    assert.equal((await c.api.req('GET', '/v1/schedules/secretive', undefined, bob)).status, 404, 'another user does not see it');
    assert.deepEqual(((await c.api.req('GET', '/v1/schedules', undefined, bob)).body.schedules as any[]), []);
    await c.api.req('DELETE', '/v1/schedules/secretive?owner=carol');
  });
});
