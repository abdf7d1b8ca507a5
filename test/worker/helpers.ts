/**
 * Shared pieces of the worker tests: a temp work dir, a runner whose output a
 * test consumer pulls (acking at once or later), and process-existence checks.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { OutputChunk } from '../../src/worker/log-pump.js';
import { runAttempt, type AttemptRun, type AttemptSpec, type RunnerOptions } from '../../src/worker/process-runner.js';
import { loadNativeSpawn } from '../../src/worker/native-spawn.js';

/**
 * The spawners the runner tests run with: both, unless the addon is not built
 * here (then only Node's, and the native-spawn tests report why they skip).
 */
export const SPAWNERS: ReadonlyArray<'native' | 'node'> = 'binding' in loadNativeSpawn() ? ['native', 'node'] : ['node'];

/** A fencing token as the server makes them: 32 random hex digits. */
export function fencingToken(): string {
  return randomBytes(16).toString('hex');
}

export function tempDir(prefix: string): { dir: string; remove(): void } {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

export function spec(over: Partial<AttemptSpec>): AttemptSpec {
  return { taskId: '01TESTTASK', number: 1, command: null, args: [], script: null, interpreter: [], env: {}, timeoutMs: null, ...over };
}

export interface Collected {
  run: AttemptRun;
  chunks: OutputChunk[];
  /** Resolves with the pid when the process has been spawned. */
  started: Promise<number>;
  text(stream: 'stdout' | 'stderr'): string;
}

/** Starts an attempt whose output is pulled and acked as soon as it is readable. */
export function collect(s: AttemptSpec, opts: Omit<RunnerOptions, 'onOutput' | 'onStarted'>): Collected {
  const chunks: OutputChunk[] = [];
  let onPid!: (pid: number) => void;
  const started = new Promise<number>((r) => (onPid = r));
  const run: AttemptRun = runAttempt(s, {
    ...opts,
    onStarted: (pid) => onPid(pid),
    onOutput: () => {
      for (let c = run.pump.next(); c; c = run.pump.next()) {
        chunks.push(c);
        run.pump.ack(c.seq);
      }
    },
  });
  const text = (stream: 'stdout' | 'stderr') =>
    Buffer.concat(chunks.filter((c) => c.stream === stream).map((c) => c.data)).toString();
  return { run, chunks, started, text };
}

/** True while a process (or, with a negative id, a process group) exists. */
export function exists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw err;
  }
}

/**
 * Pids of the group's members that are still running, i.e. not zombies
 * (Linux /proc). A killed orphan stays a zombie until init reaps it, which
 * some inits (this test machine's) do only every few seconds: timing
 * assertions about a kill look at this, not at whether the pid exists.
 */
export function runningMembers(pgid: number): number[] {
  const found: number[] = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(pgrp) === pgid && state !== 'Z' && state !== 'X') found.push(Number(e));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** True while the process runs (exists and is not a zombie; see runningMembers). */
export function isRunning(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}
