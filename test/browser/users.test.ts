/**
 * Browser: what a user (not an admin) sees. Only their own tasks, in lists,
 * counts, the live stream and by URL; an admin sees the user's task but not
 * its env values (redacted by the server, nothing to reveal). Runs at phone
 * width in dark mode, so those layouts are exercised (and photographed) too.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { Api, startCluster, type Cluster } from '../e2e/harness.js';
import { launchBrowser, openTab, screenshot, signIn, waitLive, PHONE, type Tab } from './browser-harness.js';

describe('browser: a user sees only their own tasks', () => {
  let c: Cluster;
  let browser: Browser;
  let alice: Api;
  let tab: Tab;

  before(async () => {
    c = await startCluster({ workers: 1 });
    const t = await c.api.req('POST', '/v1/tokens', { name: 'alice', role: 'user', user: 'alice' });
    assert.equal(t.status, 201, t.text);
    alice = new Api(c.url, t.body.secret);
    browser = await launchBrowser();
    tab = await openTab(browser, { viewport: PHONE, colorScheme: 'dark' });
    await signIn(tab.page, c.url, alice.token);
    await waitLive(tab.page);
  });
  after(async () => {
    await browser?.close();
    await c?.close();
  });

  it('lists, counts and opens only the user’s own tasks', async () => {
    const { page } = tab;
    const adminTask = await c.api.submit({ name: 'admin-only', command: 'true' });
    const mine = await alice.submit({ name: 'alice-task', command: 'true', env: { TOKEN: 's3cret' } });
    await alice.waitDone(mine);
    await c.api.waitDone(adminTask);
    await page.goto(`${c.url}/tasks`);
    await page.locator(`tr[data-task-id="${mine}"][data-state="succeeded"]`).waitFor();
    assert.equal(await page.locator('tr[data-task-id]').count(), 1);
    assert.equal(await page.getByText('admin-only').count(), 0);
    // No owner filter for users.
    assert.equal(await page.getByLabel('Owner').count(), 0);
    await screenshot(page, 'tasks-phone-dark');

    await page.goto(`${c.url}/tasks/${adminTask}`);
    await page.getByRole('heading', { name: 'Task not found' }).waitFor();
    assert.equal(await page.getByText('admin-only').count(), 0);

    await page.getByRole('button', { name: 'Menu' }).click();
    await page.getByRole('link', { name: 'Overview' }).click();
    await page.getByTestId('count-total').getByText('1', { exact: true }).waitFor();
    assert.equal(await page.getByTestId('count-succeeded').innerText(), '1');
    await screenshot(page, 'overview-phone-dark');
    assert.deepEqual(tab.problems, []);

    // A list the server refuses (a user asking for another owner's tasks): its error, and no placeholder rows left under it.
    await page.goto(`${c.url}/tasks?owner=admin`);
    await page.getByRole('alert').getByText('Could not load tasks').waitFor();
    assert.equal(await page.locator('.skeleton-row').count(), 0);
    tab.problems.length = 0; // the refused request, as the browser logs it
  });

  it('the live stream brings the user’s new tasks and never an admin’s', async () => {
    const { page } = tab;
    await page.goto(`${c.url}/tasks`);
    await waitLive(page);
    await page.locator('tr[data-task-id]').first().waitFor();
    const before = await page.locator('tr[data-task-id]').count();
    // The admin's task is committed first; the stream is in commit order, so once the
    // user's later task is on screen, the admin's would have been too.
    const adminTask = await c.api.submit({ name: 'admin-live', command: 'true' });
    const mine = await alice.submit({ name: 'alice-live', command: 'true' });
    await page.locator(`tr[data-task-id="${mine}"]`).waitFor();
    await page.locator(`tr[data-task-id="${mine}"][data-state="succeeded"]`).waitFor();
    assert.equal(await page.locator(`tr[data-task-id="${adminTask}"]`).count(), 0);
    assert.equal(await page.locator('tr[data-task-id]').count(), before + 1);
    assert.deepEqual(tab.problems, []);
  });

  it('shows the workers to a user, without the admin’s Drain button', async () => {
    const { page } = tab;
    await page.goto(`${c.url}/workers`);
    await page.locator('tr[data-worker-id="w1"] [data-state="connected"]').waitFor();
    assert.equal(await page.getByRole('button', { name: /Drain/ }).count(), 0);
    await screenshot(page, 'workers-phone-dark');
    assert.deepEqual(tab.problems, []);
  });

  it('an admin sees the user’s task, with its env values withheld', async () => {
    const mine = (await alice.req('GET', '/v1/tasks?name=alice-task')).body.tasks[0].id as string;
    const admin = await openTab(browser, { colorScheme: 'dark' });
    await signIn(admin.page, c.url, c.api.token);
    await admin.page.goto(`${c.url}/tasks/${mine}`);
    await admin.page.getByText('Values are hidden: only the task’s owner can see them.').waitFor();
    assert.equal(await admin.page.getByRole('button', { name: 'Reveal values' }).count(), 0);
    assert.equal(await admin.page.getByTestId('env-value').innerText(), '••••••••');
    assert.equal(await admin.page.getByText('s3cret').count(), 0);
    await screenshot(admin.page, 'task-detail-dark-admin-redacted');
    // Submit again from the admin does not carry values it never had.
    await admin.page.getByRole('link', { name: 'Submit again' }).click();
    await admin.page.getByText(/environment values are hidden from you and were not copied/).waitFor();
    assert.equal(await admin.page.getByLabel('Environment').inputValue(), '');
    await screenshot(admin.page, 'submit-again-dark');
    assert.deepEqual(admin.problems, []);
    await admin.close();

    // The owner can reveal them.
    const { page } = tab;
    await page.goto(`${c.url}/tasks/${mine}`);
    await page.getByRole('button', { name: 'Reveal values' }).click();
    assert.equal(await page.getByTestId('env-value').innerText(), 's3cret');
    await screenshot(page, 'task-detail-phone-dark');
    assert.deepEqual(tab.problems, []);
  });
});
