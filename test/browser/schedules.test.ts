/**
 * Browser: the Schedules page. A schedule firing every 2 s on a cluster with
 * one worker: listed with its next fire time, its runs appear (linked to
 * their tasks) without a reload, Pause and Resume change it (and the API
 * agrees), and Run now creates a task.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { startCluster, type Cluster } from '../e2e/harness.js';
import { launchBrowser, openTab, screenshot, signIn, until, waitLive, type Tab } from './browser-harness.js';

describe('browser: schedules page', () => {
  let c: Cluster;
  let browser: Browser;
  let tab: Tab;

  before(async () => {
    c = await startCluster({ workers: 1 });
    const r = await c.api.req('POST', '/v1/schedules', { name: 'tick', schedule: '*/2 * * * * *', task: { command: 'true' } });
    assert.equal(r.status, 201, r.text);
    browser = await launchBrowser();
    tab = await openTab(browser);
    await signIn(tab.page, c.url, c.api.token);
    await waitLive(tab.page);
  });
  after(async () => {
    await browser?.close();
    await c?.close();
  });

  it('lists a schedule, its runs, and pauses, resumes and runs it', async () => {
    const { page } = tab;
    await page.getByRole('link', { name: 'Schedules', exact: true }).click();
    await page.waitForURL(`${c.url}/schedules`);
    await page.getByRole('heading', { name: 'Schedules' }).waitFor();
    const row = page.locator('tr[data-schedule="tick"]');
    await row.waitFor();
    assert.match(await row.innerText(), /\*\/2 \* \* \* \* \*/);
    assert.match(await row.innerText(), /UTC/);
    await row.locator('[data-testid="schedule-next"] time').waitFor();
    assert.equal(await row.getByTestId('schedule-state').innerText(), 'active');

    // A run appears without a reload, with its task's state and a link to it.
    const link = row.locator('[data-testid="schedule-last-run"] a[data-task-link]');
    await link.waitFor({ timeout: 15_000 });
    const taskId = await link.getAttribute('data-task-link');
    assert.ok(taskId);
    await row.locator('[data-testid="schedule-last-run"] [data-state="succeeded"]').waitFor({ timeout: 15_000 });

    // Expanding shows the next 5 times and the recent runs.
    await page.getByRole('button', { name: 'tick', exact: true }).click();
    const next = page.getByTestId('schedule-next-times').locator('li');
    await until('five next times', async () => (await next.count()) === 5);
    await page.getByTestId('schedule-runs').locator('a[data-task-link]').first().waitFor();
    await screenshot(page, 'schedules');

    // The run's link opens its task.
    await link.click();
    await page.waitForURL(`${c.url}/tasks/${taskId}`);
    await page.goBack();
    await row.waitFor();

    // Pause: the row says so, and so does the API.
    await page.getByRole('button', { name: 'Pause schedule tick' }).click();
    await row.locator('[data-testid="schedule-state"]').getByText('paused').waitFor();
    assert.equal(await row.getAttribute('data-paused'), 'true');
    const paused = await c.api.req('GET', '/v1/schedules/tick');
    assert.equal(paused.body.schedule.paused, true);
    assert.equal(paused.body.schedule.nextFireAt, null);
    await screenshot(page, 'schedules-paused');

    // Resume.
    await page.getByRole('button', { name: 'Resume schedule tick' }).click();
    await row.locator('[data-testid="schedule-state"]').getByText('active').waitFor();
    await row.locator('[data-testid="schedule-next"] time').waitFor();
    const resumed = await c.api.req('GET', '/v1/schedules/tick');
    assert.equal(resumed.body.schedule.paused, false);
    assert.ok(resumed.body.schedule.nextFireAt);

    // Run now: a task out of schedule (scheduledAt null), linked from the row.
    await page.getByRole('button', { name: 'Run schedule tick now' }).click();
    const started = row.getByTestId('run-now-task');
    await started.waitFor();
    const href = await started.getAttribute('href');
    const manualId = href?.replace('/tasks/', '');
    assert.ok(manualId);
    const t = await c.api.task(manualId);
    assert.equal(t.task.scheduledAt, null);
    assert.equal(t.task.scheduleId, resumed.body.schedule.id);
    await started.click();
    await page.waitForURL(`${c.url}/tasks/${manualId}`);

    assert.deepEqual(tab.problems, []);
  });
});
