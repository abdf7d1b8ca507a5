/** `drover dev --open`: which opener is used, found on PATH only. */
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { findOpener, openerName, openInBrowser } from '../../src/cli/open-browser.js';

describe('open-browser', () => {
  const dir = mkdtempSync(join(tmpdir(), 'drover-open-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('open on macOS, xdg-open elsewhere', () => {
    assert.equal(openerName('darwin'), 'open');
    assert.equal(openerName('linux'), 'xdg-open');
    assert.equal(openerName('freebsd'), 'xdg-open');
  });

  it('takes the first executable on PATH; skips relative entries, missing and non-executable files', () => {
    const exec = new Set(['/b/xdg-open', '/c/xdg-open', 'rel/xdg-open']);
    assert.equal(findOpener('linux', 'rel:/a:/b:/c', (p) => exec.has(p)), '/b/xdg-open');
    assert.equal(findOpener('linux', '', (p) => exec.has(p)), null);
    assert.equal(findOpener('linux', undefined, (p) => exec.has(p)), null);
    assert.equal(findOpener('darwin', '/b:/c', (p) => exec.has(p)), null);

    const bin = join(dir, 'bin');
    mkdirSync(bin);
    writeFileSync(join(bin, 'xdg-open'), '#!/bin/sh\n');
    assert.equal(findOpener('linux', bin), null, 'not executable');
    chmodSync(join(bin, 'xdg-open'), 0o755);
    assert.equal(findOpener('linux', bin), join(bin, 'xdg-open'));
    mkdirSync(join(dir, 'd', 'xdg-open'), { recursive: true });
    assert.equal(findOpener('linux', join(dir, 'd')), null, 'a directory');
  });

  it('runs the opener with the URL as its one argument, or says there is none', async () => {
    const bin = join(dir, 'bin2');
    mkdirSync(bin);
    const out = join(dir, 'opened.txt');
    writeFileSync(join(bin, 'xdg-open'), `#!/bin/sh\nprintf '%s\\n' "$#" "$1" > '${out}'\n`, { mode: 0o755 });
    const url = 'http://127.0.0.1:7070/sign-in#code=abc';
    const r = await openInBrowser(url, { PATH: bin }, 'linux');
    assert.deepEqual(r, { ok: true, opener: join(bin, 'xdg-open') });
    // Detached: poll for the file it writes.
    const deadline = Date.now() + 5000;
    let text = '';
    while (Date.now() < deadline) {
      try {
        text = readFileSync(out, 'utf8');
        if (text.endsWith('\n') && text.split('\n').length >= 3) break;
      } catch {
        /* not yet */
      }
      await new Promise((res) => setTimeout(res, 10));
    }
    assert.equal(text, `1\n${url}\n`);

    const none = await openInBrowser(url, { PATH: join(dir, 'nothing') }, 'linux');
    assert.deepEqual(none, { ok: false, reason: 'no xdg-open on PATH to open a browser with' });
  });
});
