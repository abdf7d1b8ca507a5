/**
 * Fault: kill -9 of one of two servers on PostgreSQL in the middle of a DAG
 * run (issue 12: "a DAG run's progress survives ... a failover ... and no
 * step is released twice"). start → 8 branches → join → tail; one agent × 4
 * slots on each server (each lists the other second), so 4 branches run
 * under each server, each held by its own gate (dag-checks.ts gatedFanIn).
 * The run is started through A, which is then killed:
 *
 * 1. while every branch runs: A's agent moves to B and re-attaches its
 *    attempts; then every gate opens and every end is written by B;
 * 2. between the ends of A's agent's branches: the first is let go and its end
 *    committed by A (seen through B); the second is let go and A is killed
 *    0-60 ms later (its exit is then in flight to A, or lost with A and re-sent
 *    by the agent to B, or sent to B); then the rest are let go and their ends
 *    are written by B.
 *
 * Pass criterion, read through B (dag-checks.ts): the run succeeded; every
 * step succeeded, none skipped; each step released once (the join after the
 * last branch), none early; earlier attempts (if any) lost, never failed; no
 * (task, attempt) ran twice. Case 1: no branch ended before the kill, and
 * every step ran in one attempt (the lease, 10 s, is long against a move to a
 * live server). Case 2: the first branch's end was written before the kill
 * and the last two after it.
 *
 * In this suite rather than test/e2e/: a kill -9 and an agent's move, about
 * 15 s per case on this machine; the case without a kill is
 * test/e2e/dag-multi-server.test.ts.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { durabilityProblems, expectStatus, gatedFanIn, histories, openGates, poll, readLedger, readRun, runEnded, type StepHistory } from '../e2e/dag-checks.js';
import { startPgPair, type PgPair } from '../e2e/pg-pair.js';
import { PG_SKIP_REASON, requirePostgres } from '../support/postgres.js';
import { FAULTS_SKIP, secs } from './support.js';

const PG = FAULTS_SKIP ? false : await requirePostgres();
const WIDTH = 8;
const SLOTS = 4;
const SERVER_ARGS = ['--lease', '10s', '--heartbeat', '500ms'];

const endedAt = (h: StepHistory): number => Date.parse(h.events.find((e) => e.to === 'succeeded')!.at);

describe('faults: kill -9 of one of two PostgreSQL servers during a DAG run', { skip: FAULTS_SKIP || (PG ? false : PG_SKIP_REASON) }, () => {
  let pair: PgPair | undefined;
  after(() => pair?.close());

  for (const when of ['while every branch runs', 'between the ends of its branches'] as const) {
    it(`the run completes through the other server when one dies ${when}; the join is released once`, async (t) => {
      await pair?.close();
      pair = await startPgPair({ serverArgs: SERVER_ARGS, slots: SLOTS });
      const p = pair;
      const [a, b] = p.servers;
      const ledger = join(p.dir, 'ledger');
      await expectStatus(a.api, 'POST', '/v1/dags', 201, gatedFanIn('failover', ledger, p.dir, WIDTH));
      const runId: string = (await expectStatus(a.api, 'POST', '/v1/dags/failover/runs', 201, {})).run.id;
      const running = await poll(`all ${WIDTH} branches running`, async () => {
        const v = await readRun(b.api, runId);
        return v.steps.filter((s) => s.state === 'running').length === WIDTH ? v : null;
      }, 30_000, 50);
      const branches = (await histories(b.api, running)).filter((h) => /^b\d+$/.test(h.step));
      const ofA = branches.filter((h) => h.attempts.at(-1)!.workerId === 'wa').map((h) => h.step);
      const ofB = branches.filter((h) => h.attempts.at(-1)!.workerId === 'wb').map((h) => h.step);
      assert.deepEqual([ofA.length, ofB.length], [SLOTS, SLOTS], 'each agent runs 4 branches');

      let killedAt: number;
      if (when === 'while every branch runs') {
        await a.proc.stop('SIGKILL');
        killedAt = Date.now();
        openGates(p.dir, runId, [...ofA, ...ofB]);
      } else {
        openGates(p.dir, runId, [ofA[0]!]);
        await poll(`${ofA[0]} to end through A`, async () => (await readRun(b.api, runId)).steps.find((s) => s.name === ofA[0])!.state === 'succeeded', 20_000, 25);
        openGates(p.dir, runId, [ofA[1]!]);
        const delay = Math.random() * 60;
        await new Promise((r) => setTimeout(r, delay));
        await a.proc.stop('SIGKILL');
        killedAt = Date.now();
        openGates(p.dir, runId, [...ofA.slice(2), ...ofB]);
        t.diagnostic(`A killed ${delay.toFixed(0)} ms after ${ofA[1]} was let go`);
      }
      const view = await runEnded(() => b.api, runId, 60_000);
      t.diagnostic(`run ended ${secs(Date.now() - killedAt)} after the kill`);
      const hs = await histories(b.api, view);
      assert.deepEqual(durabilityProblems(view, hs, readLedger(ledger)), []);
      const byStep = new Map(hs.map((h) => [h.step, h]));
      // A's agent's ends: written by A if before its death (same machine clock), else by B after the agent moved.
      const side = (step: string) => (endedAt(byStep.get(step)!) < killedAt ? 'A' : 'B');
      t.diagnostic(`ends of A's agent's branches: ${ofA.map((s) => `${s} by ${side(s)} (${byStep.get(s)!.attempts.map((x) => x.state).join('+')})`).join(', ')}`);
      if (when === 'while every branch runs') {
        assert.deepEqual(ofA.map(side), ['B', 'B', 'B', 'B'], 'A died before any branch could end');
        for (const h of hs) assert.deepEqual(h.attempts.map((x) => x.state), ['succeeded'], `${h.step}: one attempt (re-attached through B)`);
      } else {
        assert.equal(side(ofA[0]!), 'A', `${ofA[0]} ended through A`);
        assert.deepEqual(ofA.slice(2).map(side), ['B', 'B'], 'the branches let go after the kill ended through B');
      }
    });
  }
});
