/** Pure parts of the CLI's habits: the ls table, colour decision, event details, id arguments, completion tree. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { colourEnabled } from '../../src/cli/colour.js';
import { formatDetail } from '../../src/cli/commands/tasks.js';
import { completionScript, completionTree } from '../../src/cli/completion-script.js';
import { buildProgram } from '../../src/cli/program.js';
import { parseTaskIdArg, resolveTaskId } from '../../src/cli/resolve-task-id.js';
import { exitCell, formatTaskTable, shortIdLength, stateCell } from '../../src/cli/task-table.js';
import { UsageError } from '../../src/cli/usage-error.js';
import { makeSummary } from './fake-api.js';

const now = Date.parse('2026-12-01T12:00:00Z');
const ended = { startedAt: '2026-12-01T11:59:00Z', endedAt: '2026-12-01T11:59:30Z', durationMs: 30_000, workerId: 'w1' };

describe('ls table', () => {
  it('names the outcome in STATE and never shows a timeout as SIGTERM', () => {
    const timedOut = makeSummary({ ...ended, state: 'failed', outcome: 'timed_out', signal: 'SIGTERM', error: 'timed out after 5000 ms' }) as never;
    assert.equal(stateCell(timedOut), 'failed (timed_out)');
    assert.equal(exitCell(timedOut), 'timeout');
    const fromServer = makeSummary({ ...ended, state: 'failed', outcome: 'start_failed', exitCode: null, error: 'cannot start ./x' }) as never;
    assert.equal(stateCell(fromServer), 'failed (start_failed)');
    const killed = makeSummary({ ...ended, state: 'failed', outcome: 'failed', signal: 'SIGKILL' }) as never;
    assert.deepEqual([stateCell(killed), exitCell(killed)], ['failed', 'SIGKILL']);
    assert.equal(stateCell(makeSummary({ state: 'cancelled' }) as never), 'cancelled');
  });
  it('shows full ids when they fit', () => {
    const t = formatTaskTable([makeSummary({ id: '01JF0000000000000000000001' })] as never[], { now });
    assert.match(t, /^01JF0000000000000000000001  sh/m);
  });
  it('fits 80 columns by cutting name and worker; --wide cuts nothing', () => {
    const rows = [makeSummary({ ...ended, id: '01JF00000000000000000000AB', name: 'n'.repeat(70), workerId: 'worker-with-a-long-name', state: 'failed', exitCode: 3 })] as never[];
    const t = formatTaskTable(rows, { now, width: 80 });
    for (const l of t.trimEnd().split('\n')) assert.ok(l.length <= 80, l);
    assert.match(t, /^01JF00000000000000000000AB  n+…/m);
    const wide = formatTaskTable(rows, { now, wide: true });
    assert.ok(wide.includes('01JF00000000000000000000AB') && wide.includes('n'.repeat(70)));
  });
  it('short ids grow until the listed ids differ, then mark the ones a 12-character prefix cannot tell apart', () => {
    assert.equal(shortIdLength(['01JF0000000000000000000001', '01JF1000000000000000000001']), 12);
    assert.equal(shortIdLength(['01JF0000000000A00000000001', '01JF0000000000B00000000001']), 15);
    const long = { name: 'n'.repeat(40), workerId: 'w'.repeat(20), state: 'failed', outcome: 'timed_out', error: 'timed out after 1 ms', ...{ startedAt: ended.startedAt, endedAt: ended.endedAt } };
    const t = formatTaskTable([makeSummary({ ...long, id: '01JF0000000000000000000001' }), makeSummary({ ...long, id: '01JF0000000000000000000002' }), makeSummary({ ...long, id: '01JF9000000000000000000002' })] as never[], { now });
    assert.match(t, /^01JF00000000… /m);
    assert.match(t, /^01JF90000000 /m);
  });
});

describe('colour', () => {
  it('--no-color, then NO_COLOR (any value), then FORCE_COLOR, then the TTY decide', () => {
    assert.equal(colourEnabled({ noColorFlag: false, env: {}, isTTY: true }), true);
    assert.equal(colourEnabled({ noColorFlag: false, env: {}, isTTY: false }), false);
    assert.equal(colourEnabled({ noColorFlag: false, env: { NO_COLOR: '' }, isTTY: true }), false);
    assert.equal(colourEnabled({ noColorFlag: false, env: { NO_COLOR: '1', FORCE_COLOR: '1' }, isTTY: true }), false);
    assert.equal(colourEnabled({ noColorFlag: true, env: { FORCE_COLOR: '1' }, isTTY: true }), false);
    assert.equal(colourEnabled({ noColorFlag: false, env: { FORCE_COLOR: '1' }, isTTY: false }), true);
    assert.equal(colourEnabled({ noColorFlag: false, env: { FORCE_COLOR: '0' }, isTTY: true }), false);
  });
});

describe('show: event details', () => {
  it('prints epoch-ms times under time-named keys as ISO, other numbers as they are', () => {
    assert.equal(formatDetail({ runAfter: 1796112775124, delayMs: 1000, retry: 2, note: 'x' }), 'runAfter=2026-12-01T08:12:55Z delayMs=1000 retry=2 note=x');
    assert.equal(formatDetail({ startedAt: 42 }), 'startedAt=42', 'not a plausible time');
    assert.equal(formatDetail(null), '');
  });
});

describe('task id arguments', () => {
  it('a full id in any case, a prefix of 6+ characters, else a usage error naming the rule', async () => {
    assert.deepEqual(parseTaskIdArg('01jf0000000000000000000001'), { id: '01JF0000000000000000000001' });
    assert.deepEqual(parseTaskIdArg('01jf00'), { prefix: '01JF00' });
    assert.throws(() => parseTaskIdArg('01jf0'), (e: unknown) => e instanceof UsageError && /at least 6 characters/.test(e.message));
    assert.throws(() => parseTaskIdArg('01JFIL00'), (e: unknown) => e instanceof UsageError && /0-9 and A-Z without I, L, O, U/.test(e.message));
    const lister = (tasks: { id: string; name: string; state: 'waiting' }[]) => ({ listTasks: async () => ({ tasks }) });
    assert.equal(await resolveTaskId(lister([{ id: 'A1', name: 'n', state: 'waiting' }]), '01jf00'), 'A1');
    await assert.rejects(resolveTaskId(lister([]), '01jf00'), /no task id starts with 01JF00/);
    const many = Array.from({ length: 11 }, (_, i) => ({ id: `01JF00${i}`, name: `t${i}`, state: 'waiting' as const }));
    await assert.rejects(resolveTaskId(lister(many), '01jf00'), (e: unknown) => e instanceof UsageError && /matches more than 10 tasks: 01JF000 \(t0, waiting\);.*01JF009 \(t9, waiting\); \.\.\./.test(e.message));
  });
});

describe('completion', () => {
  it('is generated from the command tree: every command and flag appears', async () => {
    const tree = completionTree(await buildProgram());
    const script = completionScript('bash', tree);
    const walk = (n: typeof tree): typeof tree[] => [n, ...n.subcommands.flatMap(walk)];
    for (const n of walk(tree)) {
      if (n.path.length) assert.ok(script.includes(`'${n.path.join(' ')}')`), n.path.join(' '));
      for (const f of n.flags) if (f.long) assert.ok(script.includes(f.long), `${n.path.join(' ')} ${f.long}`);
    }
  });
});
