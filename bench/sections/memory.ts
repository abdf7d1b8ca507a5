/**
 * Memory, from /proc/<pid>/status (VmRSS now, VmHWM the peak):
 *  - the server (SQLite) after N tasks went through it: submitted (batch
 *    endpoint if present), then drained by a noop agent with 10 slots; read
 *    once the counters show N succeeded (the end of the drain), and (not
 *    with --quick) again sizes.serverSettleS seconds later with nothing
 *    submitted meanwhile (what the server keeps once idle: V8's idle GC and
 *    the C heap trim after it, src/cli/memory-trim.ts, have run; 30 s in a
 *    full run). Target VmRSS ≤ 100 MB at the end of the drain: both are
 *    printed, and the row says which one meets it.
 *  - an agent (process executor, 10 slots) with 10 `sleep` running: read
 *    once the counters show 10 running, and (not with --quick) again
 *    sizes.agentLaterS seconds later with the same 10 still running (what the
 *    agent keeps once V8's memory reducer has run: the first reading, 1-2 s
 *    after the agent's start, still holds its start-up garbage). Target VmRSS
 *    ≤ 50 MB: both are printed, and the row says which one meets it. Its reaper (the
 *    helper process every process-executor agent keeps, worker/reaper.ts) is
 *    reported beside it, since a user pays for both. So is VmRSS's split
 *    (RssAnon, RssFile) and an idle bare `node` read the same way in the same
 *    run: most of a Node process's RssFile is the node executable's pages,
 *    shared with every other Node process, and a floor no Node agent goes below.
 *    And each one's own pages (procMemKb's `own`, USS), what one more agent
 *    costs the host: measured 2026-12-05 on an agent 12 s after its start,
 *    VmRSS 53,660 kB of which 42,844 kB shared clean pages and 10,816 kB its own.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import type { Ctx } from '../lib/context.js';
import { cluster, counts, fill, NOOP, startAgent, untilSucceeded } from '../lib/drover.js';
import { met } from '../lib/report.js';
import { mb, procMemKb, sleep, until } from '../lib/stats.js';

const MB = 1e6 / 1024; // kB per MB (10^6 bytes)
/*
 * The agent's second reading (sizes.agentLaterS after the first, 15 s in a
 * full run). Measured (an agent with 10 × `sleep 60`, read every few seconds,
 * 2026-12-04): VmRSS 58.0 MB from 0.2 to 6 s, 55.3 MB from 10 s on (RssAnon
 * 13.9 → 11.2 MB: V8's memory reducer, about 8 s after the start).
 */

/** /proc memory of an idle bare `node` (a timer keeps it alive), read 1 s after its start. */
async function bareNodeKb(): Promise<ReturnType<typeof procMemKb>> {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1e9)'], { stdio: 'ignore' });
  try {
    await sleep(1000);
    return procMemKb(child.pid!);
  } finally {
    child.kill('SIGKILL');
  }
}

/** The agent's reaper: its child process without DROVER_TASK_ID in its environment; its VmRSS (kB) and what it runs. */
function reaperOf(agentPid: number): { rss: number; what: string } {
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) !== agentPid) continue;
      if (readFileSync(`/proc/${e}/environ`, 'latin1').includes('DROVER_TASK_ID=')) continue;
      const exe = readFileSync(`/proc/${e}/cmdline`, 'utf8').split('\0')[0] ?? '';
      return { rss: procMemKb(Number(e)).rss, what: exe.endsWith('drover_reaper') ? 'native/reaper.c' : 'reaper.ts under node' };
    } catch {
      // gone meanwhile
    }
  }
  throw new Error(`no reaper process found among the children of agent ${agentPid}`);
}

