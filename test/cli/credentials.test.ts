/** Credential resolution order: flag > env > nearest .drover/credentials.json > default. */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DEFAULT_URL, findCredentialsFile, resolveConnection } from '../../src/cli/credentials.js';

describe('resolveConnection', () => {
  let root: string;
  let project: string;
  let deep: string;
  let creds: string;

  before(() => {
    root = realpathSync(mkdtempSync(join(tmpdir(), 'drover-creds-')));
    project = join(root, 'project');
    deep = join(project, 'a', 'b');
    mkdirSync(join(project, '.drover'), { recursive: true });
    mkdirSync(deep, { recursive: true });
    creds = join(project, '.drover', 'credentials.json');
    writeFileSync(creds, JSON.stringify({ url: 'http://127.0.0.1:7171', token: 'file-token' }));
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  it('falls back to the default url and no token', () => {
    const c = resolveConnection({ flags: {}, env: {}, cwd: root });
    assert.deepEqual(c, { url: DEFAULT_URL, token: null, urlSource: 'default', tokenSource: null, credentialsPath: null });
  });

  it('finds the nearest credentials file walking up from cwd', () => {
    assert.equal(findCredentialsFile(deep), creds);
    const c = resolveConnection({ flags: {}, env: {}, cwd: deep });
    assert.deepEqual(c, { url: 'http://127.0.0.1:7171', token: 'file-token', urlSource: 'file', tokenSource: 'file', credentialsPath: creds });
  });

  it('env beats the file, flags beat env', () => {
    const env = { DROVER_URL: 'http://env:1', DROVER_TOKEN: 'env-token' };
    const e = resolveConnection({ flags: {}, env, cwd: deep });
    assert.equal(e.url, 'http://env:1');
    assert.equal(e.token, 'env-token');
    assert.equal(e.tokenSource, 'env');
    const f = resolveConnection({ flags: { url: 'http://flag:2/', token: 'flag-token' }, env, cwd: deep });
    assert.equal(f.url, 'http://flag:2');
    assert.equal(f.token, 'flag-token');
    assert.equal(f.urlSource, 'flag');
    assert.equal(f.tokenSource, 'flag');
  });

  it('mixes sources per value', () => {
    const c = resolveConnection({ flags: {}, env: { DROVER_TOKEN: 'env-token' }, cwd: deep });
    assert.equal(c.url, 'http://127.0.0.1:7171');
    assert.equal(c.urlSource, 'file');
    assert.equal(c.token, 'env-token');
  });

  it('never sends the file token to a different server', () => {
    const c = resolveConnection({ flags: { url: 'http://elsewhere:7070' }, env: {}, cwd: deep });
    assert.equal(c.url, 'http://elsewhere:7070');
    assert.equal(c.token, null);
    const same = resolveConnection({ flags: { url: 'http://127.0.0.1:7171/' }, env: {}, cwd: deep });
    assert.equal(same.token, 'file-token');
  });

  it('treats empty env values as unset', () => {
    const c = resolveConnection({ flags: {}, env: { DROVER_URL: '', DROVER_TOKEN: '' }, cwd: deep });
    assert.equal(c.urlSource, 'file');
    assert.equal(c.tokenSource, 'file');
  });

  it('does not read the file when flags and env give everything', () => {
    const broken = join(root, 'broken');
    mkdirSync(join(broken, '.drover'), { recursive: true });
    writeFileSync(join(broken, '.drover', 'credentials.json'), '{not json');
    const c = resolveConnection({ flags: { url: 'http://x:1' }, env: { DROVER_TOKEN: 't' }, cwd: broken });
    assert.equal(c.credentialsPath, null);
    assert.throws(() => resolveConnection({ flags: {}, env: {}, cwd: broken }), /cannot read .*credentials\.json/);
  });
});
