/**
 * What the README promises for `npm install -g --ignore-scripts .`: a `drover`
 * on PATH that runs this checkout from any directory. Installed into a
 * temporary prefix (npm links the directory: nothing in the checkout is
 * written, and nothing is fetched), then run from an unrelated directory.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';

const ROOT = resolve(import.meta.dirname, '../../..');

describe('e2e: npm install -g of the checkout', () => {
  const prefix = mkdtempSync(join(tmpdir(), 'drover-global-'));
  after(() => rmSync(prefix, { recursive: true, force: true }));

  it('gives a drover command that works from another directory', () => {
    const out = spawnSync('npm', ['install', '-g', '--ignore-scripts', '--no-audit', '--no-fund', '--offline', '--prefix', prefix, ROOT], { encoding: 'utf8', timeout: 120_000 });
    assert.equal(out.status, 0, out.stderr);
    assert.doesNotMatch(out.stderr, /npm warn/i, 'no warning to act on');
    // A link to this checkout, not a copy.
    assert.equal(realpathSync(join(prefix, 'lib', 'node_modules', 'drover')), realpathSync(ROOT));
    const elsewhere = join(prefix, 'elsewhere');
    mkdirSync(elsewhere);
    const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
    const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${join(prefix, 'bin')}:${process.env.PATH ?? ''}` };
    for (const k of Object.keys(env)) if (k.startsWith('DROVER_')) delete env[k];
    assert.equal(execFileSync('drover', ['--version'], { cwd: elsewhere, env, encoding: 'utf8' }).trim(), version);
    assert.match(execFileSync('drover', ['--help'], { cwd: elsewhere, env, encoding: 'utf8' }), /^Usage: drover /);
  });
});
