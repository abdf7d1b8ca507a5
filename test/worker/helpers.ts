/**
 * Shared pieces of the worker tests: a temp work dir, a runner whose output a
 * test consumer pulls (acking at once or later), and process-existence checks.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { OutputChunk } from '../../src/worker/log-pump.js';
import { runAttempt, type AttemptRun, type AttemptSpec, type RunnerOptions } from '../../src/worker/process-runner.js';

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
