/**
 * Browser tests: headless Chromium (Debian's `chromium`, driven by
 * playwright-core) against a real `drover server` and real `drover worker`
 * processes (test/e2e/harness.ts). Each page records what must never happen
 * in the dashboard: a console error, an uncaught exception, or a CSP
 * violation (the server's CSP forbids inline scripts and styles), and the
 * tests assert that list is empty. Screenshots go to test-artifacts/ at the
 * package root (ignored by git).
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM = process.env.DROVER_CHROMIUM ?? '/usr/bin/chromium';
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];

const ROOT = resolve(import.meta.dirname, '../../..');
export const ARTIFACTS = join(ROOT, 'test-artifacts');
const WEB_DIST = join(ROOT, 'web', 'dist', 'index.html');

export const DESKTOP = { width: 1280, height: 860 } as const;
export const PHONE = { width: 390, height: 844 } as const;

export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(WEB_DIST)) throw new Error(`the dashboard is not built (${WEB_DIST} missing): run npm run build:web`);
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} missing: install Debian's chromium package (apt-get install -y chromium), as .ci/run does`);
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}

export interface TabOptions {
  viewport?: { width: number; height: number };
  colorScheme?: 'light' | 'dark';
}

export interface Tab {
  context: BrowserContext;
  page: Page;
  /** Console errors, page errors, CSP violations and 5xx answers seen so far. */
  problems: string[];
  close(): Promise<void>;
}

export async function openTab(browser: Browser, opts: TabOptions = {}): Promise<Tab> {
  const context = await browser.newContext({ viewport: opts.viewport ?? DESKTOP, colorScheme: opts.colorScheme ?? 'light', reducedMotion: 'reduce' });
  const page = await context.newPage();
  const problems: string[] = [];
  // Init scripts run through the DevTools protocol, outside the page's CSP.
  await page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) => console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`));
  });
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    const text = m.text();
    // Chromium logs every 4xx answer as a failed resource; the app expects some (a 401 says "no session", a 400 a bad
    // field). Server errors are recorded from the responses below instead.
    if (/^Failed to load resource: the server responded with a status of 4\d\d/.test(text)) return;
    problems.push(`console: ${text}`);
  });
  page.on('response', (r) => {
    if (r.status() >= 500) problems.push(`http ${r.status()}: ${r.request().method()} ${r.url()}`);
  });
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  return { context, page, problems, close: () => context.close() };
}

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true });
  // From the top: a full-page capture of a scrolled page draws the sticky header in the middle.
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}

/** Signs in through the form, as a person would. */
export async function signIn(page: Page, url: string, token: string): Promise<void> {
  await page.goto(`${url}/sign-in`);
  await page.getByLabel('API token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
}

/** Waits until the live stream says it is connected. */
export async function waitLive(page: Page): Promise<void> {
  await page.locator('[data-testid="live-status"][data-status="live"]').waitFor();
}

/** Polls `fn` until it returns a value other than undefined/false, or throws after `timeoutMs`. */
export async function until<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
