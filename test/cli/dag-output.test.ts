/**
 * `drover dag`'s pure pieces: --param and other flag checks, run id
 * prefixes, the `--version N` spelling after `dag`, the tables (fitted to the
 * width, user text escaped, states coloured), `status --critical-path`, and
 * the lines `--wait` prints as steps change.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DagRunDetail, DagRunListItem, DagRunStep } from '../../src/client/dag-types.js';
import { parseDagName, parseLimitFlag, parseOwnerFlag, parseParams, parseVersionFlag } from '../../src/cli/commands/dag-input.js';
import { formatRunStatus, formatRunTable, stepsCell, stepStateCell } from '../../src/cli/commands/dag-output.js';
import { failureLine, progressLines, seenOf, summaryLine } from '../../src/cli/commands/dag-watch.js';
import { subcommandVersionArgs } from '../../src/cli/program.js';
import { AmbiguousRunIdError, resolveDagRunId, RunIdNotFoundError } from '../../src/cli/resolve-dag-run-id.js';
import { UsageError } from '../../src/cli/usage-error.js';

const T0 = Date.parse('2026-12-01T12:00:00.000Z');
const iso = (ms: number | null) => (ms === null ? null : new Date(T0 + ms).toISOString());
const RUN_ID = '01JF8Z0000000000000000RAN0';

function step(name: string, over: Partial<DagRunStep> & { start?: number | null; end?: number | null } = {}): DagRunStep {
  const { start = null, end = null, ...rest } = over;
  return {
    name,
    dependsOn: [],
    when: 'success',
    taskId: `01JF8Z00000000000000000${name.toUpperCase().replace(/[^A-Z]/g, '').padEnd(3, '0').slice(0, 3)}`,
    state: 'succeeded',
    skipReason: null,
    attempts: start === null ? 0 : 1,
    releasedAt: iso(start),
    startedAt: iso(start),
    endedAt: iso(end),
    durationMs: start === null ? null : (end ?? 10_000) - start,
    result: null,
    outputs: null,
    critical: false,
    ...rest,
  };
}

function detail(steps: DagRunStep[], over: { state?: DagRunDetail['run']['state']; end?: number | null; criticalPath?: string[] } = {}): DagRunDetail {
  const counts: Record<string, number> = {};
  for (const s of steps) counts[s.state] = (counts[s.state] ?? 0) + 1;
  return {
    run: {
      id: RUN_ID,
      dag: 'etl',
      dagId: '01JF8Z0000000000000000DAG0',
      version: 2,
      owner: 'alice',
      state: over.state ?? 'succeeded',
      params: { DATE: '2026-12-01' },
      stepCount: steps.length,
      scheduleId: null,
      scheduledAt: null,
      createdAt: iso(0)!,
      updatedAt: iso(over.end ?? 4000)!,
      endedAt: over.end === null ? null : iso(over.end ?? 4000),
    },
    steps,
    criticalPath: over.criticalPath ?? [],
    counts,
  };
}

describe('dag flags', () => {
  it('--param K=V: the server\'s key rule, no key twice (case-insensitive), values kept as given', () => {
    assert.deepEqual(parseParams(undefined), {});
    assert.deepEqual(parseParams(['DATE=2026-12-01', 'where=a=b', 'EMPTY=']), { DATE: '2026-12-01', where: 'a=b', EMPTY: '' });
    const bad: Array<[string[], RegExp]> = [
      [['noequals'], /^invalid --param "noequals": expected KEY=VALUE$/],
      [['=v'], /^invalid --param "=v": the key before "=" is empty$/],
      [['1x=2'], /^invalid --param "1x=2": a parameter name is a letter or "_"/],
      [['a-b=2'], /^invalid --param "a-b=2": a parameter name/],
      [[`${'k'.repeat(65)}=1`], /a parameter name .* \(at most 64\)/],
      [['A=1', 'A=2'], /^invalid --param "A=2": A is given twice$/],
      [['date=1', 'DATE=2'], /^invalid --param "DATE=2": "DATE" and "date" are the same parameter \(steps see both as DROVER_PARAM_DATE\)$/],
      [[`V=${'x'.repeat(65537)}`], /^invalid --param V: the value is longer than 65536 characters$/],
      [Array.from({ length: 65 }, (_, i) => `K${i}=1`), /^invalid --param: at most 64 parameters \(got 65\)$/],
    ];
    for (const [raws, msg] of bad) assert.throws(() => parseParams(raws), (e: unknown) => e instanceof UsageError && msg.test(e.message), raws[0]);
  });

  it('names, --version, --limit, --owner', () => {
    assert.equal(parseDagName('etl.v2_x-y'), 'etl.v2_x-y');
    assert.throws(() => parseDagName('a/b'), /^UsageError: invalid DAG name "a\/b": expected 1\.\.100 of A-Z a-z 0-9 \. _ -, not \. or \.\. alone$/);
    assert.throws(() => parseDagName(''), /invalid DAG name ""/);
    assert.equal(parseVersionFlag(undefined), undefined);
    assert.equal(parseVersionFlag('3'), 3);
    assert.throws(() => parseVersionFlag('0'), /invalid --version "0": expected an integer 1\.\./);
    assert.throws(() => parseVersionFlag('latest'), /invalid --version "latest"/);
    assert.equal(parseLimitFlag(undefined, 20), 20);
    assert.throws(() => parseLimitFlag('501', 20), /invalid --limit "501": expected an integer 1\.\.500/);
    assert.throws(() => parseOwnerFlag(' '), /invalid --owner "": expected a user name/);
  });

  it('after `dag`, --version N reaches dag show (commander would give it to the root)', () => {
    assert.deepEqual(subcommandVersionArgs(['dag', 'show', 'etl', '--version', '2']), ['dag', 'show', 'etl', '--version=2']);
    assert.deepEqual(subcommandVersionArgs(['--url', 'http://x', 'dag', 'show', 'etl', '--version', '2', '--json']), ['--url', 'http://x', 'dag', 'show', 'etl', '--version=2', '--json']);
    // Elsewhere, and a --version with no value, as before.
    assert.deepEqual(subcommandVersionArgs(['ls', '--version', '2']), ['ls', '--version', '2']);
    assert.deepEqual(subcommandVersionArgs(['--version']), ['--version']);
    assert.deepEqual(subcommandVersionArgs(['dag', '--version']), ['dag', '--version']);
    assert.deepEqual(subcommandVersionArgs(['dag', 'show', 'x', '--version', '--json']), ['dag', 'show', 'x', '--version', '--json']);
  });
});

describe('run id prefixes', () => {
  const lister = (runs: Array<{ id: string; dag: string; state: 'running' | 'succeeded' | 'failed' | 'cancelled' }>) => {
    const asked: Array<{ id: string; limit: number }> = [];
    return { asked, listDagRuns: async (q: { id: string; limit: number }) => (asked.push(q), { runs: runs.filter((r) => r.id.startsWith(q.id)) }) };
  };

  it('a full id needs no request; a prefix is looked up on the server, in any case', async () => {
    const l = lister([{ id: RUN_ID, dag: 'etl', state: 'running' }]);
    assert.equal(await resolveDagRunId(l, RUN_ID.toLowerCase()), RUN_ID);
    assert.deepEqual(l.asked, []);
    assert.equal(await resolveDagRunId(l, '01jf8z'), RUN_ID);
    assert.deepEqual(l.asked, [{ id: '01JF8Z', limit: 11 }]);
  });

  it('too short, not base32, unknown, ambiguous', async () => {
    const l = lister([
      { id: '01JF8Z0000000000000000RAN1', dag: 'etl', state: 'failed' },
      { id: '01JF8Z0000000000000000RAN2', dag: 'x\x1b[2J', state: 'running' },
    ]);
    await assert.rejects(resolveDagRunId(l, '01JF8'), (e: unknown) => e instanceof UsageError && /^invalid run id "01JF8": give the full id or at least 6 characters of it$/.test(e.message));
    await assert.rejects(resolveDagRunId(l, '01JF8ZIL'), (e: unknown) => e instanceof UsageError && /^invalid run id "01JF8ZIL": expected a run id or a prefix of one/.test(e.message));
    await assert.rejects(resolveDagRunId(l, 'ZZZZZZ'), (e: unknown) => e instanceof RunIdNotFoundError && !(e instanceof UsageError) && /no run id starts with ZZZZZZ/.test(e.message));
    await assert.rejects(resolveDagRunId(l, '01jf8z0000'), (e: unknown) => e instanceof AmbiguousRunIdError && /matches 2 DAG runs: 01JF8Z0000000000000000RAN1 \(etl, failed\); 01JF8Z0000000000000000RAN2/.test(e.message));
  });
});

describe('dag tables', () => {
  const opts = { width: 80, colour: false, now: T0 + 10_000 };

  it('status: steps with state, skip reason, task, attempts, start and duration; outputs in full; escaped', () => {
    const d = detail(
      [
        step('extract', { start: 100, end: 1100, outputs: { ROWS: '42', NOTE: 'a\x1b[2Jb' } }),
        step('transform', { dependsOn: ['extract'], state: 'failed', start: 1100, end: 3000, attempts: 2, result: { outcome: 'failed', attempt: 2, exitCode: 3, signal: null, error: null, durationMs: 900 } }),
        step('load', { dependsOn: ['transform'], state: 'skipped', skipReason: 'upstream_failed' }),
        step('cleanup', { dependsOn: ['transform'], when: 'failure', start: 3000, end: 4000 }),
      ],
      { state: 'failed' },
    );
    const out = formatRunStatus(d, { ...opts, width: 120, criticalPath: false });
    assert.match(out, /^run: +01JF8Z0000000000000000RAN0$/m);
    assert.match(out, /^dag: +etl \(version 2\)$/m);
    assert.match(out, /^state: +failed$/m);
    assert.match(out, /^params: +DATE=2026-12-01$/m);
    assert.match(out, /^duration: +4s$/m);
    assert.match(out, /^steps: +4 \(2 succeeded, 1 failed, 1 skipped\)$/m);
    assert.match(out, /^STEP +STATE +TASK +ATTEMPTS +START +DURATION$/m);
    assert.match(out, /^extract +succeeded +01JF8Z00000000000000000EXT +1 +\+100ms +1s$/m);
    assert.match(out, /^transform +failed \(exit 3\) +01JF8Z00000000000000000TRA +2 +\+1\.1s +1\.9s$/m);
    assert.match(out, /^load +skipped \(upstream_failed\) +01JF8Z00000000000000000LOA +0 +- +-$/m);
    assert.match(out, /^OUTPUTS\nextract {2}ROWS=42\nextract {2}NOTE=a\\x1b\[2Jb$/m);
    assert.match(out, /^SKIPPED\nload {2}upstream_failed: a step it depends on failed or was cancelled$/m);
    assert.doesNotMatch(out, /\x1b/);
    assert.doesNotMatch(out, /CRITICAL PATH/);
    for (const line of out.split('\n')) assert.ok(line.length <= 120, `fits 120 columns: ${line}`);
    const narrow = formatRunStatus(d, { ...opts, criticalPath: false });
    for (const line of narrow.split('\n')) assert.ok(line.length <= 80, `fits 80 columns: ${line}`);
  });

  it('status --critical-path: the chain that decided the duration, each step\'s share of the run', () => {
    const d = detail(
      [step('a', { start: 0, end: 1000 }), step('b', { dependsOn: ['a'], start: 1000, end: 4000 }), step('c', { dependsOn: ['a'], start: 1000, end: 1500 }), step('d', { dependsOn: ['b', 'c'], start: 4500, end: 5000 })],
      { end: 5000, criticalPath: ['a', 'b', 'd'] },
    );
    const out = formatRunStatus(d, { ...opts, criticalPath: true });
    const cp = out.slice(out.indexOf('CRITICAL PATH'));
    assert.equal(
      cp,
      'CRITICAL PATH (the run took 5s)\n' +
        'STEP  DURATION  SHARE  STATE\n' +
        'a     1s        20%    succeeded\n' +
        'b     3s        60%    succeeded\n' +
        'd     500ms     10%    succeeded\n' +
        '(in the steps: 4.5s, 90%; before and between them: 500ms, 10%)\n',
    );
    const none = formatRunStatus(detail([step('a', { state: 'ready' })], { state: 'running', end: null }), { ...opts, criticalPath: true });
    assert.match(none, /CRITICAL PATH \(the run took 10s so far\)\n\(no step has started yet\)\n$/);
  });

  it('a narrow terminal: long step names are cut, task ids that differ only at the end stay whole', () => {
    const d = detail([step('a-step-with-a-rather-long-name-indeed', { start: 0, end: 10 }), step('b', { state: 'skipped', skipReason: 'condition_not_met' })]);
    const out = formatRunStatus(d, { ...opts, criticalPath: false });
    const table = out.slice(out.indexOf('STEPS\n'), out.indexOf('\nSKIPPED'));
    for (const line of table.split('\n')) assert.ok(line.length <= 80, `fits: ${line}`);
    assert.match(table, /01JF8Z00000000000000000AST/);
    assert.match(table, /a-step-…/);
    assert.match(out, /SKIPPED\nb {2}condition_not_met: it runs on failure/);
  });

  it('runs: run id, state, start, duration, steps succeeded/total; ids shortened to fit, state coloured', () => {
    const runs: DagRunListItem[] = [
      { ...detail([]).run, id: '01JF8Z1111111111111111111A', state: 'failed', stepCount: 5, counts: { succeeded: 3, failed: 1, skipped: 1 } },
      { ...detail([]).run, id: '01JF8Y2222222222222222222B', state: 'running', stepCount: 5, endedAt: null, counts: { succeeded: 1, running: 2, ready: 2 } },
    ];
    for (const line of formatRunTable(runs, opts).split('\n')) assert.ok(line.length <= 80, `fits: ${line}`);
    const out = formatRunTable(runs, { ...opts, width: 100 });
    assert.equal(
      out,
      'RUN           STATE    STARTED               DURATION  STEPS                      VERSION\n' +
        '01JF8Z111111  failed   2026-12-01T12:00:00Z  4s        3/5 (1 failed, 1 skipped)  2\n' +
        '01JF8Y222222  running  2026-12-01T12:00:00Z  10s       1/5                        2\n',
    );
    const wide = formatRunTable(runs, { ...opts, width: 200 });
    assert.match(wide, /^01JF8Z1111111111111111111A {2}failed/m);
    const coloured = formatRunTable(runs, { ...opts, width: 100, colour: true });
    assert.match(coloured, /\x1b\[31mfailed\x1b\[0m/);
    assert.match(coloured, /\x1b\[33mrunning\x1b\[0m/);
    assert.equal(stepsCell({ stepCount: 3, state: 'succeeded' }, { succeeded: 3 }), '3/3');
    assert.equal(stepStateCell(step('x', { state: 'failed', result: { outcome: 'timed_out', attempt: 1, exitCode: null, signal: 'SIGTERM', error: null, durationMs: 5 } })), 'failed (timed_out)');
  });
});

describe('dag run --wait lines', () => {
  it('prints starts and ends in the order they happened, with the time since the run started; pending steps are not news', () => {
    const seen = new Map();
    const first = detail([step('a', { state: 'running', start: 20 }), step('b', { state: 'ready' }), step('c', { state: 'waiting' })], { state: 'running', end: null });
    assert.deepEqual(progressLines(first, seen, T0 + 50, false), ['+20ms    a  running (task 01JF8Z00000000000000000A00)']);
    assert.deepEqual(progressLines(first, seen, T0 + 60, false), [], 'nothing changed');
    const second = detail(
      [step('a', { start: 20, end: 1000 }), step('b', { state: 'running', start: 1001 }), step('c', { state: 'skipped', skipReason: 'upstream_skipped', end: 1000 })],
      { state: 'running', end: null },
    );
    assert.deepEqual(progressLines(second, seen, T0 + 1100, false), ['+1s      a  succeeded in 980ms', '+1s      c  skipped (upstream_skipped)', '+1s      b  running (task 01JF8Z00000000000000000B00)']);
    const retried = detail([step('a', { start: 20, end: 1000 }), step('b', { state: 'running', start: 3000, attempts: 2 }), step('c', { state: 'skipped', skipReason: 'upstream_skipped', end: 1000 })], { state: 'running', end: null });
    assert.deepEqual(progressLines(retried, seen, T0 + 3100, false), ['+3s      b  running (attempt 2, task 01JF8Z00000000000000000B00)']);
  });

  it('a step that started and ended between two reads gets its running line too, dated by its start', () => {
    const seen = new Map();
    const first = detail([step('a', { state: 'running', start: 0 }), step('d', { state: 'ready' })], { state: 'running', end: null });
    progressLines(first, seen, T0 + 5, false);
    const both = detail([step('a', { start: 0, end: 300 }), step('d', { start: 310, end: 336 })], { state: 'succeeded', end: 336 });
    assert.deepEqual(progressLines(both, seen, T0 + 400, false), [
      '+300ms   a  succeeded in 300ms',
      '+310ms   d  running (task 01JF8Z00000000000000000D00)',
      '+336ms   d  succeeded in 26ms',
    ]);
    const cancelledBeforeStart = detail([step('a', { start: 0, end: 300 }), step('e', { state: 'cancelled', end: 400 })], { state: 'cancelled', end: 400 });
    assert.deepEqual(progressLines(cancelledBeforeStart, seenOf(both), T0 + 500, false), ['+400ms   e  cancelled'], 'no start, no running line');
  });

  it('a retry --wait starts from the run as it was: kept steps are not printed again', () => {
    const before = detail([step('a', { start: 0, end: 10 }), step('b', { state: 'failed', start: 10, end: 20, result: { outcome: 'failed', attempt: 1, exitCode: 1, signal: null, error: null, durationMs: 9 } })], { state: 'failed' });
    const seen = seenOf(before);
    const after = detail([step('a', { start: 0, end: 10 }), step('b', { state: 'running', start: 5000, attempts: 2 })], { state: 'running', end: null });
    assert.deepEqual(progressLines(after, seen, T0 + 5100, false), ['+5s      b  running (attempt 2, task 01JF8Z00000000000000000B00)']);
  });

  it('a retry --wait whose retried step started and ended between two reads: its running line is printed too, dated by its start', () => {
    const failed = { outcome: 'failed' as const, attempt: 1, exitCode: 1, signal: null, error: null, durationMs: 9 };
    const before = detail([step('a', { start: 0, end: 10 }), step('b', { state: 'failed', start: 10, end: 20, result: failed })], { state: 'failed' });
    const seen = seenOf(before);
    const after = detail([step('a', { start: 0, end: 10 }), step('b', { start: 5000, end: 5066, attempts: 2 })], { state: 'succeeded', end: 5066 });
    assert.deepEqual(progressLines(after, seen, T0 + 5100, false), [
      '+5s      b  running (attempt 2, task 01JF8Z00000000000000000B00)',
      '+5.07s   b  succeeded in 66ms (2 attempts)',
    ]);
    // Retried within one release (seen retrying, then ended at attempt 3): the view's start is attempt 2's, so no running line is made up.
    const retrying = new Map([['b', { state: 'retrying', attempts: 2 }]]);
    const ended = detail([step('b', { start: 100, end: 9000, attempts: 3 })], { state: 'succeeded', end: 9000 });
    assert.deepEqual(progressLines(ended, retrying, T0 + 9100, false), ['+9s      b  succeeded in 8.9s (3 attempts)']);
  });

  it('the summary and, for a run that did not succeed, the line naming what failed', () => {
    const d = detail([step('a', { start: 0, end: 10 }), step('b', { state: 'failed', start: 10, end: 2000, attempts: 2, result: { outcome: 'failed', attempt: 2, exitCode: 3, signal: null, error: null, durationMs: 9 } })], { state: 'failed', end: 2000 });
    assert.equal(summaryLine(d, T0 + 9999), `run ${RUN_ID} failed in 2s: 1 succeeded, 1 failed`);
    assert.equal(failureLine(d), `DAG run ${RUN_ID} failed: b failed (exit 3)`);
    const coloured = progressLines(d, new Map(), T0 + 3000, true);
    assert.match(coloured.join('\n'), /\x1b\[31mfailed \(exit 3\) after 2 attempts\x1b\[0m/);
  });
});
