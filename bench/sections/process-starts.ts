/**
 * Process starts: N `/bin/true` through Drover (one agent with P slots,
 * the process executor) against `xargs -P P -n 1 /bin/true` and a Node
 * child_process.spawn loop with the same P, in the same run. Drover's span:
 * the client's wall clock just before the first submit → the latest `endedAt`
 * stored for those tasks (server clock, ms); the client-observed end (counters
 * show N succeeded, polled every POLL_MS) is printed too.
 */
import { nativeSpawnTrue, nodeSpawnTrue, xargsTrue } from '../peers/process-spawn.js';
import type { Ctx } from '../lib/context.js';
import { cluster, fill, listTasks, startAgent, untilSucceeded } from '../lib/drover.js';
import { met, ratio } from '../lib/report.js';
import { fmtRate, wallMs } from '../lib/stats.js';

/** How often the end is polled: the span ends on the stored endedAt, so this only bounds "counters saw the end". */
const POLL_MS = 25;

export async function processStarts({ report, sizes }: Ctx): Promise<void> {
  const { spawnN: n, spawnP: p } = sizes;
  const what = `${n.toLocaleString('en-US')} × /bin/true, parallelism ${p}`;
  await report.part(what, async () => {
    const c = await cluster({ workers: 0 }, 'Drover SQLite');
    let storedS: number;
    let seenS: number;
    let how: string;
    try {
      await startAgent(c, p);
      const t0 = wallMs();
      ({ how } = await fill(c.api, n, { command: '/bin/true' }));
      await untilSucceeded(c.api, n, 900_000, POLL_MS);
      seenS = (wallMs() - t0) / 1000;
      const ends = (await listTasks(c.api, 'succeeded')).map((t) => Date.parse(t.endedAt));
      if (ends.length !== n || ends.some((e) => !Number.isFinite(e))) throw new Error(`expected ${n} succeeded tasks with endedAt, got ${ends.length}`);
      storedS = (Math.max(...ends) - t0) / 1000;
    } finally {
      await c.close();
    }
    const x = xargsTrue(n, p);
    const node = await nodeSpawnTrue(n, p);
    const native = await nativeSpawnTrue(n, p);
    const drover = `${fmtRate(n, storedS)}; counters saw the end after ${seenS.toFixed(2)} s`;
    const dNote = `Drover: \`drover server --db sqlite:…\`, one \`drover worker --slots ${p}\` (process executor), submitted with ${how}; span: client clock before the first submit → latest task endedAt as stored (GET /v1/stats/counts polled every ${POLL_MS} ms to learn the end)`;
    report.add({
      measure: `process starts, ${what}: Drover vs xargs`,
      drover,
      peer: fmtRate(n, x.s),
      ratio: ratio(x.s / storedS),
      met: met(x.s / storedS >= 0.7, 'Drover ≥ 70 % of xargs'),
      note: `${dNote}. Peer: \`${x.command}\` (sh -c, timed from spawn to exit).`,
    });
    report.add({
      measure: `process starts, ${what}: Drover vs Node child_process.spawn loop`,
      drover,
      peer: fmtRate(n, node.s),
      ratio: ratio(node.s / storedS),
      met: 'no target (reference)',
      note: `${dNote}. Peer: child_process.spawn('/bin/true', { detached: true, stdio: pipes }) with ${p} in flight, in the bench process.`,
    });
    if (native) {
      report.add({
        measure: `process starts, ${what}: Drover vs the native spawner addon alone`,
        drover,
        peer: fmtRate(n, native.s),
        ratio: ratio(native.s / storedS),
        met: 'no target (reference)',
        note: `${dNote}. Peer: the agent's posix_spawn addon (native/spawn.c) in a loop in the bench process, ${p} in flight, pipes and its own session, no scheduler (bench/spawn-probe.ts addonSpawnRate).`,
      });
    }
  });
}
