/**
 * Browser: DAG schedules on the Schedules pages, against a real server and
 * worker. The Add schedule form's "Run a DAG": with no DAG of one's own
 * (another user's is not offered, even to an admin) it says how to apply
 * one and creates nothing; with one, a bad KEY=VALUE line is named at the
 * parameters and nothing is sent, a parameter the DAG does not declare is
 * the server's 400 at the same field, and a good one creates a schedule
 * with `dag` and no task. The list shows it as "DAG name" (a link to the
 * DAG) beside a task schedule's command; its fired runs link to their DAG
 * runs with the run's state (the DAG fails unless the schedule's parameter
 * reached its step); Run now starts a DAG run and links to it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { Api, startCluster, type Cluster } from '../e2e/harness.js';
import { launchBrowser, openTab, screenshot, signIn, until, waitLive, type Tab } from './browser-harness.js';

/** Step `check` succeeds only when the run's TARGET is prod (the declared default is staging). */
const DAG = {
  name: 'nightly-build',
  params: { TARGET: 'staging' },
  steps: [
    { name: 'check', script: 'test "$DROVER_PARAM_TARGET" = prod' },
    { name: 'ship', command: 'true', depends_on: ['check'] },
  ],
};

describe('browser: DAG schedules', () => {
  let c: Cluster;
  let browser: Browser;
  let tab: Tab;
  let page: Page;
  /** POST /v1/schedules requests the page sent. */
  let creates = 0;

  const exists = async (name: string) => (await c.api.req('GET', `/v1/schedules/${name}`)).status === 200;
  const fillSchedule = async (name: string, expr: string) => {
    await page.getByLabel('Name', { exact: true }).fill(name);
    await page.getByLabel('Cron expression').fill(expr);
    await page.getByLabel('Run a DAG').check();
  };

  before(async () => {
    c = await startCluster({ workers: 1, slots: 4 });
    const t = await c.api.req('POST', '/v1/tokens', { name: 'alice', role: 'user', user: 'alice' });
    assert.equal(t.status, 201, t.text);
    const alice = new Api(c.url, t.body.secret);
    const a = await alice.req('POST', '/v1/dags', { name: 'alices-dag', steps: [{ name: 'one', command: 'true' }] });
    assert.equal(a.status, 201, a.text);
    const s = await c.api.req('POST', '/v1/schedules', { name: 'report', schedule: '0 6 * * *', task: { command: 'sh', args: ['-c', 'echo hello world'] } });
    assert.equal(s.status, 201, s.text);
    browser = await launchBrowser();
    tab = await openTab(browser);
    page = tab.page;
    page.on('request', (r) => {
      if (r.method() === 'POST' && r.url() === `${c.url}/v1/schedules`) creates++;
    });
    await signIn(page, c.url, c.api.token);
    await waitLive(page);
  });
  after(async () => {
    await browser?.close();
    await c?.close();
  });

  it('with no DAG of their own (another user’s is not offered to an admin), the form says how to apply one and creates nothing', async () => {
    await page.goto(`${c.url}/schedules/new`);
    await page.getByRole('heading', { name: 'Add a schedule' }).waitFor();
    assert.equal(await page.getByLabel('Run a task').isChecked(), true, 'a task by default');
    await fillSchedule('nightly', '*/3 * * * * *');
    const empty = page.getByTestId('schedule-dag-fields');
    await empty.getByText('You have no DAGs yet').waitFor();
    assert.match(await empty.innerText(), /drover dag apply FILE/);
    assert.equal(await page.getByLabel('Command', { exact: true }).count(), 0, 'the task template is not shown');

    const before = creates;
    await page.getByRole('button', { name: 'Add schedule' }).click();
    await page.getByTestId('error-s-dag').getByText('dag.name: choose the DAG each run starts').waitFor();
    assert.equal(creates, before, 'nothing sent');
    assert.equal(await exists('nightly'), false);
    assert.deepEqual(tab.problems, []);
  });

  it('creates a DAG schedule through the form: bad parameters at their field, then listed as a DAG schedule whose runs link to their DAG runs; Run now starts one', async () => {
    const applied = await c.api.req('POST', '/v1/dags', DAG);
    assert.equal(applied.status, 201, applied.text);
    await page.goto(`${c.url}/schedules/new`);
    await fillSchedule('nightly', '*/3 * * * * *');

    // Only the caller's own DAG is offered; choosing it shows what it declares.
    const select = page.getByLabel('DAG', { exact: true });
    await select.waitFor();
    assert.deepEqual(await select.locator('option').evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value)), ['', 'nightly-build']);
    await select.selectOption('nightly-build');
    const params = page.getByLabel('Parameters');
    await page.locator('#s-dagParams-hint').getByText(/takes TARGET \(default staging\)/).waitFor();

    // A line that is no KEY=VALUE: named by the form, at the field, focus there, nothing sent.
    const before = creates;
    await params.fill('TARGET=prod\nREGION');
    await page.getByRole('button', { name: 'Add schedule' }).click();
    const paramsError = page.getByTestId('error-s-dagParams');
    await paramsError.getByText('dag.params: line 2: expected KEY=VALUE').waitFor();
    // The focus moves in the frame after the error renders (use-field-errors.ts): wait for that frame, then check.
    await page.waitForFunction(() => document.activeElement?.id === 's-dagParams', null, { timeout: 2_000 }).catch(() => {});
    assert.equal(await page.evaluate(() => document.activeElement?.id), 's-dagParams', 'focus moves to the field');
    assert.equal(creates, before, 'nothing sent');

    // A parameter the DAG does not declare: the server's 400 names dag.params.REGION, shown at the same field.
    await params.fill('TARGET=prod\nREGION=eu');
    await paramsError.waitFor({ state: 'detached' });
    const refused = page.waitForResponse((r) => r.url() === `${c.url}/v1/schedules` && r.request().method() === 'POST');
    await page.getByRole('button', { name: 'Add schedule' }).click();
    assert.equal((await refused).status(), 400);
    await paramsError.getByText(/^dag\.params\.REGION: this DAG declares no parameter "REGION"/).waitFor();
    assert.equal(await exists('nightly'), false, 'nothing was created');
    await screenshot(page, 'schedule-form-dag-error');

    // The good one: created with `dag` and no task.
    await params.fill('TARGET=prod');
    await page.getByRole('button', { name: 'Add schedule' }).click();
    await page.waitForURL(`${c.url}/schedules`);
    const api = await c.api.req('GET', '/v1/schedules/nightly');
    assert.equal(api.status, 200, api.text);
    const schedule = api.body.schedule;
    assert.equal(schedule.task, null);
    assert.deepEqual(schedule.dag, { name: 'nightly-build', params: { TARGET: 'prod' } });
    assert.equal(schedule.schedule, '*/3 * * * * *');

    // Listed as a DAG schedule, beside the task schedule's command.
    const row = page.locator('tr[data-schedule="nightly"]');
    await row.waitFor();
    assert.equal(await row.getAttribute('data-runs'), 'dag');
    const target = row.getByTestId('schedule-target');
    assert.match(await target.innerText(), /^DAG nightly-build\s+TARGET=prod$/);
    assert.equal(await target.getByRole('link', { name: 'nightly-build' }).getAttribute('href'), '/dags/nightly-build');
    const report = page.locator('tr[data-schedule="report"]');
    assert.equal(await report.getAttribute('data-runs'), 'task');
    assert.equal(await report.getByTestId('schedule-target').innerText(), 'sh -c "echo hello world"');

    // A fired slot: a link to its DAG run (no task link), whose state shows as it ends; succeeded says the parameter reached the step.
    const last = row.getByTestId('schedule-last-run');
    const runLink = last.locator('a[data-dag-run-link]');
    await runLink.waitFor({ timeout: 15_000 });
    assert.equal(await last.locator('a[data-task-link]').count(), 0);
    await last.locator('[data-state="succeeded"]').waitFor({ timeout: 20_000 });
    const firedId = await runLink.getAttribute('data-dag-run-link');
    assert.ok(firedId);
    assert.equal(await runLink.getAttribute('href'), `/dag-runs/${firedId}`);
    const fired = (await c.api.req('GET', `/v1/dag-runs/${firedId}`)).body.run;
    assert.equal(fired.scheduleId, schedule.id);
    assert.ok(fired.scheduledAt, 'a slot’s run');
    assert.equal(fired.params.TARGET, 'prod');

    // Expanded: the DAG and its parameters in full (the row's line may cut them), and the recent runs are DAG runs too.
    await page.getByRole('button', { name: 'nightly', exact: true }).click();
    const detail = page.locator(`#schedule-detail-${schedule.id}`);
    const full = detail.getByTestId('schedule-target');
    assert.match(await full.innerText(), /^DAG nightly-build\s+TARGET=prod$/);
    assert.equal(await full.locator('code').evaluate((e) => e.scrollWidth <= e.clientWidth), true, 'the parameters are not cut');
    const runs = page.getByTestId('schedule-runs');
    await runs.locator('a[data-dag-run-link]').first().waitFor();
    assert.equal(await runs.locator('a[data-task-link]').count(), 0);
    await screenshot(page, 'schedules-dag');

    // Run now: a DAG run out of schedule, linked from the row; the link opens its page, where it succeeds.
    await page.getByRole('button', { name: 'Run schedule nightly now' }).click();
    const started = row.getByTestId('run-now-dag-run');
    await started.waitFor();
    const href = await started.getAttribute('href');
    const manualId = href?.match(/^\/dag-runs\/([0-9A-Z]{26})$/)?.[1];
    assert.ok(manualId, `link ${href}`);
    const manual = (await c.api.req('GET', `/v1/dag-runs/${manualId}`)).body.run;
    assert.equal(manual.scheduleId, schedule.id);
    assert.equal(manual.scheduledAt, null, 'no slot');
    assert.equal(manual.dag, 'nightly-build');
    await started.click();
    await page.waitForURL(`${c.url}/dag-runs/${manualId}`);
    await page.locator('[data-testid="run-state"] [data-state="succeeded"]').waitFor({ timeout: 30_000 });

    // The DAG link opens the DAG's page.
    await page.goBack();
    await row.waitFor();
    await target.getByRole('link', { name: 'nightly-build' }).click();
    await page.waitForURL(`${c.url}/dags/nightly-build`);
    await page.getByRole('heading', { name: 'nightly-build' }).waitFor();

    // Pausing stops it; its runs stay listed.
    await page.goto(`${c.url}/schedules`);
    await page.getByRole('button', { name: 'Pause schedule nightly' }).click();
    await row.getByTestId('schedule-state').getByText('paused').waitFor();
    await until('paused through the API', async () => (await c.api.req('GET', '/v1/schedules/nightly')).body.schedule.paused === true);
    await last.locator('a[data-dag-run-link]').waitFor();
    assert.deepEqual(tab.problems, []);
  });
});
