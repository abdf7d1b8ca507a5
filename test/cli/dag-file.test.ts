/**
 * DAG files as `drover dag apply` reads them (commands/dag-file.ts,
 * dag-file-check.ts, dag-file-errors.ts): which parser, every parse error
 * naming the file, line and column, the refusal of bare-number durations
 * naming the step and field, and server 400s worded as the file spells the
 * field, with its line. Pure: no server, no files.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkDagFile } from '../../src/cli/commands/dag-file-check.js';
import { describeServerError, fieldName, fieldPath } from '../../src/cli/commands/dag-file-errors.js';
import { DagFileError, detectFormat, parseDagText, readDagFile } from '../../src/cli/commands/dag-file.js';
import { UsageError } from '../../src/cli/usage-error.js';

const ETL = `# the ETL DAG
name: etl
description: nightly load
params:
  DATE: today
steps:
  - name: extract
    command: sh
    args: [-c, 'echo rows=1 >> "$DROVER_OUTPUT"']
    timeout: 5m
  - name: transform
    depends_on: [extract]
    script: |
      echo transforming
    retry:
      baseDelay: 2s
      maxDelay: 1m
  - name: load
    depends_on:
      - transform
    when: success
    command: "true"
`;

function refuses(fn: () => unknown, msg: RegExp): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof UsageError, `a UsageError (exit 2), got ${String(e)}`);
    assert.match((e as Error).message, msg);
    return true;
  });
}

describe('reading a DAG file', () => {
  it('parses YAML into the API body and remembers each value\'s line', () => {
    const f = parseDagText('etl.yaml', ETL);
    assert.equal(f.format, 'yaml');
    assert.deepEqual(f.body, {
      name: 'etl',
      description: 'nightly load',
      params: { DATE: 'today' },
      steps: [
        { name: 'extract', command: 'sh', args: ['-c', 'echo rows=1 >> "$DROVER_OUTPUT"'], timeout: '5m' },
        { name: 'transform', depends_on: ['extract'], script: 'echo transforming\n', retry: { baseDelay: '2s', maxDelay: '1m' } },
        { name: 'load', depends_on: ['transform'], when: 'success', command: 'true' },
      ],
    });
    assert.equal(f.lineOf(['steps', 2, 'depends_on', 0]), 20);
    assert.equal(f.lineOf(['steps', 1, 'retry', 'maxDelay']), 17);
    assert.equal(f.lineOf(['steps', 0]), 7);
    // A path the file lacks: the nearest value it has.
    assert.equal(f.lineOf(['steps', 0, 'env', 'X']), 7);
    assert.equal(f.lineOf(['nothing']), null);
  });

  it('merge keys share settings between steps (their line is the step\'s)', () => {
    const f = parseDagText('m.yaml', 'name: m\nx-defaults: &d\n  retries: 1\n  timeout: 30s\nsteps:\n  - <<: *d\n    name: a\n    command: "true"\n');
    assert.deepEqual((f.body as { steps: unknown[] }).steps[0], { retries: 1, timeout: '30s', name: 'a', command: 'true' });
    assert.equal(f.lineOf(['steps', 0, 'timeout']), 6);
  });

  it('picks the parser by extension, else by content', () => {
    assert.equal(detectFormat('a.json', 'name: x'), 'json');
    assert.equal(detectFormat('a.JSON', ''), 'json');
    assert.equal(detectFormat('a.yaml', '{"name": "x"}'), 'yaml');
    assert.equal(detectFormat('a.yml', ''), 'yaml');
    assert.equal(detectFormat('stdin', '  \n{"name": "x"}'), 'json');
    assert.equal(detectFormat('stdin', 'name: x'), 'yaml');
    assert.equal(detectFormat('dag.txt', '{"name": "x"}'), 'json');
    const f = parseDagText('stdin', '{"name": "x", "steps": [{"name": "a",\n "command": "true"}]}');
    assert.equal(f.format, 'json');
    assert.deepEqual(f.body, { name: 'x', steps: [{ name: 'a', command: 'true' }] });
    assert.equal(f.lineOf(['steps', 0, 'command']), 2);
  });

  it('YAML errors name the file, line and column', () => {
    refuses(() => parseDagText('etl.yaml', 'name: etl\nsteps:\n  - name: a\n   command: "true"\n'), /^etl\.yaml:4:1: not valid YAML: /);
    refuses(() => parseDagText('etl.yaml', 'name: etl\nsteps:\n  - name: a\n    name: b\n'), /^etl\.yaml:4:5: a key given twice in one mapping/);
    refuses(() => parseDagText('etl.yaml', 'name: etl\nsteps:\n\t- name: a\n'), /^etl\.yaml:3:1: a tab used as indentation/);
    refuses(() => parseDagText('etl.yaml', 'name: a\n---\nname: b\n'), /^etl\.yaml:2:1: more than one YAML document/);
    refuses(() => parseDagText('etl.yaml', 'name: etl\nsteps: [ {name: a\n'), /^etl\.yaml:3:1: not valid YAML/);
    refuses(() => parseDagText('etl.yaml', 'name: etl\nsteps: *nope\n'), /^etl\.yaml: .*nope/);
  });

  it('refuses an alias inside its own anchor (a loop) as a file error, not a failed request', () => {
    refuses(() => parseDagText('loop.yaml', 'name: x\nsteps: &s\n  - name: a\n    command: "true"\n    depends_on: *s\n'), /^loop\.yaml: an alias refers to a node that contains it \(a loop\)/);
  });

  it('refuses an alias bomb (at most 100 aliases are expanded)', () => {
    let text = 'a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n';
    for (let i = 1; i < 8; i++) text += `a${i}: &a${i} [${Array(10).fill(`*a${i - 1}`).join(', ')}]\n`;
    refuses(() => parseDagText('bomb.yaml', text + 'name: x\nsteps: []\n'), /^bomb\.yaml: .*alias/i);
  });

  it('JSON errors name the file, line and column; a duplicate key is an error, not a silent last-one-wins', () => {
    refuses(() => parseDagText('etl.json', '{"name": "etl",\n "steps": [{"name": "a",}]}'), /^etl\.json:2:\d+: not valid JSON: Expected double-quoted property name$/);
    refuses(() => parseDagText('etl.json', '{"name": "etl",\n "steps": ['), /^etl\.json:2:\d+: not valid JSON: /);
    refuses(() => parseDagText('etl.json', '{"name": "etl",\n  "name": "x", "steps": []}'), /^etl\.json:2:3: a key given twice/);
    refuses(() => parseDagText('etl.json', '{"name": "etl",\n "steps": [{"name": "a", "command": tru}]}'), /^etl\.json:2:\d+: not valid JSON: Unexpected token/);
  });

  it('an empty file, or one that is not a mapping, is refused', () => {
    refuses(() => parseDagText('e.yaml', ' \n\n'), /^e\.yaml: the file is empty/);
    refuses(() => parseDagText('e.yaml', '# nothing but a comment\n'), /^e\.yaml: expected a mapping .* \(got null\)/);
    refuses(() => parseDagText('e.yaml', '- a\n- b\n'), /^e\.yaml: expected a mapping .* \(got a list\)/);
    refuses(() => parseDagText('e.json', '"etl"'), /^e\.json: expected a mapping .* \(got the text "etl"\)/);
  });

  it('a file that cannot be read names it (stdin is "-")', () => {
    refuses(() => readDagFile('/nonexistent/etl.yaml'), /^invalid FILE "\/nonexistent\/etl\.yaml": cannot read it \(ENOENT\)$/);
    const f = readDagFile('-', (name) => (name === '-' ? 'name: x\nsteps: []\n' : ''));
    assert.equal(f.name, 'stdin');
  });

  it('names with control characters are escaped in messages', () => {
    refuses(() => parseDagText('e\x1b[2J.yaml', ''), /^e\\x1b\[2J\.yaml: the file is empty/);
  });
});

describe('durations in a DAG file need a unit', () => {
  const withStep = (fields: string) => parseDagText('etl.yaml', `name: etl\nsteps:\n  - name: ok\n    command: "true"\n    timeout: 30s\n  - name: extract\n    command: "true"\n${fields}`);

  it('a bare number is refused, naming the step, the field and the line', () => {
    refuses(() => checkDagFile(withStep('    timeout: 30\n')), /^etl\.yaml: steps\[1\]\.timeout: a bare number \(30\) is ambiguous: give a unit, 30s for seconds or 30ms for milliseconds \(step "extract", line 8\)$/);
    refuses(() => checkDagFile(withStep('    retry:\n      baseDelay: 1.5\n')), /^etl\.yaml: steps\[1\]\.retry\.baseDelay: a bare number \(1\.5\) .* 1\.5s for seconds .*\(step "extract", line 9\)$/);
    refuses(() => checkDagFile(withStep('    retry:\n      maxDelay: "600"\n')), /^etl\.yaml: steps\[1\]\.retry\.maxDelay: a bare number \("600"\) .* 600s .*line 9\)$/);
  });

  it('durations with a unit (and files without durations) pass', () => {
    checkDagFile(withStep('    timeout: 1h30m\n    retry: {baseDelay: 500ms, maxDelay: 2m}\n'));
    checkDagFile(parseDagText('etl.yaml', ETL));
    // Not the CLI's to judge: the server names what is wrong with these.
    checkDagFile(parseDagText('x.yaml', 'name: x\nsteps: nope\n'));
    checkDagFile(parseDagText('x.yaml', 'name: x\nsteps: [1, null]\n'));
  });
});

describe('server errors as the file spells the field', () => {
  const f = parseDagText('etl.yaml', ETL);

  it('reads both spellings of a field into one path', () => {
    assert.deepEqual(fieldPath('steps[2].depends_on[0]', f.body), ['steps', 2, 'depends_on', 0]);
    assert.deepEqual(fieldPath('steps.2.depends_on.0', f.body), ['steps', 2, 'depends_on', 0]);
    assert.deepEqual(fieldPath('params.DATE', f.body), ['params', 'DATE']);
    // Digits index only a list: an env key "0" stays a key.
    const g = parseDagText('g.yaml', 'name: g\nsteps:\n  - name: a\n    env: {"0": x}\n');
    assert.deepEqual(fieldPath('steps.0.env.0', g.body), ['steps', 0, 'env', '0']);
    assert.equal(fieldName(['steps', 3, 'depends_on', 0]), 'steps[3].depends_on[0]');
  });

  it('names the file, the field, the step and the line', () => {
    assert.equal(
      describeServerError(f, 'steps[2].depends_on[0]', 'step "load" depends on "transfrm", which is not a step of this DAG'),
      'etl.yaml: steps[2].depends_on[0]: step "load" depends on "transfrm", which is not a step of this DAG (line 20)',
    );
    assert.equal(describeServerError(f, 'steps.1.bogus', 'unknown field'), 'etl.yaml: steps[1].bogus: unknown field (step "transform", line 11)');
    assert.equal(describeServerError(f, 'steps', 'a DAG needs at least one step'), 'etl.yaml: steps: a DAG needs at least one step (line 7)');
    assert.equal(describeServerError(f, 'body', 'larger than the 8 MiB limit'), 'etl.yaml: larger than the 8 MiB limit');
    assert.equal(describeServerError(f, undefined, 'something'), 'etl.yaml: something');
  });

  it('a value YAML read as a number where text is wanted gets the hint to quote it', () => {
    const g = parseDagText('g.yaml', 'name: g\nparams:\n  COUNT: 5\nsteps:\n  - name: a\n    command: "true"\n    env: {DEBUG: true}\n');
    assert.equal(describeServerError(g, 'params.COUNT', 'must be string'), 'g.yaml: params.COUNT: must be string; quote it in the file: "5" (line 3)');
    assert.equal(describeServerError(g, 'steps.0.env.DEBUG', 'must be string'), 'g.yaml: steps[0].env.DEBUG: must be string; quote it in the file: "true" (step "a", line 7)');
  });

  it('DagFileError is a UsageError (exit 2)', () => {
    assert.ok(new DagFileError('x') instanceof UsageError);
  });
});
