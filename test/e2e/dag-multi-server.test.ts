/**
 * A DAG run on PostgreSQL with two servers (issue 12): start → 8 branches →
 * join → tail, one agent × 4 slots on each server, so 4 branches run on each
 * and their ends are written by both servers. The branches wait on a gate
 * and are let go together, so their ends race on the run; the join must be
 * released exactly once, after the last branch, and the run succeed
 * (dag-checks.ts). Three runs, started through alternate servers. The same
 * with kill -9 of a server is test/faults/dag-failover.test.ts.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { requirePostgres } from '../support/postgres.js';
import { durabilityProblems, expectStatus, gatedFanIn, histories, openGates, poll, readLedger, readRun, runEnded } from './dag-checks.js';
import { startPgPair, type PgPair } from './pg-pair.js';

const PG = await requirePostgres();
const WIDTH = 8;
const SLOTS = 4;

describe('e2e: a DAG run across two servers on one PostgreSQL database', { skip: PG ? false : 'DROVER_TEST_SKIP_POSTGRES=1' }, () => {
  let pair: PgPair;
  before(async () => {
    pair = await startPgPair({ serverArgs: ['--lease', '10s', '--heartbeat', '500ms'], slots: SLOTS });
  });
  after(() => pair?.close());

  it('branches ending on both servers at once release the join once; every run succeeds', async () => {
    const [a, b] = pair.servers;
    const ledger = join(pair.dir, 'ledger');
    await expectStatus(a.api, 'POST', '/v1/dags', 201, gatedFanIn('across', ledger, pair.dir, WIDTH));
    for (let round = 0; round < 3; round++) {
      const via = round % 2 === 0 ? a : b;
      const other = via === a ? b : a;
      const runId: string = (await expectStatus(via.api, 'POST', '/v1/dags/across/runs', 201, {})).run.id;
      await poll(`round ${round}: all ${WIDTH} branches running`, async () => (await readRun(other.api, runId)).steps.filter((s) => s.state === 'running').length === WIDTH, 30_000, 50);
      openGates(pair.dir, runId, Array.from({ length: WIDTH }, (_, i) => `b${i}`));
      const view = await runEnded(() => other.api, runId, 30_000);
      const hs = await histories(other.api, view);
      const ledgerLines = readLedger(ledger);
      assert.deepEqual(durabilityProblems(view, hs, ledgerLines), [], `round ${round}`);
      for (const h of hs) assert.deepEqual(h.attempts.map((x) => x.state), ['succeeded'], `round ${round}: ${h.step} ran in one attempt`);
      // Each agent's ends are written by its own server: the race was between the two servers.
      const enders = new Set(hs.filter((h) => /^b\d+$/.test(h.step)).map((h) => h.events.find((e) => e.to === 'succeeded')!.actor));
      assert.deepEqual([...enders].sort(), ['worker:wa', 'worker:wb'], `round ${round}: branches ended through both servers`);
    }
  });
});
