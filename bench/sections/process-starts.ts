/**
 * Process starts: N `/bin/true` through Drover (one agent with P slots,
 * the process executor) against `xargs -P P -n 1 /bin/true` and a Node
 * child_process.spawn loop with the same P, in the same run. Drover's span:
 * the client's wall clock just before the first submit → the latest `endedAt`
 * stored for those tasks (server clock, ms); the client-observed end (counters
 * show N succeeded, polled every POLL_MS) is printed too. Drover runs twice:
 * the agent as it starts by default (`--prefetch auto`, worker/auto-prefetch.ts),
 * and with a fixed `--prefetch 2P` (assignments
 * queued beyond the slots, worker/prefetch-queue.ts), which keeps a slot from
 * idling while its next task's assignment is on the way.
 */
import { nativeSpawnTrue, nodeSpawnTrue, xargsTrue } from '../peers/process-spawn.js';
import type { Ctx } from '../lib/context.js';
import { cluster, fill, listTasks, startAgent, untilSucceeded } from '../lib/drover.js';
import { met, ratio } from '../lib/report.js';
import { fmtRate, wallMs } from '../lib/stats.js';

/** How often the end is polled: the span ends on the stored endedAt, so this only bounds "counters saw the end". */
const POLL_MS = 25;

/** `drover worker --prefetch` in the prefetch row: two slots' worth of queue per slot count, as the drain's rows (drain.ts PREFETCH for 10 slots). */
const PREFETCH_PER_SLOT = 2;

interface DroverStarts {
  /** Client clock before the first submit → latest stored endedAt, s. */
  storedS: number;
  /** The same start → counters showed N succeeded, s. */
  seenS: number;
  how: string;
  prefetch: number;
}

/** N × /bin/true through a fresh server and one agent with `p` slots (and `prefetch` queued beyond them). */
async function droverStarts(n: number, p: number, prefetch: number): Promise<DroverStarts> {
  const c = await cluster({ workers: 0 }, prefetch > 0 ? 'Drover SQLite --prefetch' : 'Drover SQLite');
  try {
    await startAgent(c, p, prefetch > 0 ? ['--prefetch', String(prefetch)] : []);
    const t0 = wallMs();
    const { how } = await fill(c.api, n, { command: '/bin/true' });
    await untilSucceeded(c.api, n, 900_000, POLL_MS);
    const seenS = (wallMs() - t0) / 1000;
    const ends = (await listTasks(c.api, 'succeeded')).map((t) => Date.parse(t.endedAt));
    if (ends.length !== n || ends.some((e) => !Number.isFinite(e))) throw new Error(`expected ${n} succeeded tasks with endedAt, got ${ends.length}`);
    return { storedS: (Math.max(...ends) - t0) / 1000, seenS, how, prefetch };
  } finally {
    await c.close();
  }
}

export async function processStarts({ report, sizes }: Ctx): Promise<void> {
  const { spawnN: n, spawnP: p } = sizes;
  const what = `${n.toLocaleString('en-US')} × /bin/true, parallelism ${p}`;
  await report.part(what, async () => {
    // The peers between Drover's two runs: the machine's speed drifts, and this way neither Drover run is further from xargs's.
    const d = await droverStarts(n, p, 0);
    const x = xargsTrue(n, p);
    const dp = await droverStarts(n, p, PREFETCH_PER_SLOT * p);
    const node = await nodeSpawnTrue(n, p);
    const native = await nativeSpawnTrue(n, p);
    const drover = (r: DroverStarts) => `${fmtRate(n, r.storedS)}; counters saw the end after ${r.seenS.toFixed(2)} s`;
    const dNote = (r: DroverStarts) =>
      `Drover: \`drover server --db sqlite:…\`, one \`drover worker --slots ${p}${r.prefetch > 0 ? ` --prefetch ${r.prefetch}` : ''}\`${r.prefetch > 0 ? '' : ' (its default --prefetch auto)'} (process executor), submitted with ${r.how}; span: client clock before the first submit → latest task endedAt as stored (GET /v1/stats/counts polled every ${POLL_MS} ms to learn the end)`;
    for (const r of [d, dp]) {
      report.add({
        measure: `process starts, ${what}: Drover${r.prefetch > 0 ? ` (--prefetch ${r.prefetch})` : ' (default: --prefetch auto)'} vs xargs`,
        drover: drover(r),
        peer: fmtRate(n, x.s),
        ratio: ratio(x.s / r.storedS),
        met: met(x.s / r.storedS >= 0.7, 'Drover ≥ 70 % of xargs'),
        note: `${dNote(r)}. Peer: \`${x.command}\` (sh -c, timed from spawn to exit), run between Drover's two runs.`,
      });
    }
    report.add({
      measure: `process starts, ${what}: Drover vs Node child_process.spawn loop`,
      drover: drover(d),
      peer: fmtRate(n, node.s),
      ratio: ratio(node.s / d.storedS),
      met: 'no target (reference)',
      note: `${dNote(d)}. Peer: child_process.spawn('/bin/true', { detached: true, stdio: pipes }) with ${p} in flight, in the bench process.`,
    });
    if (native) {
      report.add({
        measure: `process starts, ${what}: Drover vs the native spawner addon alone`,
        drover: drover(d),
        peer: fmtRate(n, native.s),
        ratio: ratio(native.s / d.storedS),
        met: 'no target (reference)',
        note: `${dNote(d)}. Peer: the agent's posix_spawn addon (native/spawn.c) in a loop in the bench process, ${p} in flight, pipes and its own session, no scheduler (bench/spawn-probe.ts addonSpawnRate).`,
      });
    }
  });
}
