/**
 * Browser: signing in with a token and with the one-click link (`#code=`,
 * removed from the address bar), a refused token's message, and sign-out
 * (the session ends on the server: the old cookie no longer works).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { startCluster, type Cluster } from '../e2e/harness.js';
import { launchBrowser, openTab, screenshot, signIn, waitLive, PHONE } from './browser-harness.js';

describe('browser: sign-in and sign-out', () => {
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

  it('a token signs in; the overview shows who is signed in; sign-out ends the session', async () => {
    const tab = await openTab(browser);
    const { page } = tab;
    const res = await page.goto(`${c.url}/tasks`);
    // The page is served under the CSP that the tabs' "no CSP violation" checks rely on.
    assert.match(res!.headers()['content-security-policy'] ?? '', /script-src 'self'; style-src 'self'/);
    // No session: the app sends the visitor to the sign-in page, remembering where they were going.
    await page.waitForURL(/\/sign-in\?next=%2Ftasks$/);
    await page.getByLabel('API token').waitFor();
    await screenshot(page, 'sign-in');

    await page.getByLabel('API token').fill('drv_not_a_token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('This token is not valid (unknown or revoked).').waitFor();
    assert.equal(await page.getByLabel('API token').getAttribute('aria-invalid'), 'true');
    await screenshot(page, 'sign-in-refused');

    await page.getByLabel('API token').fill(c.api.token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${c.url}/tasks`);
    await page.getByRole('heading', { name: 'Tasks' }).waitFor();
    await waitLive(page);
    assert.match(await page.locator('.user-menu').innerText(), /admin/);
    const cookies = await tab.context.cookies();
    const session = cookies.find((k) => k.name === 'drover_session');
    assert.ok(session, 'session cookie set');
    assert.equal(session.httpOnly, true);
    assert.equal(session.sameSite, 'Strict');
    // The page's scripts cannot read it.
    assert.equal(await page.evaluate(() => document.cookie.includes('drover_session')), false);

    // Keyboard: the first Tab reaches the skip link, later ones the page list; focus is visible; Enter follows.
    await page.locator('body').focus();
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Skip to content');
    const focusOn = async (label: string) => {
      for (let i = 0; i < 10; i++) {
        if ((await page.evaluate(() => document.activeElement?.textContent)) === label) return;
        await page.keyboard.press('Tab');
      }
      assert.fail(`Tab never reached ${label}`);
    };
    await focusOn('Workers');
    const outline = await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle);
    assert.notEqual(outline, 'none', 'a visible focus ring');
    await page.keyboard.press('Enter');
    await page.waitForURL(`${c.url}/workers`);
    await page.getByRole('heading', { name: 'Workers' }).waitFor();

    await page.getByRole('button', { name: 'Sign out' }).click();
    // To the sign-in page, which would bring them back here after signing in again.
    await page.waitForURL(`${c.url}/sign-in?next=%2Fworkers`);
    const me = await fetch(`${c.url}/v1/me`, { headers: { cookie: `drover_session=${session.value}` } });
    assert.equal(me.status, 401, 'the old cookie no longer signs anything in');
    await page.goto(`${c.url}/workers`);
    await page.waitForURL(/\/sign-in\?next=%2Fworkers$/);
    assert.deepEqual(tab.problems, []);
    await tab.close();
  });

  it('revoking the token ends its open dashboard: the tab goes to the sign-in page by itself', async () => {
    const t = await c.api.req('POST', '/v1/tokens', { name: 'bob', role: 'user', user: 'bob' });
    assert.equal(t.status, 201, t.text);
    const tab = await openTab(browser);
    await signIn(tab.page, c.url, t.body.secret);
    await waitLive(tab.page);
    const revoked = await c.api.req('DELETE', `/v1/tokens/${t.body.token.id}`);
    assert.equal(revoked.status, 200, revoked.text);
    // The server closes the stream; the app finds the session gone and says so by showing the sign-in page.
    await tab.page.waitForURL(/\/sign-in/);
    await tab.page.getByLabel('API token').waitFor();
    assert.deepEqual(tab.problems, []);
    await tab.close();
  });

  it('the one-click link signs in once, and the code leaves the address bar and history', async () => {
    const made = await c.api.req('POST', '/v1/login-codes');
    assert.equal(made.status, 201, made.text);
    const tab = await openTab(browser, { viewport: PHONE });
    const { page } = tab;
    await page.goto(`${c.url}${made.body.path}`);
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    assert.equal(new URL(page.url()).hash, '');
    await waitLive(page);
    await screenshot(page, 'overview-phone-after-link');
    // The sign-in entry was replaced (fragment dropped, then replaced by the overview): Back leaves the app.
    await page.goBack();
    assert.doesNotMatch(page.url(), /code=/);

    // Used: a second visit of the same link says so and offers the token form.
    const other = await openTab(browser);
    await other.page.goto(`${c.url}${made.body.path}`);
    await other.page.getByText(/This sign-in link has expired or was already used/).waitFor();
    assert.equal(new URL(other.page.url()).hash, '');
    await other.page.getByLabel('API token').waitFor();
    // A fresh link pasted into this open sign-in tab changes only the fragment (no page load): it still signs in.
    const fresh = await c.api.req('POST', '/v1/login-codes');
    await other.page.evaluate((hash) => {
      window.location.hash = hash;
    }, new URL(`${c.url}${fresh.body.path}`).hash);
    await other.page.getByRole('heading', { name: 'Overview' }).waitFor();
    assert.equal(new URL(other.page.url()).hash, '');
    assert.deepEqual(tab.problems, []);
    assert.deepEqual(other.problems, []);
    await other.close();
    await tab.close();
  });
});
