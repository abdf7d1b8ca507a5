/**
 * V8 heap settings of the long-running commands (server, worker, dev), applied
 * in their actions before the server or the agent loads: the young generation
 * capped at MAX_SEMI_SPACE_BYTES per semi-space, and the old generation's
 * growth between full GCs at HEAP_GROWING_PERCENT.
 *
 * Why: V8 starts each of the two semi-spaces at 1 MB and doubles them, up to
 * 16 MB each on 64-bit, whenever a scavenge finds many survivors; a server or
 * agent under load reaches that maximum within seconds and keeps it for good.
 * How: `--max-semi-space-size` is read once, when the heap is set up, and node
 * has no way for bin/drover.js to pass start flags without a second process.
 * `--semi-space-growth-factor` is read at each growth decision (V8 11.3,
 * SemiSpaceNewSpace::Grow: new capacity = min(max, factor × capacity)), so the
 * growth is left alone until the semi-spaces reach the cap and then turned
 * off with factor 1 (checked after each GC through a PerformanceObserver,
 * which costs nothing between GCs; a growth in the few GCs before the
 * observer runs can overshoot by one doubling).
 *
 * Measured on this branch (2 shared cores, Node 20.20; a 5,000-task noop drain,
 * one 10-slot agent, the bench/drover-drain.ts method; GC from --trace-gc):
 *   semi-space       server scavenges (ms)   server RSS after   agent RSS after
 *   16 MB (default)  42-43 (133-594 ms)      129-131 MB         76-81 MB
 *   2 MB             243 (286-594 ms)        103-106 MB         66-70 MB
 *   1 MB             496 (769-1234 ms)       104-106 MB         65 MB
 *   2 MB + HEAP_GROWING_PERCENT: 243-245 scavenges (416-820 ms) and 3 full
 *   GCs (26-53 ms) vs the default's 1 (17-34 ms); server RSS 99 MB, agent
 *   67 MB; server CPU for fill + drain 3.63-3.93 s vs 3.71-3.73 s default.
 * So 2 MB costs no CPU over the default that this machine can see (each
 * scavenge copies only what is alive, and these processes keep little alive
 * per request); 1 MB doubles the GC time.
 * Growth is held while the server or the agent loads (applyHeapFlags, then
 * resumeYoungGrowth once it has started; see applyHeapFlags for why).
 * Not for the one-shot commands: with the young generation pinned `drover ls` took 110 ms of CPU
 * instead of 87 ms (undici's start-up allocates a lot), and they exit before
 * the young generation's size matters.
 *
 * Looked at for the agent and not taken (2026-12-05; an agent with 10 `sleep`
 * running, the bench's memory method, VmRSS ~13 s after its start, MB of
 * 10^6 bytes as the bench prints them): 55.4 MB as is, of which 44.2 MB
 * mapped files (40.6 MB of them the node executable's pages; a bare `node`
 * touches 31.6 MB of them) and 11.2 MB anonymous (V8's heap 6.9 MB). V8
 * flags set at start: --no-opt 51.2 MB, --lite-mode 50.6 MB, --jitless
 * 52.5 MB (--max-lazy, --no-maglev: no change; --single-threaded-gc set at
 * run time: the agent was gone before the second reading). What
 * --no-opt saves is TurboFan's own code, 3.6 MB of the executable's pages,
 * paged in when the start-up's module resolution makes path.normalize hot;
 * those pages are clean and shared with every Node process on the host, and
 * turning the optimising compiler off for them would slow every busy agent
 * while leaving it above 50 MB. For scale: a bare `node` that requires only
 * `ws` is 51.3 MB half a second after its start.
 * Also looked at (2026-12-05, same method, kB of /proc): holding TurboFan and
 * Sparkplug off (v8.setFlagsFromString) only while the agent starts, then
 * turning them back on. Held from main.ts until startAgent resolved: 53,600-
 * 53,708 kB 12 s later against 54,112-54,132 as is, because the first
 * assignments page TurboFan in anyway (--trace-opt: with no task run nothing
 * is optimised; with 10, two small functions are, `isPosixPathSeparator` of
 * the attempts' path handling among them). Only a hold past the first
 * tasks reached 49,648 kB, and a busy agent pages that code in within its
 * first dozen tasks, so that reading would not be what an agent keeps.
 * The agent's floor, with the tiers held (the preload that held them also
 * loaded `v8`): a bare `node` 42,468 kB; requiring `ws` adds 3,600 kB (2,500 of
 * them `https` alone: ws requires it, `tls` and crypto even for a `ws://`
 * server) and `pino` 3,000 kB.
 */
import { PerformanceObserver } from 'node:perf_hooks';
import v8 from 'node:v8';

export const MAX_SEMI_SPACE_BYTES = 2 * 1024 * 1024;
/**
 * The old generation may grow to 1.25 × what the last full GC left alive
 * before the next one (V8 picks 1.1..4 × by itself; read at each full GC, so
 * settable at run time). A smaller young generation promotes more short-lived
 * objects, and with V8's own factor the server's old space then grew past
 * 40 MB between full GCs with 20 MB alive: RSS after 20,000 tasks
 * (submitted while a 10-slot noop agent drains) 114-124 MB with the cap
 * alone, 111-112 MB with this too; 100,000 tasks reached 160 MB with the cap
 * alone.
 */
export const HEAP_GROWING_PERCENT = 25;

/** V8's new_space `space_size` counts both semi-spaces. */
function newSpaceBytes(): number {
  return v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.space_size ?? 0;
}

let applied = false;
let resumed = false;

/**
 * Call before the command loads its server or agent. Sets the old
 * generation's growth and holds the young generation at its first size
 * (growth factor 1) until resumeYoungGrowth: the executable's bundle is
 * CommonJS (rolldown.config.js), so loading the server or the agent is one
 * synchronous stretch of require()s with no turn of the event loop between,
 * where the observer below could stop the growth; measured 2026-12-03 (the
 * e2e heap-flags test): the server's new space reached 16 MB against this
 * cap's 4 MB when growth was left on while it loaded. Idempotent.
 */
export function applyHeapFlags(): void {
  if (applied) return;
  applied = true;
  v8.setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
  v8.setFlagsFromString('--semi-space-growth-factor=1');
}

/**
 * Call once the server or the agent has started (its modules loaded): lets
 * the young generation grow again (V8's factor 2) and stops it for good at
 * MAX_SEMI_SPACE_BYTES per semi-space. Idempotent.
 */
export function resumeYoungGrowth(): void {
  if (resumed) return;
  resumed = true;
  const capped = () => {
    if (newSpaceBytes() < 2 * MAX_SEMI_SPACE_BYTES) return false;
    v8.setFlagsFromString('--semi-space-growth-factor=1');
    return true;
  };
  if (capped()) return;
  v8.setFlagsFromString('--semi-space-growth-factor=2');
  const obs = new PerformanceObserver(() => {
    if (capped()) obs.disconnect();
  });
  obs.observe({ entryTypes: ['gc'] });
}
