/**
 * Browser: the live stream resumes from its cursor. The server is restarted
 * (same database, same port) under an open Tasks page; a task submitted
 * before the tab has reconnected still arrives (EventSource sends the last
 * cursor as Last-Event-ID), without a reload, and the header says what the
 * connection is doing meanwhile.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { startCluster, type Cluster } from '../e2e/harness.js';
import { launchBrowser, openTab, screenshot, signIn, waitLive } from './browser-harness.js';

describe('browser: the live stream across a server restart', () => {
  let c: Cluster;
  let browser: Browser;

  before(async () => {
    c = await startCluster({ workers: 0 });
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await c?.close();
  });

  it('reconnects from its cursor: a change made while it was away is shown, nothing twice', async () => {
    const tab = await openTab(browser);
    const { page } = tab;
    await signIn(page, c.url, c.api.token);
    const first = await c.api.submit({ name: 'before-restart', command: 'true', requires: { pool: 'none' } });
    await page.goto(`${c.url}/tasks`);
    await waitLive(page);
    await page.locator(`tr[data-task-id="${first}"]`).waitFor();
    await page.evaluate(() => ((window as unknown as { __sameDocument: boolean }).__sameDocument = true));

    await c.server.stop();
    await page.locator('[data-testid="live-status"][data-status="reconnecting"]').waitFor();
    await screenshot(page, 'tasks-reconnecting');
    await c.startServer();
    // Submitted at once: the tab is (most likely) still waiting to reconnect.
    const during = await c.api.submit({ name: 'while-away', command: 'true', requires: { pool: 'none' } });
    await page.locator(`tr[data-task-id="${during}"]`).waitFor({ timeout: 15_000 });
    await waitLive(page);
    const after = await c.api.submit({ name: 'after-reconnect', command: 'true', requires: { pool: 'none' } });
    await page.locator(`tr[data-task-id="${after}"]`).waitFor();
    const ids = await page.locator('tr[data-task-id]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-task-id')));
    assert.deepEqual(ids, [after, during, first], 'each task once, newest first');
    assert.equal(await page.evaluate(() => (window as unknown as { __sameDocument?: boolean }).__sameDocument), true, 'no reload');
    // Expected here: a request made while the server was down is refused, and a stream opened in the
    // moment between the old server ending its streams and closing its socket is answered 503 "the
    // server is shutting down" (Fastify runs the feed's preClose hook before it stops listening).
    const expected = (p: string) =>
      p.includes('net::ERR_CONNECTION_REFUSED') ||
      /^http 503: GET http:\/\/127\.0\.0\.1:\d+\/v1\/stream\b/.test(p) ||
      p === 'console: Failed to load resource: the server responded with a status of 503 (Service Unavailable)';
    assert.deepEqual(tab.problems.filter((p) => !expected(p)), []);
    await tab.close();
  });
});