export async function memory({ report, sizes }: Ctx): Promise<void> {
  const n = sizes.memN;
  await report.part(`server memory after ${n} tasks`, async () => {
    const c = await cluster({ workers: 0 }, 'Drover SQLite');
    try {
      const { how } = await fill(c.api, n);
      await startAgent(c, 10, NOOP);
      await untilSucceeded(c.api, n);
      const m = procMemKb(c.server.child.pid!);
      const settleS = sizes.serverSettleS;
      let idle: typeof m | null = null;
      if (settleS > 0) {
        await sleep(settleS * 1000);
        idle = procMemKb(c.server.child.pid!);
      }
      const which = m.rss <= 100 * MB ? 'at the end of the drain' : idle && idle.rss <= 100 * MB ? `idle only (${settleS} s later)` : 'neither';
      report.add({
        measure: `server memory after ${n.toLocaleString('en-US')} tasks (SQLite)`,
        drover: idle
          ? `VmRSS ${mb(m.rss)} at the end of the drain, ${mb(idle.rss)} ${settleS} s later (idle); VmHWM ${mb(idle.hwm)}`
          : `VmRSS ${mb(m.rss)} at the end of the drain; VmHWM ${mb(m.hwm)}`,
        peer: '',
        ratio: '',
        met: met(m.rss <= 100 * MB, idle ? `VmRSS ≤ 100 MB; met ${which}` : 'VmRSS ≤ 100 MB'),
        note: `\`drover server --db sqlite:…\` pid's /proc status once /v1/stats/counts shows ${n} succeeded${idle ? `, and ${settleS} s later with nothing submitted` : ' (--quick: one reading)'}; tasks submitted with ${how}, drained by \`drover worker --executor noop --slots 10\`.`,
      });
    } finally {
      await c.close();
    }
  });

  await report.part('agent memory, 10 slots busy', async () => {
    const laterS = sizes.agentLaterS;
    // The tasks outlive the second reading; `sleep 3` when there is none.
    const sleepS = laterS > 0 ? laterS + 5 : 3;
    const c = await cluster({ workers: 0 }, 'Drover SQLite');
    try {
      const a = await startAgent(c, 10);
      await fill(c.api, 10, { command: 'sleep', args: [String(sleepS)] });
      await until('10 tasks running', async () => ((await counts(c.api)).running ?? 0) >= 10, 30_000);
      await sleep(200);
      const m = procMemKb(a.proc.child.pid!);
      const reaper = reaperOf(a.proc.child.pid!);
      let later: typeof m | null = null;
      if (laterS > 0) {
        await sleep(laterS * 1000);
        if (((await counts(c.api)).running ?? 0) < 10) throw new Error(`the agent's 10 tasks were not all running ${laterS} s later`);
        later = procMemKb(a.proc.child.pid!);
      }
      await untilSucceeded(c.api, 10, (sleepS + 30) * 1000);
      const bare = await bareNodeKb();
      report.add({
        measure: `agent memory, 10 slots busy (10 × \`sleep ${sleepS}\`)`,
        drover:
          `VmRSS ${mb(m.rss)} (RssAnon ${mb(m.anon)}, RssFile ${mb(m.file)}; own ${mb(m.own)}), VmHWM ${mb(m.hwm)}; ` +
          (later ? `${laterS} s later, the same tasks running: VmRSS ${mb(later.rss)} (RssAnon ${mb(later.anon)}, RssFile ${mb(later.file)}; own ${mb(later.own)}); ` : '') +
          `its reaper (${reaper.what}) VmRSS ${mb(reaper.rss)}; ` +
          `an idle bare \`node\`: VmRSS ${mb(bare.rss)} (RssAnon ${mb(bare.anon)}, RssFile ${mb(bare.file)}; own ${mb(bare.own)})`,
        peer: '',
        ratio: '',
        met: met(
          m.rss <= 50 * MB || (later !== null && later.rss <= 50 * MB),
          later ? `VmRSS ≤ 50 MB; met ${m.rss <= 50 * MB ? 'at the first reading' : later.rss <= 50 * MB ? `${laterS} s later only` : 'at neither reading'}` : 'VmRSS ≤ 50 MB',
        ),
        note:
          `\`drover worker --slots 10\` (process executor) pid's /proc status 200 ms after /v1/stats/counts shows 10 running (the sleeps are its children, not counted)${later ? `, and ${laterS} s later with the 10 still running` : ' (--quick: one reading)'}; its reaper is the child that is not a task (no DROVER_TASK_ID), read at the first moment. ` +
          "The bare `node` (`node -e 'setInterval(() => {}, 1e9)'`, the same executable) is read 1 s after its start, after the agent's tasks ended: RssFile is mostly the node executable's pages, shared by every Node process on the host. " +
          '`own`: the resident pages no other process maps (Private_Clean + Private_Dirty of /proc/<pid>/smaps_rollup), what one more agent adds to the host; the goal is on VmRSS.',
      });
    } finally {
      await c.close();
    }
  });
}
