/**
 * How an agent starts its reaper (worker/reaper.ts has the reaper's contract):
 * the native program when it is built, else reaper.ts under the agent's own
 * Node. Kept apart from reaper.ts so that an agent does not load the reaper's
 * module, an ES module (rolldown.config.js keeps it out of the bundle): a
 * require() of it starts Node's ESM loader in the agent and loads readline and
 * timers/promises, which the agent has no other use for. Measured (a 10-slot
 * agent with 10 tasks running, 3 runs each, 2026-12-03): VmRSS about 0.3 MB
 * lower without it.
 */
import { accessSync, constants } from 'node:fs';
import path from 'node:path';
import { packageRoot } from './package-root.js';

/** The reaper's SIGTERM → SIGKILL grace is the agent's kill grace, capped at this. */
export const REAPER_MAX_GRACE_MS = 2_000;

/**
 * The reaper's entry point as tsc wrote it, from the package root: the same
 * file whether this module runs from dist/src/ or from the CLI's bundle in
 * dist/cli/ (packageRoot walks up to package.json from either).
 */
export const REAPER_FILE = path.join('dist', 'src', 'worker', 'reaper.js');

/** The same program in C (native/reaper.c), built by `npm install` into build/Release of the package root. */
export const NATIVE_REAPER_FILE = path.join('build', 'Release', 'drover_reaper');

/** How to start a reaper: its executable and arguments, and which of the two it is. */
export interface ReaperCommand {
  kind: 'native' | 'node';
  file: string;
  args: string[];
}

/**
 * The native reaper when it was built and may be executed, else reaper.ts
 * under the agent's own Node. Why prefer it: the reaper lives as long as its
 * agent, and as a second Node process it cost 44 MB RSS (VmRSS of `node
 * reaper.js` with one group registered) where the C program, beside a 10-slot
 * agent running 10 tasks, has 1.4 MB (npm run bench -- --sections=memory);
 * both pass the same tests (test/worker/reaper.test.ts).
 * `want` forces one (tests); 'native' when it is not built throws, naming the file.
 */
export function reaperCommand(graceMs: number, want?: 'native' | 'node'): ReaperCommand {
  const args = ['--grace-ms', String(graceMs)];
  const root = packageRoot(import.meta.url);
  if (want !== 'node') {
    const file = path.join(root, NATIVE_REAPER_FILE);
    try {
      accessSync(file, constants.X_OK);
      return { kind: 'native', file, args };
    } catch (err) {
      if (want === 'native') throw new Error(`the native reaper is not available: ${file}: ${(err as Error).message}`);
    }
  }
  return { kind: 'node', file: process.execPath, args: [path.join(root, REAPER_FILE), ...args] };
}
