/**
 * Submit-to-start latency, as both bench sections measure it: after a warm-up,
 * `n` sequential `true` tasks on an idle agent; for each, the server-side time
 * from submit to claim (attempt.startedAt − task.createdAt) and the client-side
 * time from the HTTP submit until the task is done and its log follow ended.
 */
import type { Cluster } from '../test/e2e/harness.js';

export async function submitLatency(c: Cluster, n: number, what = 'latency'): Promise<{ claim: number[]; done: number[] }> {
  // Warm up the paths (JIT, statement caches) before measuring.
  for (let i = 0; i < 20; i++) await c.api.waitDone(await c.api.submit({ command: 'true' }));
  const claim: number[] = [];
  const done: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const id = await c.api.submit({ command: 'true' });
    const r = await c.api.waitDone(id);
    done.push(performance.now() - t0);
    if (r.task.state !== 'succeeded') throw new Error(`${what}: task ${id} ${r.task.state}`);
    claim.push(Date.parse(r.attempts[0].startedAt) - Date.parse(r.task.createdAt));
  }
  return { claim, done };
}
