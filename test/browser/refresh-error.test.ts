/**
 * Browser, against a real server and worker: a detail page (a task, a DAG
 * run), the overview's widgets or a list page whose refresh fails (the
 * server answering 503 for a while, as while its database restarts) stays
 * on screen as last loaded, with the error above it and a way to try again,
 * instead of being replaced by the error. What the reader was looking at, a
 * log paged back, is kept; the next refresh that succeeds clears the error.
 * The 503s come from the browser's network layer (Playwright's route), for
 * the refreshed URLs only.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page, Route } from 'playwright-core';
import { startCluster, type Cluster } from '../e2e/harness.js';
import { launchBrowser, openTab, signIn, until, waitLive, type Tab } from './browser-harness.js';

/** From now on, GET `pathname` answers 503 in this page (the server's error shape), until `stop`. */
async function refuse(page: Page, pathname: string): Promise<{ count(): number; stop(): Promise<void> }> {
  let n = 0;
  const match = (url: URL) => url.pathname === pathname;
  const handler = async (route: Route) => {
    n++;
    await route.fulfill({ status: 503, contentType: 'application/json', body: JSON.stringify({ error: { code: 'unavailable', message: 'database unavailable: restarting' } }) });
  };
  await page.route(match, handler);
  return { count: () => n, stop: () => page.unroute(match, handler) };
}

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
    // Counted in output lines, not characters: if this page reaches the start, the marker ("earlier
    // output not loaded") goes, and the page may hold fewer characters than the marker.
    const lines = async () => (await log.innerText()).match(/^line \d+$/gm)?.length ?? 0;
    const opened = await lines();
    await page.getByRole('button', { name: 'Load earlier output' }).click();
    await until('the earlier page', async () => (await lines()) > opened);
    const paged = (await log.innerText()).trimEnd();

    // From now on the task's own URL answers 503 (the log's and the stream's do not).
    const refused = await refuse(page, `/v1/tasks/${id}`);
    // The task ends: the live stream patches the page and asks for a refresh, which fails (and its retries).
    writeFileSync(go, '');
    await page.locator('.page-header [data-state="succeeded"]').waitFor();
    const notice = page.getByRole('alert').filter({ hasText: 'Could not refresh the task' });
    await notice.waitFor();
    assert.ok(refused.count() >= 1);
    assert.match(await notice.innerText(), /database unavailable: restarting/);
    // Still the task's page, its log where the reader left it (the end of the run arrives through the tail).
    await page.getByRole('heading', { name: /refresh-fails/ }).waitFor();
    await log.getByText('done').waitFor();
    const kept = await log.innerText();
    assert.ok(kept.startsWith(paged), 'the paged-back log was kept, not reloaded from its end');

    await refused.stop();
    await notice.getByRole('button', { name: 'Try again' }).click();
    await notice.waitFor({ state: 'detached' });
    await page.locator('.attempts-table td', { hasText: 'exit 0' }).waitFor();
    assert.ok((await log.innerText()).startsWith(paged), 'still kept after the refresh');
    assertOnlyMade503s([`/v1/tasks/${id}`]);
  });

  it('a DAG run page whose refresh answers 503 keeps its graph, says so, and recovers', async () => {
    const { page } = tab;
    const go = join(c.dir, 'go-dag');
    const dag = await c.api.req('POST', '/v1/dags', {
      name: 'refresh-dag',
      steps: [
        { name: 'a', script: 'while [ ! -f "$GO" ]; do sleep 0.02; done', env: { GO: go } },
        { name: 'b', command: 'true', depends_on: ['a'] },
      ],
    });
    assert.equal(dag.status, 201, dag.text);
    const started = await c.api.req('POST', '/v1/dags/refresh-dag/runs', {});
    assert.equal(started.status, 201, started.text);
    const runId: string = started.body.run.id;
    await page.goto(`${c.url}/dag-runs/${runId}`);
    await waitLive(page);
    const node = (step: string) => page.locator(`[data-testid="dag-graph"] [data-step="${step}"]`);
    await node('b').waitFor();
    await page.locator('[data-testid="run-state"] [data-state="running"]').waitFor();

    const refused = await refuse(page, `/v1/dag-runs/${runId}`);
    // Step a ends and b runs: the live stream asks the run page for a refresh, which fails (and its retries).
    writeFileSync(go, '');
    const notice = page.getByRole('alert').filter({ hasText: 'Could not refresh the run' });
    await notice.waitFor();
    assert.ok(refused.count() >= 1);
    assert.match(await notice.innerText(), /database unavailable: restarting/);
    // Still the run's page: its graph, both nodes.
    await node('a').waitFor();
    await node('b').waitFor();

    await refused.stop();
    await notice.getByRole('button', { name: 'Try again' }).click();
    await page.locator('[data-testid="run-state"] [data-state="succeeded"]').waitFor();
    await notice.waitFor({ state: 'detached' });
    assertOnlyMade503s([`/v1/dag-runs/${runId}`]);
  });

  it('the overview whose widgets\' refreshes answer 503 keeps its counts, charts and workers, says so, and recovers', async () => {
    const { page } = tab;
    await page.goto(`${c.url}/`);
    await waitLive(page);
    await page.getByTestId('workers-online').getByText('1').waitFor();
    const total = page.getByTestId('count-total');
    // The tiles show a placeholder until the counts have loaded: the number once they have.
    const { before } = await until('the counts loaded', async () => {
      const text = (await total.innerText()).trim();
      return /^\d+$/.test(text) ? { before: Number(text) } : undefined;
    });
    const chart = page.getByRole('img', { name: /Attempts started and tasks finished per minute/ });
    await chart.waitFor();

    const paths = ['/v1/stats/counts', '/v1/stats/minutes', '/v1/workers'];
    const refused = await Promise.all(paths.map((p) => refuse(page, p)));
    // A task that ends asks the counts (0.4 s) and the charts (5-15 s) for a refresh; a second worker, the workers.
    const id = await c.api.submit({ command: 'true' });
    await c.startWorker({ id: 'refresh-w2', slots: 1 });
    for (const what of ['the counts', 'the activity charts', 'the workers']) {
      const notice = page.getByRole('alert').filter({ hasText: `Could not refresh ${what}` });
      await notice.waitFor({ timeout: 40_000 });
      assert.match(await notice.innerText(), /database unavailable: restarting/);
    }
    for (const r of refused) assert.ok(r.count() >= 1);
    // Each widget still shows what it last loaded.
    await chart.waitFor();
    assert.equal(await page.getByRole('img', { name: /Time from submit to first start/ }).count(), 1);
    assert.equal(Number(await total.innerText()), before);
    // (The live stream patches the workers' rows in place: 1 or 2 online, never the error in their place.)
    assert.match(await page.getByTestId('workers-online').innerText(), /^[12]\s+online/);

    await Promise.all(refused.map((r) => r.stop()));
    // Try again on each notice (one at a time: a notice goes once its refresh succeeds).
    const notices = page.getByRole('alert').filter({ hasText: 'Could not refresh' });
    await until('every refresh notice gone after Try again', async () => {
      if ((await notices.count()) === 0) return true;
      await notices.first().getByRole('button', { name: 'Try again' }).click({ timeout: 2_000 }).catch(() => undefined);
      return false;
    });
    assert.equal(await page.getByRole('alert').count(), 0);
    await total.getByText(String(before + 1), { exact: true }).waitFor();
    await page.getByTestId('workers-online').getByText('2').waitFor();
    assert.equal((await c.api.waitDone(id)).task.state, 'succeeded');
    assertOnlyMade503s(paths);
  });

  it('a list page (Workers) whose refresh answers 503 keeps its rows, says so, and recovers', async () => {
    const { page } = tab;
    await page.goto(`${c.url}/workers`);
    await waitLive(page);
    const rows = page.locator('tr[data-worker-id]');
    await until('the workers listed', async () => (await rows.count()) >= 1);
    const listed = await rows.count();

    const refused = await refuse(page, '/v1/workers');
    // A worker joins: the stream asks the list for a refresh, which fails (and its retries).
    await c.startWorker({ id: 'refresh-w3', slots: 1 });
    const notice = page.getByRole('alert').filter({ hasText: 'Could not refresh the workers' });
    await notice.waitFor();
    assert.ok(refused.count() >= 1);
    assert.match(await notice.innerText(), /database unavailable: restarting/);
    assert.ok((await rows.count()) >= listed, 'the rows stay');
    assert.equal(await page.getByText('Could not load workers').count(), 0);

    await refused.stop();
    await notice.getByRole('button', { name: 'Try again' }).click();
    await notice.waitFor({ state: 'detached' });
    await page.locator('tr[data-worker-id="refresh-w3"]').waitFor();
    assertOnlyMade503s(['/v1/workers']);
  });

  /** The only problems the tab saw are the 503s these tests made (Chromium logs each one without its URL). */
  const made: string[] = [];
  function assertOnlyMade503s(paths: string[]): void {
    made.push(...paths);
    const ours = (p: string) => made.some((path) => p === `http 503: GET ${c.url}${path}` || p.startsWith(`http 503: GET ${c.url}${path}?`)) || /^console: Failed to load resource: the server responded with a status of 503\b/.test(p);
    assert.deepEqual(tab.problems.filter((p) => !ours(p)), []);
  }
});
