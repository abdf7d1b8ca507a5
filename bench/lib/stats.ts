/** Shared arithmetic, clocks and probes for every bench section. */
import { readdirSync, readFileSync } from 'node:fs';

/** Wall-clock epoch milliseconds with a fraction, comparable across processes on this machine (the agent stamps `spawnedAt` the same way). */
export const wallMs = (): number => performance.timeOrigin + performance.now();

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A span after an untimed warm-up (sizes.warmUp): seconds of each, the warm-up's being the cold figure printed beside the span. */
export interface WarmedSpan {
  s: number;
  warmS: number;
}

/** Runs `warmUp`, then `timed`; the timed span starts after the warm-up's last operation returned. */
export async function afterWarmUp(warmUp: () => unknown, timed: () => unknown): Promise<WarmedSpan> {
  const w0 = performance.now();
  await warmUp();
  const t0 = performance.now();
  await timed();
  return { s: (performance.now() - t0) / 1000, warmS: (t0 - w0) / 1000 };
}

/** Nearest-rank percentile of an ascending array. */
export function percentile(sorted: readonly number[], p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export interface Dist {
  n: number;
  p50: number;
  p99: number;
  max: number;
}

export function dist(xs: readonly number[]): Dist {
  const s = [...xs].sort((a, b) => a - b);
  return { n: s.length, p50: percentile(s, 50), p99: percentile(s, 99), max: s[s.length - 1] ?? NaN };
}

export const fmtDist = (d: Dist): string => `p50 ${d.p50.toFixed(1)} ms, p99 ${d.p99.toFixed(1)} ms`;

/** "1,234/s (1.62 s)" */
export const fmtRate = (n: number, seconds: number, unit = '/s'): string => `${Math.round(n / seconds).toLocaleString('en-US')}${unit} (${seconds.toFixed(2)} s)`;

/** kB (as /proc reports, 1,024 bytes) → "12.3 MB" (10^6 bytes, the unit of the targets). */
export const mb = (kb: number): string => `${((kb * 1024) / 1e6).toFixed(1)} MB`;

/** Polls `cond` every `everyMs` until true; fails after `timeoutMs` naming `what`. */
export async function until(what: string, cond: () => Promise<boolean> | boolean, timeoutMs = 600_000, everyMs = 10): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

/**
 * Open loop: the i-th call starts at t0 + intervalMs·i whether or not the
 * earlier ones finished. `fire` gets the wall-clock stamp taken just before
 * it is called; resolves when every call has settled.
 */
export async function openLoop(n: number, intervalMs: number, fire: (i: number, stampMs: number) => Promise<void>): Promise<void> {
  const t0 = performance.now() + 5;
  const calls: Promise<void>[] = [];
  for (let i = 0; i < n; i++) {
    const wait = t0 + intervalMs * i - performance.now();
    if (wait > 0) await sleep(wait);
    calls.push(fire(i, wallMs()));
  }
  await Promise.all(calls);
}

/** Runs `fn` `n` times with at most `inflight` calls pending. */
export async function inFlight(n: number, inflight: number, fn: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(inflight, n) }, async () => {
      while (next < n) await fn(next++);
    }),
  );
}

/** `n` split into chunks of at most `size`: [size, size, ..., rest]. */
export function chunks(n: number, size: number): number[] {
  const out: number[] = [];
  for (let done = 0; done < n; done += size) out.push(Math.min(size, n - done));
  return out;
}

/**
 * VmRSS and VmHWM of a live process, in kB, from /proc; and VmRSS's parts:
 * RssAnon (the process's own heap and stacks) and RssFile (mapped files, for
 * Node mostly its own executable's pages, which every Node process on the
 * host shares). `own`: the resident pages no other process maps
 * (Private_Clean + Private_Dirty of /proc/<pid>/smaps_rollup, often called
 * USS): what this process adds to the host's memory, which VmRSS overstates
 * by every shared page.
 */
export function procMemKb(pid: number): { rss: number; hwm: number; anon: number; file: number; own: number } {
  const kb = (text: string, field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN);
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  return {
    rss: kb(status, 'VmRSS'),
    hwm: kb(status, 'VmHWM'),
    anon: kb(status, 'RssAnon'),
    file: kb(status, 'RssFile'),
    own: kb(rollup, 'Private_Clean') + kb(rollup, 'Private_Dirty'),
  };
}

/** CPU seconds (user + system) used so far by these processes, from /proc/<pid>/stat; gone processes count 0. */
export function cpuSeconds(pids: readonly number[]): number {
  const tick = 100; // USER_HZ on Linux
  let t = 0;
  for (const pid of pids) {
    try {
      const f = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = f.slice(f.lastIndexOf(')') + 2).split(' ');
      t += (Number(fields[11]) + Number(fields[12])) / tick;
    } catch {
      // exited
    }
  }
  return t;
}

/**
 * CPU seconds used so far by the PostgreSQL server: its postmaster's own and
 * reaped children's time (utime+stime+cutime+cstime) plus every live backend's,
 * so backends that exit between two reads are still counted.
 */
export function postgresCpuSeconds(): number {
  const procs = new Map<number, { ppid: number; own: number; children: number }>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (readFileSync(`/proc/${d}/comm`, 'utf8').trim() !== 'postgres') continue;
      const f = readFileSync(`/proc/${d}/stat`, 'utf8');
      const x = f.slice(f.lastIndexOf(')') + 2).split(' ').map(Number);
      procs.set(Number(d), { ppid: x[1]!, own: (x[11]! + x[12]!) / 100, children: (x[13]! + x[14]!) / 100 });
    } catch {
      // exited
    }
  }
  let t = 0;
  for (const p of procs.values()) t += p.own + (procs.has(p.ppid) ? 0 : p.children);
  return t;
}
