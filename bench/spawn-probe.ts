/**
 * Process starts, side by side in one run: n `/bin/true` at `parallel` at a
 * time through
 *   1. xargs -P parallel -n 1 /bin/true            (the baseline)
 *   2. a Node child_process.spawn loop             (what the agent used to do)
 *   3. a loop over the native spawner addon        (native/spawn.c, what the agent does now)
 *   4. Drover: a server (SQLite) and one agent with `parallel` slots
 *      (test/e2e/harness.ts startCluster), the n tasks submitted before the
 *      agent starts; the agent's work dir in the OS temp dir
 *   5. the same with the agent's work dir on tmpfs (/dev/shm)
 *   6. as 4, the agent on Node's child_process (DROVER_SPAWNER=node): what the addon changed
 * Spans: 1-3 start just before the first spawn and end after the last
 * process has exited and its pipes closed (2 and 3 create stdout/stderr
 * pipes and a process group per start, as the agent does). For Drover,
 * `fromAgentStart` starts just before the agent process is spawned (its boot
 * and connect included) and `fromFirstStart` at the agent's own clock just
 * after its first spawn (its debug "process started" line, epoch ms); both
 * end when the server's counters, read after the last end committed, say all
 * n succeeded. Nothing is hard-coded; every run measures all of them, and
 * xargs again right before each Drover variant (the ratio printed for a
 * Drover row is to that neighbouring xargs run: this machine's speed drifts
 * by several times within minutes).
 *
 * Usage: `npx tsc -p tsconfig.json && node dist/bench/spawn-probe.js [n=2000] [parallel=8]`
 * Not part of `npm test`. Exports spawnProbe() for bench/run.ts.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { startCluster, type Api } from '../test/e2e/harness.js';
import { loadNativeSpawn, pickSpawner } from '../src/worker/native-spawn.js';

export interface SpawnProbeResult {
  n: number;
  parallel: number;
  /** Processes per second for each way; null when it could not run (the reason in `notes`). */
  xargs: number;
  /**
   * xargs measured again just before each Drover variant (4, 5, 6): this
   * machine's speed changes within minutes, so each Drover figure is set
   * against the xargs run next to it.
   */
  xargsBeside: { drover: number; droverTmpfs: number | null; droverNodeSpawn: number };
  nodeSpawn: number;
  addonSpawn: number | null;
  droverFromAgentStart: number;
  droverFromFirstStart: number | null;
  /** The same with the agent's work dir on tmpfs (/dev/shm), null without one. */
  droverTmpfsFromAgentStart: number | null;
  droverTmpfsFromFirstStart: number | null;
  /** Drover with the agent on Node's child_process (DROVER_SPAWNER=node), work dir as in 4. */
  droverNodeSpawnFromAgentStart: number;
  droverNodeSpawnFromFirstStart: number | null;
  notes: string[];
  /** The commands/configuration, to print next to the figures. */
  how: string[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs `one()` n times, `parallel` at a time; returns processes per second. */
async function loop(n: number, parallel: number, one: () => Promise<void>): Promise<number> {
  let started = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (started < n) {
        started++;
        await one();
      }
    }),
  );
  return n / ((performance.now() - t0) / 1000);
}

function xargsRate(n: number, parallel: number): number {
  const t0 = performance.now();
  const r = spawnSync('sh', ['-c', `seq ${n} | xargs -P ${parallel} -n 1 /bin/true`]);
  if (r.status !== 0) throw new Error(`xargs failed: ${r.stderr}`);
  return n / ((performance.now() - t0) / 1000);
}

function nodeOne(): Promise<void> {
  return new Promise((done, fail) => {
    const ch = spawn('/bin/true', [], { detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: {} });
    ch.stdout!.resume();
    ch.stderr!.resume();
    ch.once('error', fail);
    ch.once('close', () => done());
  });
}

/** The addon alone (no scheduler): n `/bin/true` with pipes and its own session, `parallel` at a time; processes per second, or null if the addon is not built. */
export async function addonSpawnRate(n: number, parallel: number): Promise<number | null> {
  if (!('binding' in loadNativeSpawn())) return null;
  const s = pickSpawner('native');
  return loop(n, parallel, () => addonOne(s));
}

