/**
 * Process-start references with no scheduler: `xargs -P` and a Node
 * child_process.spawn loop, each running n `/bin/true` with `parallel` at a
 * time; and the native spawner addon the agent uses (bench/spawn-probe.ts).
 * Spans: first start → last exit.
 */
import { spawn, spawnSync } from 'node:child_process';
import { inFlight } from '../lib/stats.js';

export function xargsTrue(n: number, parallel: number): { s: number; command: string } {
  const command = `seq ${n} | xargs -P ${parallel} -n 1 /bin/true`;
  const t0 = performance.now();
  const r = spawnSync('sh', ['-c', command]);
  if (r.status !== 0) throw new Error(`${command}: exit ${r.status}: ${r.stderr}`);
  return { s: (performance.now() - t0) / 1000, command };
}

/** Node's child_process.spawn with pipes and its own process group, as a Node agent would. */
export async function nodeSpawnTrue(n: number, parallel: number): Promise<{ s: number }> {
  const t0 = performance.now();
  await inFlight(n, parallel, () => new Promise<void>((done, fail) => {
    const ch = spawn('/bin/true', [], { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    ch.stdout!.resume();
    ch.stderr!.resume();
    ch.on('error', fail);
    ch.on('close', () => done());
  }));
  return { s: (performance.now() - t0) / 1000 };
}

/** The native spawner addon alone (bench/spawn-probe.ts addonSpawnRate), the agent's own way to start a process; null if it is not built. */
export async function nativeSpawnTrue(n: number, parallel: number): Promise<{ s: number } | null> {
  const { addonSpawnRate } = await import('../spawn-probe.js');
  const rate = await addonSpawnRate(n, parallel);
  return rate === null ? null : { s: n / rate };
}

/**
 * `n` × /bin/true one after another from a shell loop (the DAG chain's floor:
 * fork + exec + wait, nothing else). Span: just before `sh` is spawned → its
 * exit, so sh's own start (about a millisecond) is inside.
 */
export function shellLoopTrue(n: number): { ms: number; command: string } {
  const command = `for i in $(seq ${n}); do /bin/true; done`;
  const t0 = performance.now();
  const r = spawnSync('sh', ['-c', command]);
  if (r.status !== 0) throw new Error(`${command}: exit ${r.status}: ${r.stderr}`);
  return { ms: performance.now() - t0, command };
}
