/** Credential resolution order: flag > env > nearest .drover/credentials.json > default. */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DEFAULT_URL, findCredentialsFile, resolveConnection, userConfigDir } from '../../src/cli/credentials.js';

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

  it('an empty --url or --token is refused; an empty DROVER_URL or DROVER_TOKEN counts as unset', () => {
    assert.throws(() => resolveConnection({ flags: { token: '' }, env: { DROVER_TOKEN: 'env-token' }, cwd: deep }), /^UsageError: invalid --token "": expected an API token/);
    assert.throws(() => resolveConnection({ flags: { url: '' }, env: {}, cwd: deep }), /^UsageError: invalid --url "": expected a server URL/);
    const c = resolveConnection({ flags: {}, env: { DROVER_TOKEN: '', DROVER_URL: '' }, cwd: deep });
    assert.deepEqual([c.token, c.tokenSource], ['file-token', 'file']);
  });

  it('falls back to the default url and no token', () => {
    const c = resolveConnection({ flags: {}, env: {}, cwd: root });
    assert.deepEqual(c, { url: DEFAULT_URL, token: null, urlSource: 'default', tokenSource: null, credentialsPath: null, urlPath: null, anyCredentials: false });
  });

  it('finds the nearest credentials file walking up from cwd', () => {
    assert.equal(findCredentialsFile(deep), creds);
    const c = resolveConnection({ flags: {}, env: {}, cwd: deep });
    assert.deepEqual(c, { url: 'http://127.0.0.1:7171', token: 'file-token', urlSource: 'file', tokenSource: 'file', credentialsPath: creds, urlPath: creds, anyCredentials: true });
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

  it('the user config (drover login) comes after the nearest .drover file, and its token only goes to its url', () => {
    const cfg = join(root, 'xdg', 'drover');
    mkdirSync(cfg, { recursive: true });
    writeFileSync(join(cfg, 'credentials.json'), JSON.stringify({ url: 'http://login:1', token: 'user-token' }));
    assert.equal(userConfigDir({ XDG_CONFIG_HOME: join(root, 'xdg') }), cfg);
    assert.equal(userConfigDir({ HOME: '/home/u' }), '/home/u/.config/drover');
    assert.equal(userConfigDir({}), null);
    const outside = resolveConnection({ flags: {}, env: {}, cwd: root, userConfigDir: cfg });
    assert.deepEqual([outside.url, outside.token, outside.urlSource, outside.tokenSource, outside.credentialsPath], ['http://login:1', 'user-token', 'user', 'user', join(cfg, 'credentials.json')]);
    const inProject = resolveConnection({ flags: {}, env: {}, cwd: deep, userConfigDir: cfg });
    assert.deepEqual([inProject.url, inProject.token, inProject.urlSource], ['http://127.0.0.1:7171', 'file-token', 'file']);
    const otherUrl = resolveConnection({ flags: {}, env: { DROVER_URL: 'http://elsewhere:2' }, cwd: root, userConfigDir: cfg });
    assert.equal(otherUrl.token, null, 'a stored token never goes to another server');
    const env = resolveConnection({ flags: {}, env: { DROVER_TOKEN: 'env-token' }, cwd: root, userConfigDir: cfg });
    assert.deepEqual([env.url, env.token, env.tokenSource], ['http://login:1', 'env-token', 'env']);
  });
});