async function addonOne(spawner: ReturnType<typeof pickSpawner>): Promise<void> {
  const p = await spawner({ file: '/bin/true', args: [], cwd: '/', env: {} });
  if ('error' in p) throw new Error(p.error);
  const closed = (s: NodeJS.ReadableStream & { once: (e: 'close', f: () => void) => unknown }) => new Promise<void>((r) => s.once('close', r));
  p.stdout.resume();
  p.stderr.resume();
  await Promise.all([p.exited, closed(p.stdout), closed(p.stderr)]);
}

async function counts(api: Api): Promise<Record<string, number>> {
  const r = await api.req('GET', '/v1/stats/counts');
  if (r.status !== 200) throw new Error(`counts failed ${r.status}: ${r.text}`);
  return r.body.counts;
}

/** Submits n tasks, 32 single submits in flight (works on every branch; the batch endpoint is not needed here). */
async function fill(api: Api, n: number, spec: Record<string, unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < n) {
        next++;
        await api.submit(spec);
      }
    }),
  );
}

async function droverRates(
  n: number,
  parallel: number,
  workDir?: string,
  spawner?: 'node',
): Promise<{ fromAgentStart: number; fromFirstStart: number | null; spawner: string }> {
  const c = await startCluster({ workers: 0 });
  const saved = process.env.DROVER_SPAWNER;
  try {
    await fill(c.api, n, { command: '/bin/true' });
    // The agent inherits this environment (harness startProc): DROVER_SPAWNER=node selects child_process there.
    if (spawner) process.env.DROVER_SPAWNER = spawner;
    const t0 = performance.now();
    const w = await c.startWorker({ slots: parallel, extra: ['--log-level', 'debug', ...(workDir ? ['--work-dir', workDir] : [])] });
    if (saved === undefined) delete process.env.DROVER_SPAWNER;
    else process.env.DROVER_SPAWNER = saved;
    for (;;) {
      const k = await counts(c.api);
      if ((k.succeeded ?? 0) >= n) break;
      if ((k.failed ?? 0) > 0) throw new Error(`drover: ${k.failed} tasks failed:\n${w.output().slice(-2000)}`);
      await sleep(5);
    }
    const endEpoch = performance.timeOrigin + performance.now();
    const totalS = (performance.now() - t0) / 1000;
    let first: number | null = null;
    for (const m of w.output().matchAll(/"spawnedAt":([0-9.]+)/g)) {
      const t = Number(m[1]);
      if (first === null || t < first) first = t;
    }
    const used = spawner === 'node' ? 'child_process (DROVER_SPAWNER=node)' : /native spawner unavailable/.test(w.output()) ? 'child_process (addon unavailable)' : 'native addon';
    return { fromAgentStart: n / totalS, fromFirstStart: first === null ? null : n / ((endEpoch - first) / 1000), spawner: used };
  } finally {
    if (saved === undefined) delete process.env.DROVER_SPAWNER;
    else process.env.DROVER_SPAWNER = saved;
    await c.close();
    if (workDir) rmSync(workDir, { recursive: true, force: true });
  }
}

