/**
 * Browser: paging through 10,000 tasks (keyset pages, Older/Newer, the back
 * button) and filtering them, with the filters held in the URL.
 * The tasks require a label no worker has, so they stay waiting.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { startCluster, type Cluster } from '../e2e/harness.js';
import { launchBrowser, openTab, screenshot, signIn, until, type Tab } from './browser-harness.js';

const N = 10_000;
const name = (i: number) => `bulk-${String(i).padStart(5, '0')}`;

async function rowIds(page: Page): Promise<string[]> {
  return page.locator('tr[data-task-id]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-task-id')!));
}

describe('browser: 10,000 tasks', () => {
  let c: Cluster;
  let browser: Browser;
  let tab: Tab;

  before(async () => {
    c = await startCluster({ workers: 0 });
    // Submitted 16 at a time over keep-alive connections, in order of i within each batch.
    for (let i = 0; i < N; i += 16) {
      await Promise.all(Array.from({ length: Math.min(16, N - i) }, (_, k) => c.api.submit({ name: name(i + k), command: 'true', requires: { pool: 'none' } })));
    }
    browser = await launchBrowser();
    tab = await openTab(browser, { colorScheme: 'dark' });
    await signIn(tab.page, c.url, c.api.token);
  });
  after(async () => {
    await browser?.close();
    await c?.close();
  });

  it('pages through all of them, 500 a page, newest first, with nothing missed or repeated', async () => {
    const { page } = tab;
    await page.goto(`${c.url}/tasks`);
    await page.locator('tr[data-task-id]').first().waitFor();
    await page.getByLabel('Per page').selectOption('500');
    await page.waitForURL(/limit=500/);
    await until('500 rows', async () => (await rowIds(page)).length === 500);
    const seen: string[] = [];
    const older = page.getByRole('button', { name: 'Older →' });
    for (let p = 1; ; p++) {
      const ids = await rowIds(page);
      assert.equal(ids.length, 500, `page ${p}`);
      assert.equal(await page.locator('.pager-info').innerText(), `Page ${p} · 500 tasks`);
      seen.push(...ids);
      if (p === 20) break;
      const last = ids[ids.length - 1];
      await older.click();
      await until(`page ${p + 1}`, async () => (await rowIds(page))[0]! < last! && !(await page.locator('.pager-info').innerText()).includes('loading'));
    }
    assert.equal(await older.isDisabled(), true, 'the last page has no Older');
    assert.equal(new Set(seen).size, N, 'every task once');
    assert.deepEqual(seen, [...seen].sort().reverse(), 'newest first across pages');
    await screenshot(page, 'tasks-page-20-dark');

    // Newer steps back one page; so does the browser's Back button.
    const p20 = await rowIds(page);
    await page.getByRole('button', { name: '← Newer' }).click();
    await until('page 19', async () => (await rowIds(page))[0] === seen[18 * 500]);
    await page.goBack();
    await until('back on page 20', async () => (await rowIds(page))[0] === p20[0]);
    await page.goBack();
    await until('back on page 19', async () => (await rowIds(page))[0] === seen[18 * 500]);
    assert.deepEqual(tab.problems, []);
  });

  it('filters by name prefix, id, creation time and state; the URL holds the filters', async () => {
    const { page } = tab;
    await page.goto(`${c.url}/tasks`);
    await page.getByLabel('Name starts with').fill('bulk-001');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.waitForURL(/name=bulk-001/);
    // The unfiltered first page also has 50 rows: wait for the filtered ones, not for a count.
    const filtered = async () => (await page.locator('.task-name').allInnerTexts()).every((n) => n.startsWith('bulk-001'));
    await until('the first 50 of 100 rows', async () => (await rowIds(page)).length === 50 && (await filtered()));
    const names = await page.locator('.task-name').allInnerTexts();
    assert.ok(names.every((n) => n.startsWith('bulk-001')), names.join(','));
    await page.getByRole('button', { name: 'Older →' }).click();
    await until('the second filtered page', async () => (await page.locator('.pager-info').innerText()) === 'Page 2 · 50 tasks');
    assert.equal(await page.getByRole('button', { name: 'Older →' }).isDisabled(), true, '100 match: two pages of 50');
    await screenshot(page, 'tasks-filtered-dark');

    // A shared URL opens the same view.
    const shared = page.url();
    const other = await openTab(browser);
    await other.page.goto(shared);
    // The session cookie belongs to the first tab's context: the second signs in and lands on the same view.
    await other.page.getByLabel('API token').fill(c.api.token);
    await other.page.getByRole('button', { name: 'Sign in' }).click();
    await until('the shared view', async () => (await rowIds(other.page)).length === 50);
    assert.equal(await other.page.getByLabel('Name starts with').inputValue(), 'bulk-001');
    await other.close();

    // By id, in any case: its beginning lists the tasks whose ids start so (ids made in the
    // same millisecond share their first characters), the whole id that one task.
    const target = (await c.api.req('GET', '/v1/tasks?name=bulk-04242&limit=1')).body.tasks[0].id as string;
    await page.getByRole('button', { name: 'Clear' }).click();
    await page.waitForURL((u) => !u.search.includes('name='));
    const prefix = target.slice(0, 12);
    await page.getByLabel('Task id').fill(prefix.toLowerCase());
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.waitForURL(new RegExp(`id=${prefix}$`));
    await until('tasks with that id prefix', async () => {
      const ids = await rowIds(page);
      return ids.length > 0 && ids.every((id) => id.startsWith(prefix)) && ids.includes(target);
    });
    await page.getByLabel('Task id').fill(target.toLowerCase());
    await page.getByRole('button', { name: 'Apply' }).click();
    await until('the one task', async () => {
      const ids = await rowIds(page);
      return ids.length === 1 && ids[0] === target;
    });
    assert.match(page.url(), new RegExp(`id=${target}`));

    // By creation time: all were created before now, none after.
    await page.getByRole('button', { name: 'Clear' }).click();
    await page.waitForURL((u) => !u.search.includes('id='));
    const local = (d: Date) => new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
    const soon = new Date(Date.now() + 120_000);
    await page.getByLabel('Created after').fill(local(soon));
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.waitForURL(/after=/);
    await page.getByText('No task matches these filters').waitFor();
    await page.getByLabel('Created after').fill('');
    await page.getByLabel('Created before').fill(local(soon));
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.waitForURL((u) => u.search.includes('before=') && !u.search.includes('after='));
    await until('tasks created before then', async () => (await rowIds(page)).length === 50);

    // By state: none of these has run.
    await page.getByRole('button', { name: 'Clear' }).click();
    await page.waitForURL((u) => !u.search.includes('before='));
    await page.getByLabel('State').selectOption('succeeded');
    await page.getByText('No task matches these filters').waitFor();
    await page.goBack();
    await until('back to unfiltered', async () => (await rowIds(page)).length === 50);
    assert.deepEqual(tab.problems, []);
  });
});
