/**
 * Browser: the Schedules page. A schedule firing every 2 s on a cluster with
 * one worker: listed with its next fire time, its runs appear (linked to
 * their tasks) without a reload, Pause and Resume change it (and the API
 * agrees), and Run now creates a task. The Add schedule form: the server's
 * next fire times while typing; a bad expression, a bad zone and a taken
 * name each shown at their field, creating nothing (checked through the
 * API); a good schedule's runs appear live; Remove (two steps) deletes it.
 * The form at phone width in dark mode.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { startCluster, type Cluster } from '../e2e/harness.js';
import { launchBrowser, openTab, screenshot, signIn, until, waitLive, PHONE, type Tab } from './browser-harness.js';

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

    // The run's link opens its task: the newest run's when clicked (one lands every 2 s, so maybe not taskId's).
    await link.click();
    await page.waitForURL(/\/tasks\/[0-9A-Z]{26}$/);
    const opened = await c.api.task(new URL(page.url()).pathname.slice('/tasks/'.length));
    assert.equal(opened.task.scheduleId, (await c.api.req('GET', '/v1/schedules/tick')).body.schedule.id);
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

  it('adds a schedule through the form: errors at their fields and nothing created, then runs live; removes it', async () => {
    const { page } = tab;
    await page.getByRole('link', { name: 'Schedules', exact: true }).click();
    await page.waitForURL(`${c.url}/schedules`);
    await page.getByRole('link', { name: 'Add schedule' }).click();
    await page.waitForURL(`${c.url}/schedules/new`);
    await page.getByRole('heading', { name: 'Add a schedule' }).waitFor();
    const expr = page.getByLabel('Cron expression');
    const exprError = page.getByTestId('error-s-schedule');
    const preview = page.getByTestId('cron-preview');
    const created = async (name: string) => (await c.api.req('GET', `/v1/schedules/${name}`)).status !== 404;

    // A bad expression: the server's reason at the field while typing, and again from the create, which is refused.
    await page.getByLabel('Name', { exact: true }).fill('form-tick');
    await expr.fill('61 * * * *');
    await exprError.getByText(/minute 61 is out of range/).waitFor();
    await preview.getByText(/No fire times/).waitFor();
    await page.getByLabel('Command', { exact: true }).fill('true');
    const refused = page.waitForResponse((r) => r.url() === `${c.url}/v1/schedules` && r.request().method() === 'POST');
    await page.getByRole('button', { name: 'Add schedule' }).click();
    assert.equal((await refused).status(), 400);
    await exprError.getByText(/minute 61 is out of range/).waitFor();
    assert.equal(await expr.getAttribute('aria-invalid'), 'true');
    // The focus moves in the frame after the error renders (use-field-errors.ts): wait for that frame, then check.
    await page.waitForFunction(() => document.activeElement?.id === 's-schedule', null, { timeout: 2_000 }).catch(() => {});
    assert.equal(await page.evaluate(() => document.activeElement?.id), 's-schedule', 'focus moves to the field');
    await screenshot(page, 'schedule-form-error');
    assert.equal(await created('form-tick'), false, 'nothing was created');
    assert.equal(page.url(), `${c.url}/schedules/new`);

    // A seconds field: the error goes and the next 5 times come from the server, 2 s apart.
    await expr.fill('*/2 * * * * *');
    await exprError.waitFor({ state: 'detached' });
    const times = preview.getByTestId('cron-preview-times').locator('time');
    await until('five next times', async () => (await times.count()) === 5);
    await preview.getByText('Next 5 fire times of */2 * * * * * in UTC').waitFor();
    const at = await times.evaluateAll((els) => els.map((e) => Date.parse(e.getAttribute('datetime') ?? '')));
    for (let i = 1; i < at.length; i++) assert.equal(at[i]! - at[i - 1]!, 2000, `times ${at.join(', ')}`);

    // A zone the server does not know: its reason at the zone field.
    const tz = page.getByLabel('Time zone');
    await tz.fill('Mars/Olympus');
    await page.getByTestId('error-s-tz').getByText(/unknown time zone/).waitFor();
    await tz.fill('UTC');
    await page.getByTestId('error-s-tz').waitFor({ state: 'detached' });

    // A name the caller already has: 409, shown at the name.
    await page.getByLabel('Name', { exact: true }).fill('tick');
    const taken = page.waitForResponse((r) => r.url() === `${c.url}/v1/schedules` && r.request().method() === 'POST');
    await page.getByRole('button', { name: 'Add schedule' }).click();
    assert.equal((await taken).status(), 409);
    await page.getByTestId('error-s-name').getByText(/already exists/).waitFor();
    assert.equal((await c.api.req('GET', '/v1/schedules')).body.schedules.length, 1, 'still only tick');
    await screenshot(page, 'schedule-form');

    // The good one: created, listed, and its runs appear on the page without a reload, linked to their tasks.
    await page.getByLabel('Name', { exact: true }).fill('form-tick');
    await page.getByRole('button', { name: 'Add schedule' }).click();
    await page.waitForURL(`${c.url}/schedules`);
    const api = await c.api.req('GET', '/v1/schedules/form-tick');
    assert.equal(api.status, 200, api.text);
    assert.deepEqual([api.body.schedule.schedule, api.body.schedule.tz, api.body.schedule.overlap, api.body.schedule.catchup], ['*/2 * * * * *', 'UTC', 'allow', 'latest']);
    assert.deepEqual([api.body.schedule.task.command, api.body.schedule.task.name], ['true', 'form-tick']);
    const row = page.locator('tr[data-schedule="form-tick"]');
    await row.waitFor();
    const link = row.locator('[data-testid="schedule-last-run"] a[data-task-link]');
    await link.waitFor({ timeout: 15_000 });
    await row.locator('[data-testid="schedule-last-run"] [data-state="succeeded"]').waitFor({ timeout: 15_000 });
    const taskId = await link.getAttribute('data-task-link');
    assert.ok(taskId);
    const run = await c.api.task(taskId);
    assert.equal(run.task.scheduleId, api.body.schedule.id);
    assert.ok(run.task.scheduledAt, 'a slot\'s run');
    await screenshot(page, 'schedules-added');
    await link.click();
    await page.waitForURL(/\/tasks\/[0-9A-Z]{26}$/);
    const opened = await c.api.task(new URL(page.url()).pathname.slice('/tasks/'.length));
    assert.equal(opened.task.scheduleId, api.body.schedule.id, 'the link opens a run of this schedule');
    await page.goBack();
    await row.waitFor();

    // Remove: the first press only arms the button; the second removes the schedule, and the API agrees.
    await page.getByRole('button', { name: 'Remove schedule form-tick' }).click();
    const confirm = page.getByRole('button', { name: 'Confirm: remove schedule form-tick' });
    await confirm.waitFor();
    assert.equal(await created('form-tick'), true, 'one press removes nothing');
    await confirm.click();
    await row.waitFor({ state: 'detached' });
    await until('focus on the page content after the row left', async () => (await page.evaluate(() => document.activeElement?.id)) === 'main');
    assert.equal(await created('form-tick'), false);
    assert.deepEqual((await c.api.req('GET', '/v1/schedules')).body.schedules.map((s: { name: string }) => s.name), ['tick']);
    assert.equal((await c.api.task(taskId)).task.id, taskId, 'its tasks stay');

    assert.deepEqual(tab.problems, []);
  });

  it('the form at phone width in dark mode: labelled fields, the next times, no sideways scrolling', async () => {
    const phone = await openTab(browser, { viewport: PHONE, colorScheme: 'dark' });
    try {
      const { page } = phone;
      await signIn(page, c.url, c.api.token);
      await page.goto(`${c.url}/schedules/new`);
      await page.getByLabel('Cron expression').fill('0 3 * * *');
      await page.getByLabel('Time zone').fill('Asia/Shanghai');
      await page.getByTestId('cron-preview').getByText('Next 5 fire times of 0 3 * * * in Asia/Shanghai').waitFor();
      await until('five next times', async () => (await page.getByTestId('cron-preview-times').locator('li').count()) === 5);
      for (const label of ['Name', 'Overlap', 'Catch-up', 'Max catch-up', 'Command', 'Arguments', 'Task name', 'Environment', 'Timeout per attempt', 'Retries']) {
        assert.equal(await page.getByLabel(label, { exact: true }).count(), 1, label);
      }
      assert.equal(await page.getByLabel('Max catch-up').isDisabled(), true, 'only with catch-up All');
      await page.getByLabel('Catch-up', { exact: true }).selectOption('all');
      assert.equal(await page.getByLabel('Max catch-up').isDisabled(), false);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      assert.ok(overflow <= 0, `the page scrolls sideways by ${overflow}px`);
      await screenshot(page, 'schedule-form-phone-dark');
      // The list too: its visually hidden "Actions" header once widened the page past the table's scroll box.
      const made = await c.api.req('POST', '/v1/schedules', { name: 'phone-width', schedule: '0 3 * * *', task: { command: 'true' } });
      assert.equal(made.status, 201, made.text);
      await page.goto(`${c.url}/schedules`);
      await page.locator('tr[data-schedule="phone-width"]').waitFor();
      const listOverflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      assert.ok(listOverflow <= 0, `the schedules list scrolls sideways by ${listOverflow}px`);
      assert.equal((await c.api.req('DELETE', '/v1/schedules/phone-width')).status, 200);
      assert.deepEqual(phone.problems, []);
    } finally {
      await phone.close();
    }
  });
});
