/**
 * Task outputs through the process runner, with real processes on both
 * spawners: DROVER_OUTPUT names a file in the work dir; after a success its
 * KEY=VALUE lines are the result's outputs; a file that breaks the rules
 * fails the attempt naming the line; any other end ignores the file; what
 * the task leaves in the file's place (a link, a FIFO, a huge file) is
 * refused without being followed, waited on or read in full.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { collect, spec, SPAWNERS, tempDir } from './helpers.js';

const GRACE = 300;

for (const spawner of SPAWNERS) describe(`task outputs (${spawner} spawner)`, { timeout: 30_000 }, () => {
  let tmp: ReturnType<typeof tempDir>;
  before(() => (tmp = tempDir('drover-outputs-')));
  after(() => tmp.remove());
  const opts = () => ({ workDir: tmp.dir, killGraceMs: GRACE, spawner });
  const run = async (script: string, over: Parameters<typeof spec>[0] = {}) => {
    const c = collect(spec({ script, ...over }), opts());
    const r = await c.run.result;
    await c.run.cleanedUp;
    return { r, stdout: c.text('stdout'), stderr: c.text('stderr') };
  };

  it('DROVER_OUTPUT is drover-output.env in the work dir (HOME), absolute, absent at start; its lines become the outputs', async () => {
    const { r, stdout, stderr } = await run(
      [
        'echo "$DROVER_OUTPUT"',
        'test "$DROVER_OUTPUT" = "$HOME/drover-output.env" && echo in-home',
        'test -e "$DROVER_OUTPUT" || echo absent',
        'echo rows=42 >> "$DROVER_OUTPUT"',
        'printf "# a comment\\n\\nurl=http://x/?a=b\\r\\nmsg= spaced out \\n" >> "$DROVER_OUTPUT"',
      ].join('\n'),
    );
    assert.equal(r.outcome, 'succeeded', stderr);
    const [file, ...rest] = stdout.split('\n');
    assert.match(file!, /^\/.+\/drover-output\.env$/);
    assert.deepEqual(rest, ['in-home', 'absent', '']);
    assert.deepEqual(r.outputs, { rows: '42', url: 'http://x/?a=b', msg: ' spaced out ' });
    assert.equal(r.exitCode, 0);
    assert.equal(r.error, null);
    // The work dir (and the file in it) is removed after the attempt.
    assert.equal(existsSync(file!), false);
  });

  it('a task that writes no file, or one without a key, has no outputs', async () => {
    for (const script of ['true', ': > "$DROVER_OUTPUT"', 'printf "# nothing\\n\\n" > "$DROVER_OUTPUT"']) {
      const { r } = await run(script);
      assert.deepEqual({ ...r, durationMs: 0 }, { outcome: 'succeeded', exitCode: 0, signal: null, error: null, durationMs: 0 }, script);
      assert.ok(!('outputs' in r));
    }
  });

  it('a file that breaks the rules fails the attempt with the line and the reason; the exit code stays 0', async () => {
    const cases: Array<[string, string]> = [
      ['printf "a=1\\n\\nrows 42\\n"', 'DROVER_OUTPUT line 3: expected KEY=VALUE'],
      ['printf "rows=1\\nROWS=2\\n"', 'DROVER_OUTPUT line 2: key "ROWS" given twice (first on line 1; keys are compared ignoring case)'],
      ['printf "9lives=1\\n"', 'DROVER_OUTPUT line 1: invalid key "9lives" (a key is a letter or _, then letters, digits or _)'],
      ['printf "a=x\\000y\\n"', 'DROVER_OUTPUT line 1: contains a NUL character'],
      ['printf "a=\\377\\n"', 'DROVER_OUTPUT line 1: not valid UTF-8'],
      ['for i in $(seq 1 129); do echo "k$i=$i"; done', 'DROVER_OUTPUT line 129: more than 128 keys'],
    ];
    for (const [write, error] of cases) {
      const { r } = await run(`${write} > "$DROVER_OUTPUT"`);
      assert.deepEqual({ ...r, durationMs: 0 }, { outcome: 'failed', exitCode: 0, signal: null, error, durationMs: 0 }, write);
    }
  });

  it('an attempt that does not succeed ignores the file, however it looks', async () => {
    const failed = await run('echo rows=42 > "$DROVER_OUTPUT"; echo "not a line" >> "$DROVER_OUTPUT"; exit 3');
    assert.deepEqual({ ...failed.r, durationMs: 0 }, { outcome: 'failed', exitCode: 3, signal: null, error: null, durationMs: 0 });
    const timedOut = await run('echo rows=42 > "$DROVER_OUTPUT"; exec sleep 10', { timeoutMs: 100 });
    assert.equal(timedOut.r.outcome, 'timed_out');
    assert.ok(!('outputs' in timedOut.r));
  });

  it('a symbolic link in the file\'s place is refused, not followed (to /etc/passwd, or to a valid file)', async () => {
    const elsewhere = `${tmp.dir}/valid.env`;
    for (const target of ['/etc/passwd', elsewhere]) {
      const { r } = await run(`echo ok=1 > ${elsewhere}; ln -s ${target} "$DROVER_OUTPUT"`);
      assert.deepEqual(
        { ...r, durationMs: 0 },
        { outcome: 'failed', exitCode: 0, signal: null, error: 'DROVER_OUTPUT: is a symbolic link (not followed: write a regular file)', durationMs: 0 },
        target,
      );
    }
  });

  it('a FIFO or a directory in the file\'s place is refused at once (an open never waits for a writer)', async () => {
    for (const make of ['mkfifo "$DROVER_OUTPUT"', 'mkdir "$DROVER_OUTPUT"']) {
      const { r } = await run(make);
      assert.deepEqual({ ...r, durationMs: 0 }, { outcome: 'failed', exitCode: 0, signal: null, error: 'DROVER_OUTPUT: not a regular file', durationMs: 0 }, make);
    }
  });

  it('a file over 64 KiB is refused without being read: 1 MB, and a 1 GB sparse one', async () => {
    const error = 'DROVER_OUTPUT: the file is larger than 65536 bytes (64 KiB)';
    const mb = await run('head -c 1048576 /dev/zero | tr "\\000" a > "$DROVER_OUTPUT"');
    assert.deepEqual({ ...mb.r, durationMs: 0 }, { outcome: 'failed', exitCode: 0, signal: null, error, durationMs: 0 });
    // Reading 1 GB would take seconds and a gigabyte of memory; the size alone refuses it.
    const rss = process.memoryUsage().rss;
    const t0 = Date.now();
    const gb = await run('truncate -s 1G "$DROVER_OUTPUT"');
    assert.equal(gb.r.error, error);
    assert.ok(Date.now() - t0 < 5_000, `took ${Date.now() - t0} ms`);
    assert.ok(process.memoryUsage().rss - rss < 100 * 1024 * 1024, 'the file was not read into memory');
    // Exactly the limit is fine.
    const max = await run('{ printf "v="; head -c 65533 /dev/zero | tr "\\000" a; echo; } > "$DROVER_OUTPUT"');
    assert.equal(max.r.outcome, 'succeeded', max.stderr);
    assert.equal(max.r.outputs?.v?.length, 65533);
  });

  it('a task\'s env cannot point DROVER_OUTPUT elsewhere', async () => {
    const { r, stdout } = await run('echo "$DROVER_OUTPUT"; echo a=1 > "$DROVER_OUTPUT"', { env: { DROVER_OUTPUT: '/etc/passwd' } });
    assert.match(stdout, /\/drover-output\.env\n$/);
    assert.deepEqual(r.outputs, { a: '1' });
  });
});
