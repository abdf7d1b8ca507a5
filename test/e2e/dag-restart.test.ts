/**
 * A DAG run survives kill -9 of its server (issue 12, SQLite, real
 * processes): a → (b, c) → d → e, killed while b runs and c has ended (so
 * the release of d waits on b's end, which comes after the restart). The
 * server restarts on the same file and port, the agent reconnects and
 * re-attaches b (see LEASE), and the run completes: every step released
 * once, none before its dependencies ended, none skipped, each (task,
 * attempt) run once (dag-checks.ts); every step but b in exactly one attempt.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { durabilityProblems, expectStatus, histories, ledgerCommand, poll, readLedger, readRun, runEnded, send, waitFileSh } from './dag-checks.js';
import { startCluster, type Cluster } from './harness.js';

/**
 * Long against a restart (1-2 s on an idle machine, 8 s seen under a load of
 * 12 on 2 cores), so the running step is normally re-attached: the agent
 * stops it only when no server confirmed its lease for lease − grace − safety
 * (19 s here; core/lease.ts). If it was stopped anyway, the step's attempt is
 * lost and runs again, which the checks allow; the other steps run once.
 */
const LEASE = '30s';

describe('e2e: a DAG run across kill -9 of the server', () => {
  let c: Cluster | undefined;
  after(() => c?.close());

  it('completes after a restart on the same data: each step released once and run once', async (t) => {
    const t0 = Date.now();
    const at = (what: string) => t.diagnostic(`${what} at ${((Date.now() - t0) / 1000).toFixed(2)} s`);
    c = await startCluster({ workers: 0, serverArgs: ['--heartbeat', '500ms', '--lease', LEASE, '--log-level', 'warn'] });
    const cl = c;
    await cl.startWorker({ id: 'w1', slots: 4 });
    const ledger = join(cl.dir, 'ledger');
    const gate = join(cl.dir, 'gate');
    const step = (name: string, dependsOn: string[], then = '') => ({ name, ...ledgerCommand(ledger, then), ...(dependsOn.length ? { depends_on: dependsOn } : {}) });
    await expectStatus(cl.api, 'POST', '/v1/dags', 201, {
      name: 'restart-diamond',
      steps: [step('a', [], 'sleep 0.1'), step('b', ['a'], waitFileSh(gate)), step('c', ['a'], 'sleep 0.1'), step('d', ['b', 'c']), step('e', ['d'], 'sleep 0.1')],
    });
    const runId: string = (await expectStatus(cl.api, 'POST', '/v1/dags/restart-diamond/runs', 201, {})).run.id;

    const state = async () => Object.fromEntries((await readRun(cl.api, runId)).steps.map((s) => [s.name, s.state]));
    await poll('b running and c succeeded', async () => {
      const s = await state();
      return s.b === 'running' && s.c === 'succeeded';
    }, 20_000, 25);

    at('b running, c succeeded');
    await cl.server.stop('SIGKILL');
    await cl.startServer();
    await poll('w1 to reconnect', async () => (await send(cl.api, 'GET', '/v1/workers')).body.workers.some((w: any) => w.id === 'w1' && w.state === 'connected'), 10_000, 50);
    at('restarted, w1 reconnected');
    assert.deepEqual(await state(), { a: 'succeeded', b: 'running', c: 'succeeded', d: 'ready', e: 'ready' }, 'the restarted server holds the run where it was');

    writeFileSync(gate, '');
    const view = await runEnded(() => cl.api, runId, 30_000);
    at('run ended');
    const hs = await histories(cl.api, view);
    const ledgerLines = readLedger(ledger);
    assert.deepEqual(durabilityProblems(view, hs, ledgerLines), []);
    for (const h of hs) {
      if (h.step === 'b') {
        t.diagnostic(`b: attempts ${h.attempts.map((a) => `${a.state}${a.error ? ` (${a.error})` : ''}`).join(', ')}`);
        continue;
      }
      assert.deepEqual(h.attempts.map((a) => a.state), ['succeeded'], `${h.step}: one attempt: ${JSON.stringify(h)}`);
      assert.deepEqual(ledgerLines.get(h.taskId), [1], `${h.step} ran once`);
    }
  });
});
