/**
 * Browser: `drover dev` as a new user runs it. It prints a one-click
 * dashboard link; opening it signs in (no token typed) and shows the local
 * workers online.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { startProc, stopAll } from '../e2e/harness.js';
import { launchBrowser, openTab, screenshot, waitLive } from './browser-harness.js';

describe('browser: drover dev', () => {
  let browser: Browser;
  let dir: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'drover-dev-'));
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  });

  it('prints a sign-in link that opens the signed-in dashboard', async () => {
    const { match } = await startProc(['dev', '--port', '0', '--dir', dir, '--workers', '1', '--slots', '2'], {}, /Dashboard: (http:\/\/127\.0\.0\.1:\d+\/sign-in#code=[A-Za-z0-9_-]+)/);
    const link = match![1]!;
    const tab = await openTab(browser);
    await tab.page.goto(link);
    await tab.page.getByRole('heading', { name: 'Overview' }).waitFor();
    await waitLive(tab.page);
    assert.equal(new URL(tab.page.url()).hash, '');
    await tab.page.getByTestId('workers-online').getByText('1').waitFor();
    await screenshot(tab.page, 'overview-drover-dev');
    assert.deepEqual(tab.problems, []);
    await tab.close();
  });
});
