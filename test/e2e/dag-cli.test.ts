/**
 * DAG workflows through the CLI (issue 12), against a real server and a real
 * worker with 4 slots:
 *   - a diamond A → (B, C) → D: the order (B and C start after A ends, D
 *     after both), B and C running at the same time (each waits for the
 *     other's marker file, so they can only finish if they overlap), D seeing
 *     the outputs of B and C (DROVER_OUT_B_X in its log), `dag status
 *     --critical-path`;
 *   - a failing branch with a `when: failure` cleanup step and a skipped
 *     dependent, the run failed; `drover ls --state skipped`, `drover show` of
 *     the skipped step; the cause fixed, `drover dag retry RUN --wait`
 *     succeeds and the steps that had succeeded did not run again;
 *   - `drover dag cancel` of a running run: its running step's task ends
 *     cancelled and its process is gone.
 * Waits poll the API with a deadline; nothing sleeps to let time pass.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { drover, until, type CliRun as Run } from './cli-run.js';
import { alive, startCluster, type Cluster } from './harness.js';

const RUN_ID = /^[0-9A-HJKMNP-TV-Z]{26}$/;

describe('e2e: DAG workflows through the CLI', () => {
  let c: Cluster;
  let dir: string;
  before(async () => {
    c = await startCluster({ workers: 1, slots: 4 });
    dir = mkdtempSync(join(tmpdir(), 'drover-dag-e2e-'));
  });
  after(async () => {
    await c?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function detail(runId: string) {
    const r = await c.api.req('GET', `/v1/dag-runs/${runId}`);
    assert.equal(r.status, 200, r.text);
    return r.body as { run: any; steps: any[]; criticalPath: string[]; counts: Record<string, number> };
  }
  const stepOf = (d: { steps: any[] }, name: string) => d.steps.find((s) => s.name === name)!;
  const ms = (iso: string) => Date.parse(iso);

  it('a diamond: order, B and C in parallel, D sees their outputs, the critical path', { timeout: 90_000 }, async () => {
    // B and C each wait for the other's marker: both finish only if they ran at the same time.
    const meet = (me: string, other: string) =>
      `touch ${dir}/${me}.started\n` +
      `for i in $(seq 400); do [ -f ${dir}/${other}.started ] && break; sleep 0.05; done\n` +
      `[ -f ${dir}/${other}.started ] || { echo "${other} never started while ${me} ran" >&2; exit 9; }\n`;
    const yaml =
      'name: diamond\n' +
      'description: A fans out to B and C; D joins them\n' +
      'steps:\n' +
      '  - name: A\n' +
      '    command: sh\n' +
      `    args: [-c, 'echo SEED=42 >> "$DROVER_OUTPUT"']\n` +
      '  - name: B\n' +
      '    depends_on: [A]\n' +
      '    retries: 0\n' +
      '    timeout: 60s\n' +
      '    script: |\n' +
      meet('b', 'c').replace(/^(?=.)/gm, '      ') +
      '      echo "X=b-$DROVER_OUT_A_SEED" >> "$DROVER_OUTPUT"\n' +
      '  - name: C\n' +
      '    depends_on: [A]\n' +
      '    retries: 0\n' +
      '    script: |\n' +
      meet('c', 'b').replace(/^(?=.)/gm, '      ') +
      '      echo "Y=c" >> "$DROVER_OUTPUT"\n' +
      '  - name: D\n' +
      '    depends_on: [B, C]\n' +
      '    script: echo "D sees $DROVER_OUT_B_X and $DROVER_OUT_C_Y in run $DROVER_DAG_RUN"\n';
    writeFileSync(join(dir, 'diamond.yaml'), yaml);

    const apply = await drover(c, ['dag', 'apply', 'diamond.yaml'], { cwd: dir });
    assert.equal(apply.code, 0, apply.stderr);
    assert.equal(apply.stdout, 'applied DAG diamond version 1 (4 steps)\n');
    const again = await drover(c, ['dag', 'apply', 'diamond.yaml'], { cwd: dir });
    assert.equal(again.stdout, 'DAG diamond unchanged (version 1)\n');

    const run = await drover(c, ['dag', 'run', 'diamond', '--wait'], { cwd: dir });
    assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
    const lines = run.stdout.trim().split('\n');
    const runId = lines[0]!;
    assert.match(runId, RUN_ID);
    assert.match(lines.at(-1)!, new RegExp(`^run ${runId} succeeded in \\S+: 4 succeeded$`));
    // The progress lines, in the order things happened.
    const at = (re: RegExp) => {
      const i = lines.findIndex((l) => re.test(l));
      assert.ok(i > 0, `${re} in\n${run.stdout}`);
      return i;
    };
    const aDone = at(/^\+\S+ +A +succeeded in /);
    for (const s of ['B', 'C']) assert.ok(at(new RegExp(`^\\+\\S+ +${s} +running \\(task [0-9A-Z]{26}\\)$`)) > aDone, `${s} starts after A ends`);
    const dStart = at(/^\+\S+ +D +running /);
    assert.ok(dStart > at(/^\+\S+ +B +succeeded/) && dStart > at(/^\+\S+ +C +succeeded/), 'D starts after B and C end');

    // The same order in the stored times; B and C overlap.
    const d = await detail(runId);
    assert.equal(d.run.state, 'succeeded');
    const [A, B, C, D] = ['A', 'B', 'C', 'D'].map((n) => stepOf(d, n));
    for (const s of [B, C]) assert.ok(ms(s.startedAt) >= ms(A.endedAt), `${s.name} started ${s.startedAt}, A ended ${A.endedAt}`);
    assert.ok(ms(D.startedAt) >= Math.max(ms(B.endedAt), ms(C.endedAt)), 'D after both');
    assert.ok(ms(B.startedAt) < ms(C.endedAt) && ms(C.startedAt) < ms(B.endedAt), `B ${B.startedAt}..${B.endedAt} overlaps C ${C.startedAt}..${C.endedAt}`);
    assert.deepEqual([A.outputs, B.outputs, C.outputs], [{ SEED: '42' }, { X: 'b-42' }, { Y: 'c' }]);

    // D saw B's and C's outputs (and its run) in its environment.
    const logs = await drover(c, ['logs', D.taskId]);
    assert.equal(logs.stdout, `D sees b-42 and c in run ${runId}\n`);

    // dag status (by a prefix of the run id) with the critical path: A, then B or C (whichever ended last), then D.
    const status = await drover(c, ['dag', 'status', runId.slice(0, 8).toLowerCase(), '--critical-path', '--wide']);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, new RegExp(`^run: +${runId}$`, 'm'));
    assert.match(status.stdout, /^state: +succeeded$/m);
    assert.match(status.stdout, /^steps: +4 \(4 succeeded\)$/m);
    for (const s of [A, B, C, D]) assert.match(status.stdout, new RegExp(`^${s.name} +succeeded +${s.taskId} +1 +\\+\\S+ +\\S+$`, 'm'));
    assert.match(status.stdout, /^OUTPUTS\nA {2}SEED=42\nB {2}X=b-42\nC {2}Y=c$/m);
    const cp = status.stdout.slice(status.stdout.indexOf('CRITICAL PATH'));
    assert.match(cp, /^CRITICAL PATH \(the run took \S+\)\nSTEP +DURATION +SHARE +STATE\n/);
    assert.deepEqual(d.criticalPath.length, 3);
    assert.equal(d.criticalPath[0], 'A');
    assert.equal(d.criticalPath[2], 'D');
    const rows = cp.split('\n').slice(2, 5);
    assert.deepEqual(rows.map((r) => r.split(/ +/)[0]), d.criticalPath);
    for (const r of rows) assert.match(r, /^\S+ +\S+ +\d+% +succeeded$/);
    assert.match(cp, /\(in the steps: \S+, \d+%; before and between them: \S+, \d+%\)\n$/);

    // dag runs and dag show list it.
    const runs = await drover(c, ['dag', 'runs', 'diamond', '--wide']);
    assert.match(runs.stdout, new RegExp(`^${runId} +succeeded +\\S+ +\\S+ +4/4 +1$`, 'm'));
    const show = await drover(c, ['dag', 'show', 'diamond', '--wide']);
    assert.match(show.stdout, /^D +B,C +success +3 +- +script via sh: echo "D sees/m);
    assert.match(show.stdout, new RegExp(`^RECENT RUNS\\nRUN .*\\n${runId} +succeeded`, 'm'));
    const ls = await drover(c, ['dag', 'ls']);
    assert.match(ls.stdout, /^diamond +1 +4 +admin /m);
  });

  it('a failing branch: the cleanup step runs, its dependent is skipped, the run fails; fixed and retried, only what failed runs again', { timeout: 90_000 }, async () => {
    const fixed = join(dir, 'fixed');
    writeFileSync(
      join(dir, 'branchy.yaml'),
      'name: branchy\n' +
        'steps:\n' +
        '  - name: start\n' +
        '    command: "true"\n' +
        '  - name: flaky\n' +
        '    depends_on: [start]\n' +
        '    retries: 0\n' +
        '    command: cat\n' +
        `    args: [${fixed}]\n` +
        '  - name: after\n' +
        '    depends_on: [flaky]\n' +
        '    command: "true"\n' +
        '  - name: side\n' +
        '    depends_on: [start]\n' +
        '    command: "true"\n' +
        '  - name: cleanup\n' +
        '    depends_on: [flaky]\n' +
        '    when: failure\n' +
        '    script: echo cleaning up\n',
    );
    assert.equal((await drover(c, ['dag', 'apply', 'branchy.yaml'], { cwd: dir })).code, 0);
    const run = await drover(c, ['dag', 'run', 'branchy', '--wait']);
    assert.equal(run.code, 1, run.stdout);
    const runId = run.stdout.split('\n')[0]!;
    assert.match(run.stdout, /^\+\S+ +flaky +failed \(exit 1\) after 1 attempt$/m);
    assert.match(run.stdout, /^\+\S+ +after +skipped \(upstream_failed\)$/m);
    assert.match(run.stdout, /^\+\S+ +cleanup +succeeded in /m);
    assert.match(run.stdout, new RegExp(`^run ${runId} failed in \\S+: `, 'm'));
    assert.equal(run.stderr, `drover: DAG run ${runId} failed: flaky failed (exit 1)\n`);

    const d = await detail(runId);
    assert.equal(d.run.state, 'failed');
    const states = Object.fromEntries(d.steps.map((s) => [s.name, s.skipReason ? `${s.state}:${s.skipReason}` : s.state]));
    assert.deepEqual(states, { start: 'succeeded', flaky: 'failed', after: 'skipped:upstream_failed', side: 'succeeded', cleanup: 'succeeded' });

    // The skipped step in `drover ls --state skipped` and `drover show`.
    const skippedTask = stepOf(d, 'after').taskId;
    const ls = await drover(c, ['ls', '--state', 'skipped', '--wide']);
    assert.equal(ls.code, 0, ls.stderr);
    assert.match(ls.stdout, new RegExp(`^${skippedTask} +branchy/after +skipped `, 'm'));
    const show = await drover(c, ['show', skippedTask]);
    assert.match(show.stdout, new RegExp(`^dag run: +${runId}, step after$`, 'm'));
    assert.match(show.stdout, /^skipped: +upstream_failed: a step it depends on failed or was cancelled$/m);
    const status = await drover(c, ['dag', 'status', runId]);
    assert.match(status.stdout, /^SKIPPED\nafter {2}upstream_failed: /m);

    // A retry of one step's task is refused: the run is retried instead.
    const one = await drover(c, ['retry', stepOf(d, 'flaky').taskId]);
    assert.equal(one.code, 1);
    assert.match(one.stderr, /retry the run instead \(drover dag retry /);

    writeFileSync(fixed, 'now it is there\n');
    const retry = await drover(c, ['dag', 'retry', runId.slice(0, 10), '--wait']);
    assert.equal(retry.code, 0, `${retry.stdout}\n${retry.stderr}`);
    assert.match(retry.stdout, new RegExp(`^run ${runId} running again$`, 'm'));
    assert.match(retry.stdout, /^\+\S+ +flaky +running \(attempt 2, task /m);
    assert.match(retry.stdout, /^\+\S+ +after +succeeded in /m);
    assert.doesNotMatch(retry.stdout, / (start|side|cleanup) /, 'steps kept from before are not news');
    const r = await detail(runId);
    assert.equal(r.run.state, 'succeeded');
    const attempts = Object.fromEntries(r.steps.map((s) => [s.name, `${s.state}/${s.attempts}`]));
    assert.deepEqual(attempts, { start: 'succeeded/1', side: 'succeeded/1', cleanup: 'succeeded/1', flaky: 'succeeded/2', after: 'succeeded/1' });
    for (const s of ['start', 'side', 'cleanup']) assert.equal(stepOf(r, s).endedAt, stepOf(d, s).endedAt, `${s} did not run again`);
    const runs = await drover(c, ['dag', 'runs', 'branchy', '--wide']);
    assert.match(runs.stdout, new RegExp(`^${runId} +succeeded +\\S+ +\\S+ +5/5 +1$`, 'm'));
  });

  it('dag cancel of a running run stops its running step\'s process and cancels the rest', { timeout: 60_000 }, async () => {
    const pidFile = join(dir, 'nap.pid');
    writeFileSync(
      join(dir, 'sleepy.yaml'),
      'name: sleepy\nsteps:\n  - name: nap\n    script: |\n' + `      echo $$ > ${pidFile}.tmp && mv ${pidFile}.tmp ${pidFile}\n` + '      exec sleep 300\n  - name: wake\n    depends_on: [nap]\n    command: "true"\n',
    );
    assert.equal((await drover(c, ['dag', 'apply', 'sleepy.yaml'], { cwd: dir })).code, 0);
    const started = await drover(c, ['dag', 'run', 'sleepy']);
    assert.equal(started.code, 0, started.stderr);
    const runId = started.stdout.trim();
    assert.match(runId, RUN_ID);
    const pid = await until('the step\'s process', () => (existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8')) : undefined));
    assert.ok(alive(pid));
    const nap = stepOf(await detail(runId), 'nap');
    assert.equal(nap.state, 'running');

    const cancel = await drover(c, ['dag', 'cancel', runId.slice(0, 12)]);
    assert.equal(cancel.code, 0, cancel.stderr);
    assert.equal(cancel.stdout, `run ${runId} cancelled\n`);
    await until('the step\'s task cancelled', async () => ((await c.api.task(nap.taskId)).task.state === 'cancelled' ? true : undefined));
    await until(`process ${pid} gone`, () => (alive(pid) ? undefined : true));
    const d = await detail(runId);
    assert.equal(d.run.state, 'cancelled');
    assert.deepEqual(d.steps.map((s) => s.state), ['cancelled', 'cancelled']);
    await until('the attempt ended', async () => ((await c.api.task(nap.taskId)).attempts[0].state === 'cancelled' ? true : undefined));

    const twice = await drover(c, ['dag', 'cancel', runId]);
    assert.equal(twice.code, 1);
    assert.equal(twice.stderr, `drover: conflict: DAG run ${runId} is cancelled; only a running run can be cancelled\n`);
  });
});
