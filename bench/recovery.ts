/**
 * Recovery bench: how long a dead agent's attempts take to run again
 * elsewhere, with the published defaults (heartbeat every 5 s, lease 15 s).
 *
 * Agent A (50 slots) runs 50 attempts of `sleep 60`; agent B (50 slots) is
 * idle. A is killed with SIGKILL; the clock runs from the kill until all 50
 * tasks are `running` on their second attempt (on B). The bound is the lease;
 * the target is under lease + 2 s (the sweep that ends expired leases runs
 * every second, and dispatch is immediate).
 *
 * `recovery()` returns rows `[measure, result, note]` for bench/run.ts. Run
 * alone: `node dist/bench/recovery.js`. Env: BENCH_RECOVERY_N (50).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { startCluster } from '../test/e2e/harness.js';
import { allTasks, closeCluster, pidScript, readPids, until } from '../test/faults/support.js';
import { DEFAULT_HEARTBEAT_MS, DEFAULT_LEASE_MS } from '../src/core/protocol.js';

const N = Number(process.env.BENCH_RECOVERY_N ?? 50);
const TARGET_MS = DEFAULT_LEASE_MS + 2_000;

export async function recovery(): Promise<Array<[string, string, string]>> {
  // Default --heartbeat and --lease: no server arguments.
  const c = await startCluster({ workers: 0 });
  const pids = join(c.dir, 'pids');
  mkdirSync(pids);
  try {
    const a = await c.startWorker({ id: 'a', slots: N });
    const ids: string[] = [];
    for (let i = 0; i < N; i++) ids.push(await c.api.submit({ name: `recovery-${i}`, script: pidScript(pids, 'exec sleep 60') }));
    await until(`${N} attempts running on a`, async () => readPids(pids).length === N && (await allTasks(c.api)).filter((t) => t.state === 'running').length === N, 60_000);
    await c.startWorker({ id: 'b', slots: N });

    const killedAt = performance.now();
    await a.stop('SIGKILL');
    let lostMs = -1;
    await until(
      'every task running again on b',
      async () => {
        const tasks = (await allTasks(c.api)).filter((t) => ids.includes(t.id));
        if (lostMs < 0 && tasks.some((t) => t.lostCount > 0)) lostMs = performance.now() - killedAt;
        return tasks.length === N && tasks.every((t) => t.state === 'running' && t.attempts === 2);
      },
      DEFAULT_LEASE_MS + 30_000,
      50,
    );
    const allMs = performance.now() - killedAt;
    const met = allMs < TARGET_MS;
    return [
      [
        `agent kill -9 → its ${N} attempts running again on another agent (heartbeat ${DEFAULT_HEARTBEAT_MS / 1000} s, lease ${DEFAULT_LEASE_MS / 1000} s)`,
        `${(allMs / 1000).toFixed(2)} s (first lost after ${(lostMs / 1000).toFixed(2)} s)`,
        `target < ${TARGET_MS / 1000} s (bound + 2 s): ${met ? 'met' : '**not met**'}`,
      ],
    ];
  } finally {
    // B's attempts die with B's SIGTERM; A's were orphaned by its kill -9 (killed by their recorded pids).
    await closeCluster(c, pids);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const [measure, result, note] of await recovery()) console.log(`| ${measure} | ${result} | ${note} |`);
}
