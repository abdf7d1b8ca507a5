import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { cliName } from '../../src/cli/cli-name.js';

describe('cliName: how printed examples call the CLI', () => {
  const dir = mkdtempSync(join(tmpdir(), 'drover-cli-name-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const root = join(dir, 'drover');
  const elsewhere = join(dir, 'elsewhere', 'deep');
  const project = join(dir, 'project');
  mkdirSync(join(root, 'bin'), { recursive: true });
  mkdirSync(elsewhere, { recursive: true });
  mkdirSync(join(project, 'node_modules', '.bin'), { recursive: true });
  mkdirSync(join(project, 'src'), { recursive: true });
  writeFileSync(join(project, 'node_modules', '.bin', 'drover'), '');
  const onPath = join(dir, 'path-bin');
  mkdirSync(onPath);
  writeFileSync(join(onPath, 'drover'), '#!/bin/sh\n');
  chmodSync(join(onPath, 'drover'), 0o755);

  it('drover when it is on PATH', () => {
    assert.equal(cliName(onPath, elsewhere, root), 'drover');
  });
  it('npx drover in the package or in a project that has it installed', () => {
    assert.equal(cliName('', root, root), 'npx drover');
    assert.equal(cliName('', join(root, 'bin'), root), 'npx drover');
    assert.equal(cliName('', join(project, 'src'), root), 'npx drover');
  });
  it('elsewhere the package\'s own bin, never npx (which would fetch another package of that name)', () => {
    assert.equal(cliName('', elsewhere, root), `node ${join(root, 'bin', 'drover.js')}`);
  });
});
