/**
 * Browser, against a real server and worker: a detail page whose refresh
 * fails (the server answering 503 for a while, as while its database
 * restarts) stays on screen as last loaded, with the error above it and a way
 * to try again, instead of being replaced by the error. What the reader was
 * looking at, a log paged back, is kept; the next refresh that succeeds
 * clears the error. The 503s come from the browser's network layer
 * (Playwright's route), for the detail's URL only.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Route } from 'playwright-core';
import { startCluster, type Cluster } from '../e2e/harness.js';
import { launchBrowser, openTab, signIn, until, waitLive, type Tab } from './browser-harness.js';

describe('browser: a failed refresh keeps the page', () => {
  let c: Cluster;
  let browser: Browser;
  let tab: Tab;

  before(async () => {
    c = await startCluster({ workers: 1 });
    browser = await launchBrowser();
    tab = await openTab(browser);
    await signIn(tab.page, c.url, c.api.token);
  });
  after(async () => {
    await browser?.close();
    await c?.close();
  });

  it('a task page whose refresh answers 503 keeps the task and its paged-back log, says so, and recovers', async () => {
    const { page } = tab;
    const go = join(c.dir, 'go-refresh');
    // Many chunks (one line per write, a pause between), then it waits for $GO, so it ends while the page is open.
    const script = 'i=1; while [ $i -le 150 ]; do echo "line $i"; i=$((i+1)); sleep 0.01; done; while [ ! -f "$GO" ]; do sleep 0.02; done; echo done';
    const id = await c.api.submit({ name: 'refresh-fails', script, env: { GO: go } });
    // The page opens once the 150 lines are stored, so it opens at the log's end with earlier pages to load.
    await until('the 150 lines stored', async () => {
      const r = await c.api.req('GET', `/v1/tasks/${id}/log-chunks?limit=32`);
      return r.status === 200 && r.body.chunks.some((ch: { data: string }) => Buffer.from(ch.data, 'base64').toString().includes('line 150'));
    });
    await page.goto(`${c.url}/tasks/${id}`);
    await waitLive(page);
    const log = page.getByTestId('log');
    await log.getByText('line 150').waitFor();
    await page.locator('.page-header [data-state="running"]').waitFor();
    const opened = (await log.innerText()).length;
    await page.getByRole('button', { name: 'Load earlier output' }).click();
    await until('the earlier page', async () => (await log.innerText()).length > opened);
    const paged = await log.innerText();

    // From now on the task's own URL answers 503 (the log's and the stream's do not).
    let refused = 0;
    const detail = (url: URL) => url.pathname === `/v1/tasks/${id}`;
    const refuse = async (route: Route) => {
      refused++;
      await route.fulfill({ status: 503, contentType: 'application/json', body: JSON.stringify({ error: { code: 'unavailable', message: 'database unavailable: restarting' } }) });
    };
    await page.route(detail, refuse);
    // The task ends: the live stream patches the page and asks for a refresh, which fails (and its retries).
    writeFileSync(go, '');
    await page.locator('.page-header [data-state="succeeded"]').waitFor();
    const notice = page.getByRole('alert').filter({ hasText: 'Could not refresh the task' });
    await notice.waitFor();
    assert.ok(refused >= 1);
    assert.match(await notice.innerText(), /database unavailable: restarting/);
    // Still the task's page, its log where the reader left it (the end of the run arrives through the tail).
    await page.getByRole('heading', { name: /refresh-fails/ }).waitFor();
    await log.getByText('done').waitFor();
    const kept = await log.innerText();
    assert.ok(kept.startsWith(paged.replace(/\s+$/, '')), 'the paged-back log was kept, not reloaded from its end');

    await page.unroute(detail, refuse);
    await notice.getByRole('button', { name: 'Try again' }).click();
    await notice.waitFor({ state: 'detached' });
    await page.locator('.attempts-table td', { hasText: 'exit 0' }).waitFor();
    assert.ok((await log.innerText()).startsWith(paged.replace(/\s+$/, '')), 'still kept after the refresh');
    // The only errors the tab saw are the 503s this test made (Chromium logs each one, without its URL).
    const made = (p: string) => p === `http 503: GET ${c.url}/v1/tasks/${id}` || /^console: Failed to load resource: the server responded with a status of 503\b/.test(p);
    assert.deepEqual(tab.problems.filter((p) => !made(p)), []);
    assert.equal(tab.problems.filter((p) => p.startsWith('console:')).length, refused);
  });
});