export async function spawnProbe(n = 2000, parallel = 8): Promise<SpawnProbeResult> {
  const notes: string[] = [];
  const native = loadNativeSpawn();
  const xargs = xargsRate(n, parallel);
  const nodeSpawn = await loop(n, parallel, nodeOne);
  let addonSpawn: number | null = null;
  if ('binding' in native) {
    const s = pickSpawner('native');
    addonSpawn = await loop(n, parallel, () => addonOne(s));
  } else notes.push(`addon loop skipped: ${native.reason}`);
  const xargsBeforeDrover = xargsRate(n, parallel);
  const d = await droverRates(n, parallel);
  // Each attempt makes and removes two directories (work-dir.ts); on this machine's ext4, shared with fsyncing
  // databases, those four calls cost ~1.3 ms against ~0.04 ms on tmpfs. Both are shown.
  const xargsBeforeShm = existsSync('/dev/shm') ? xargsRate(n, parallel) : null;
  const shm = existsSync('/dev/shm') ? await droverRates(n, parallel, mkdtempSync('/dev/shm/drover-probe-')) : null;
  if (!shm) notes.push('no /dev/shm: the tmpfs variant was skipped');
  const xargsBeforeNode = xargsRate(n, parallel);
  const viaNode = await droverRates(n, parallel, undefined, 'node');
  const rss = /VmRSS:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
  notes.push(`the probe process (loops 2 and 3) has RSS ${rss ? Math.round(Number(rss) / 1024) : '?'} MB; fork() cost grows with the parent's size, so the agent's own Node spawns cost more than loop 2's`);
  return {
    n,
    parallel,
    xargs,
    xargsBeside: { drover: xargsBeforeDrover, droverTmpfs: xargsBeforeShm, droverNodeSpawn: xargsBeforeNode },
    nodeSpawn,
    addonSpawn,
    droverFromAgentStart: d.fromAgentStart,
    droverFromFirstStart: d.fromFirstStart,
    droverTmpfsFromAgentStart: shm?.fromAgentStart ?? null,
    droverTmpfsFromFirstStart: shm?.fromFirstStart ?? null,
    droverNodeSpawnFromAgentStart: viaNode.fromAgentStart,
    droverNodeSpawnFromFirstStart: viaNode.fromFirstStart,
    notes,
    how: [
      `seq ${n} | xargs -P ${parallel} -n 1 /bin/true`,
      `child_process.spawn('/bin/true', [], { detached: true, stdio: ['ignore', 'pipe', 'pipe'] }), ${parallel} in flight`,
      `native spawner (posix_spawn, setsid, pipes wrapped as net.Socket, pidfd exit watch), ${parallel} in flight`,
      `drover server --db sqlite:<tmpdir> + drover worker --slots ${parallel} --work-dir <tmpdir>/… (spawner: ${d.spawner}); ${n} × {"command":"/bin/true"} submitted first (32 POST /v1/tasks in flight)`,
      `the same with drover worker --work-dir /dev/shm/… (tmpfs)`,
      `as 4 with the agent on child_process (${viaNode.spawner})`,
    ],
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const n = Number(process.argv[2] ?? 2000);
  const parallel = Number(process.argv[3] ?? 8);
  const r = await spawnProbe(n, parallel);
  const row = (name: string, rate: number | null, xargs: number) =>
    console.log(
      `${name.padEnd(50)} ${rate === null ? 'n/a'.padStart(8) : `${rate.toFixed(0)}/s`.padStart(8)}  ${rate === null ? '' : `${((100 * rate) / xargs).toFixed(0)} % of xargs (xargs run: ${xargs.toFixed(0)}/s)`}`,
    );
  console.log(`spawn probe: ${n} × /bin/true, parallelism ${parallel}, ${new Date().toISOString()}, node ${process.version}`);
  console.log(`command: node dist/bench/spawn-probe.js ${n} ${parallel}`);
  const x = r.xargsBeside;
  row('1. xargs -P', r.xargs, r.xargs);
  row('2. Node child_process.spawn loop', r.nodeSpawn, r.xargs);
  row('3. native addon spawn loop', r.addonSpawn, r.xargs);
  row('4. Drover, from agent process start', r.droverFromAgentStart, x.drover);
  row('4. Drover, from the first process started', r.droverFromFirstStart, x.drover);
  row('5. Drover, work dir on tmpfs, from agent start', r.droverTmpfsFromAgentStart, x.droverTmpfs ?? NaN);
  row('5. Drover, work dir on tmpfs, from first start', r.droverTmpfsFromFirstStart, x.droverTmpfs ?? NaN);
  row('6. Drover on child_process, from agent start', r.droverNodeSpawnFromAgentStart, x.droverNodeSpawn);
  row('6. Drover on child_process, from first start', r.droverNodeSpawnFromFirstStart, x.droverNodeSpawn);
  for (const h of r.how) console.log(`  how: ${h}`);
  for (const note of r.notes) console.log(`  note: ${note}`);
}
