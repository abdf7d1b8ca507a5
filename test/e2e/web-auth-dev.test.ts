/**
 * `drover dev` and the dashboard: it prints a one-click sign-in link whose
 * code signs a browser in once as the dev admin; `--open` hands that link to
 * the desktop's opener (a stand-in xdg-open on PATH here), or says there is none.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { startProc, stopAll, type Proc } from './harness.js';
import { rawRequest, sessionFromSetCookie } from './web-auth-client.js';

const LINK = /^Dashboard: (http:\/\/127\.0\.0\.1:\d+)\/sign-in#code=([A-Za-z0-9_-]{43})$/m;

describe('e2e: drover dev prints the dashboard sign-in link', () => {
  const dir = mkdtempSync(join(tmpdir(), 'drover-dev-web-'));
  after(async () => {
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Runs `drover dev` (no workers) until `ready` appears on its output. */
  const dev = async (extra: string[], env: Record<string, string>, ready: RegExp): Promise<{ proc: Proc; out: () => string }> => {
    const { proc } = await startProc(['dev', '--port', '0', '--workers', '0', '--dir', join(dir, 'data'), ...extra], env, ready);
    return { proc, out: () => proc.output() };
  };

  it('the link\'s code signs in once, as the admin; the code is only in the fragment', async () => {
    const { proc, out } = await dev([], {}, LINK);
    try {
      const m = LINK.exec(out())!;
      const [, url, code] = m;
      assert.match(out(), /valid 10 minutes/);
      const r = await rawRequest(url!, 'POST', '/v1/session', { origin: url!, body: { code } });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.role, 'admin');
      const cookie = `drover_session=${sessionFromSetCookie(r.headers['set-cookie'])}`;
      const me = await rawRequest(url!, 'GET', '/v1/me', { cookie });
      assert.equal(me.body.via, 'cookie');
      const again = await rawRequest(url!, 'POST', '/v1/session', { origin: url!, body: { code } });
      assert.equal(again.status, 401, 'single use');
    } finally {
      await proc.stop();
    }
  });

  it('--open runs xdg-open with the link', async () => {
    const bin = join(dir, 'bin');
    mkdirSync(bin, { recursive: true });
    const record = join(dir, 'opened.txt');
    // Shell builtins only: PATH holds nothing but this directory.
    writeFileSync(join(bin, 'xdg-open'), `#!/bin/sh\nprintf '%s\\n' "$1" > '${record}'\n`, { mode: 0o755 });
    const { proc, out } = await dev(['--open'], { PATH: bin }, /opened the dashboard with .*\n/);
    try {
      const link = /^Dashboard: (\S+)$/m.exec(out())![1]!;
      assert.match(out(), new RegExp(`drover dev: opened the dashboard with ${join(bin, 'xdg-open').replace(/[.]/g, '\\.')}`));
      // The opener is detached: wait for what it wrote.
      const deadline = Date.now() + 5000;
      let opened = '';
      while (!opened.endsWith('\n') && Date.now() < deadline) {
        try {
          opened = readFileSync(record, 'utf8');
        } catch {
          /* not yet */
        }
        if (!opened.endsWith('\n')) await new Promise((r) => setTimeout(r, 10));
      }
      assert.equal(opened, `${link}\n`);
    } finally {
      await proc.stop();
    }
  });

  it('--open without an opener says so and keeps running', async () => {
    const empty = join(dir, 'empty');
    mkdirSync(empty, { recursive: true });
    const { proc, out } = await dev(['--open'], { PATH: empty }, /--open: .*\n/);
    try {
      assert.match(out(), /^drover dev: --open: no xdg-open on PATH to open a browser with; open the link above yourself$/m);
      assert.match(out(), LINK);
      const url = LINK.exec(out())![1]!;
      assert.equal((await rawRequest(url, 'GET', '/healthz')).status, 200);
    } finally {
      await proc.stop();
    }
  });
});
