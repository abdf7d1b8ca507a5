/** `drover submit`'s issue-10 flags, pure: --cwd, --at/--in, the --script name, the ./path warning. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildSubmitRequest, relativeCommandWarning } from '../../src/cli/commands/submit.js';
import { UsageError } from '../../src/cli/usage-error.js';
import { MAX_SCRIPT_CHARS } from '../../src/core/task.js';

const noScript = (): string => assert.fail('no script expected');
const usage = (re: RegExp) => (e: unknown) => e instanceof UsageError && re.test(e.message);
const NOW = new Date(2026, 11, 1, 12, 0, 0);

describe('submit: cwd, run later, script names', () => {
  it('--cwd resolves against the CLI\'s directory', () => {
    assert.equal(buildSubmitRequest(['./backup.sh'], { cwd: 'project' }, noScript, '/home/me').cwd, '/home/me/project');
    assert.equal(buildSubmitRequest(['./backup.sh'], { cwd: '.' }, noScript, '/home/me').cwd, '/home/me');
    assert.equal(buildSubmitRequest(['ls'], { cwd: '/srv/../srv/app' }, noScript, '/home/me').cwd, '/srv/app');
    assert.throws(() => buildSubmitRequest(['ls'], { cwd: '' }, noScript), usage(/^invalid --cwd/));
  });
  it('--at becomes runAt (ISO, UTC); --in becomes delay (ms); not both', () => {
    assert.equal(buildSubmitRequest(['true'], { at: '18:30' }, noScript, '/', NOW).runAt, new Date(2026, 11, 1, 18, 30).toISOString());
    assert.equal(buildSubmitRequest(['true'], { in: '90s' }, noScript).delay, 90_000);
    assert.equal(buildSubmitRequest(['true'], { in: '1h30m' }, noScript).delay, 5_400_000);
    assert.throws(() => buildSubmitRequest(['true'], { in: 'soon' }, noScript), usage(/^invalid --in "soon"/));
    assert.throws(() => buildSubmitRequest(['true'], { in: '400d' }, noScript), usage(/^invalid --in "400d"/));
    assert.throws(() => buildSubmitRequest(['true'], { at: '12:00', in: '5m' }, noScript), usage(/--at and --in are exclusive/));
    assert.throws(() => buildSubmitRequest(['true'], { at: 'noon' }, noScript), usage(/^invalid --at "noon"/));
  });
  it('--script FILE is named after the file unless --name; --script - keeps the server default', () => {
    const read = () => '#!/usr/bin/env python3\nprint(1)\n';
    assert.equal(buildSubmitRequest([], { script: 'jobs/nightly-report.py' }, read).name, 'nightly-report.py');
    assert.equal(buildSubmitRequest([], { script: 'jobs/x.py', name: 'custom' }, read).name, 'custom');
    assert.equal(buildSubmitRequest([], { script: '-' }, read).name, undefined);
    // No interpreter is sent: the server decides (#! → run as a file).
    assert.equal(buildSubmitRequest([], { script: 'x.py' }, read).interpreter, undefined);
  });
  it('warns about ./ and ../ commands without --cwd, nothing otherwise', () => {
    assert.match(relativeCommandWarning(['./backup.sh'], {}, '/home/me')!, /^warning: \.\/backup\.sh will resolve in the task's work directory on the worker, not in \/home\/me here; use an absolute path \(\/home\/me\/backup\.sh\) or --cwd DIR/);
    assert.match(relativeCommandWarning(['../bin/x'], {}, '/home/me')!, /\(\/home\/bin\/x\)/);
    assert.equal(relativeCommandWarning(['./backup.sh'], { cwd: '.' }), null);
    assert.equal(relativeCommandWarning(['backup.sh'], {}), null);
    assert.equal(relativeCommandWarning(['/usr/bin/true'], {}), null);
    assert.equal(relativeCommandWarning([], { script: 'x.sh' }), null);
  });
});

describe('submit: --script against the server\'s limits, named as the flag', () => {
  it('an empty script, or one over MAX_SCRIPT_CHARS characters, is a usage error; one at the limit passes', () => {
    assert.throws(() => buildSubmitRequest([], { script: 'empty.sh' }, () => ''), usage(/^invalid --script "empty\.sh": the script is empty$/));
    assert.throws(() => buildSubmitRequest([], { script: 'big.sh' }, () => 'x'.repeat(MAX_SCRIPT_CHARS + 1)), usage(/^invalid --script "big\.sh": longer than 524288 characters/));
    assert.equal(buildSubmitRequest([], { script: 'max.sh' }, () => 'x'.repeat(MAX_SCRIPT_CHARS)).script?.length, MAX_SCRIPT_CHARS);
    // Counted in code points, as the server's schema counts: 300,000 emoji are 600,000 UTF-16 units but pass.
    assert.equal(buildSubmitRequest([], { script: 'emoji.sh' }, () => '😀'.repeat(300_000)).script?.length, 600_000);
  });
});
