/**
 * The work-directory addon (native/work-dir.c states its contract and the
 * measured reason) and the batcher that groups the agent's directory calls
 * into its jobs.
 *
 * Contract of WorkDirBatcher:
 *   - remove(dir, flags) is queued and made within WINDOW_MS, together with
 *     every other removal and spare making queued meanwhile: one threadpool
 *     job. Resolves true when the directory was removed, false when
 *     something is left for a recursive removal (the caller's fallback).
 *   - make(prefix, count, 'soon') (spares, made ahead) waits for the window
 *     too; make(prefix, count, 'now') (an attempt waiting for its directory)
 *     goes at once and takes the queued removals with it.
 *   - A job holds at most one making; spare makings of one prefix queued in
 *     a window are merged into one (each caller gets its own directories),
 *     others wait for the next job. Nothing queued is dropped: the window's
 *     timer keeps the process alive until it has run, so an agent that waits
 *     for its removals (whenCleanedUp) sees them done.
 *   - A making that stops short resolves with the directories it made and
 *     the errno that stopped it.
 *   - The promises reject only when the addon refused the job's arguments
 *     (a path with a NUL byte or longer than PATH_MAX: every call in that
 *     job) or could not complete it (the engine out of memory); the callers
 *     then use Node's fs, whose errors name the path.
 *
 * Why a window: a removal is not on any attempt's path (process-runner.ts),
 * and spares are made before they are needed (spare-work-dirs.ts), so a few
 * milliseconds cost nothing, while each job saved is about 90 us of the
 * agent's main thread on this VM.
 *
 * Where the addon is not built (not Linux, no compiler at install) the
 * callers keep Node's fs, one threadpool job per call, and behave the same.
 */
import { loadAddon } from './package-root.js';

/** Removal flags (native/work-dir.c): the inline script, and the outputs file, are there to unlink. */
export const REMOVE_SCRIPT = 1;
export const REMOVE_OUTPUT = 2;
/** Most makings in one job. */
export const MAKE_MAX = 64;
/** Most removals in one job. */
export const REMOVE_MAX = 256;
/** How long a removal or a spare making waits for others to join its job. */
export const WINDOW_MS = 4;

export interface BatchResult {
  removed: boolean[];
  dirs: string[];
  errno: number;
}

export interface WorkDirBinding {
  batch(removals: string[], flags: number[], prefix: string, count: number): Promise<BatchResult>;
}

interface Removal {
  dir: string;
  flags: number;
  resolve: (removed: boolean) => void;
  reject: (err: unknown) => void;
}

/** What make() resolves with: the directories made, and the error that stopped the making before `count` (0: none). */
export interface Made {
  dirs: string[];
  errno: number;
}

interface Waiter {
  count: number;
  resolve: (r: Made) => void;
  reject: (err: unknown) => void;
}

/** One making of a job: one prefix, the counts of every make() it serves. */
interface Making {
  prefix: string;
  count: number;
  now: boolean;
  waiters: Waiter[];
}

export class WorkDirBatcher {
  private removals: Removal[] = [];
  private makings: Making[] = [];
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly binding: WorkDirBinding) {}

  remove(dir: string, flags: number): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.removals.push({ dir, flags, resolve, reject });
      if (this.removals.length >= REMOVE_MAX) this.flush();
      else this.arm();
    });
  }

  /** Up to `count` (at most MAKE_MAX) directories `<prefix>XXXXXX`, each with its `out`. */
  make(prefix: string, count: number, when: 'now' | 'soon'): Promise<Made> {
    return new Promise((resolve, reject) => {
      const waiter = { count: Math.min(count, MAKE_MAX), resolve, reject };
      if (when === 'now') {
        // An attempt waiting goes before the spares, at once.
        this.makings.unshift({ prefix, count: waiter.count, now: true, waiters: [waiter] });
        this.flush();
        return;
      }
      // Spares asked for within one window share a making when they can.
      const last = this.makings.at(-1);
      if (last && !last.now && last.prefix === prefix && last.count + waiter.count <= MAKE_MAX) {
        last.count += waiter.count;
        last.waiters.push(waiter);
      } else {
        this.makings.push({ prefix, count: waiter.count, now: false, waiters: [waiter] });
      }
      this.arm();
    });
  }

  private arm(): void {
    this.timer ??= setTimeout(() => {
      this.timer = null;
      this.flush();
    }, WINDOW_MS);
  }

  /** One job: the queued removals (up to REMOVE_MAX) and the first making. What is left goes in the next one. */
  private flush(): void {
    const removals = this.removals.splice(0, REMOVE_MAX);
    const making = this.makings.shift();
    if (removals.length === 0 && !making) return;
    let job: Promise<BatchResult>;
    try {
      job = this.binding.batch(
        removals.map((r) => r.dir),
        removals.map((r) => r.flags),
        making?.prefix ?? '',
        making?.count ?? 0,
      );
    } catch (err) {
      job = Promise.reject(err);
    }
    job.then(
      (r) => {
        removals.forEach((rm, i) => rm.resolve(r.removed[i] === true));
        // In order: each waiter gets its count, until the directories made run out (the making stopped there).
        let next = 0;
        for (const w of making?.waiters ?? []) {
          const dirs = r.dirs.slice(next, next + w.count);
          next += dirs.length;
          w.resolve({ dirs, errno: dirs.length < w.count ? r.errno : 0 });
        }
      },
      (err: unknown) => {
        for (const rm of removals) rm.reject(err);
        for (const w of making?.waiters ?? []) w.reject(err);
      },
    );
    if (this.makings[0]?.now) this.flush();
    else if (this.removals.length > 0 || this.makings.length > 0) this.arm();
  }
}

/** The addon itself, or why it is not there. */
export function loadWorkDirBinding(): { binding: WorkDirBinding } | { reason: string } {
  return loadAddon<WorkDirBinding>('drover_workdir', 'the work-directory addon');
}

let loaded: WorkDirBatcher | null | undefined;

/** The batcher over the addon, made once; null where the addon is not built or does not load (the callers use Node's fs). */
export function workDirBatcher(): WorkDirBatcher | null {
  if (loaded === undefined) {
    const r = loadWorkDirBinding();
    loaded = 'binding' in r ? new WorkDirBatcher(r.binding) : null;
  }
  return loaded;
}

/**
 * Tests: use `b` (null: Node's fs) instead of the batcher over the loaded
 * addon, so both paths run on this machine; undefined goes back to loading it.
 */
export function setWorkDirBatcher(b: WorkDirBatcher | null | undefined): void {
  loaded = b;
}
