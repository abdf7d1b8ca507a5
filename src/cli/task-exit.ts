/**
 * The exit status a command that waited for a task mirrors (`submit --wait`,
 * `logs -f`), following shell conventions, and the one summary line on
 * stderr when the task did not succeed:
 *
 *   succeeded                                   -> 0, no line
 *   failed, the process exited with n > 0       -> n (capped at 255)
 *   failed, killed by a signal (not a timeout)  -> 128 + the signal's number (SIGKILL: 137)
 *   timed out (outcome timed_out)               -> 124, as GNU `timeout` (never 128+SIGTERM)
 *   cancelled, lost, could not start, other     -> 1
 *
 * The line: `task <id> <state>: <outcome detail> (attempts N, duration D)`,
 * where D is the last attempt's run time. Pure: no I/O.
 */
import { constants } from 'node:os';
import type { Task } from '../client/types.js';
import { formatMs } from './output.js';

export interface WaitOutcome {
  exitCode: number;
  /** Null when the task succeeded; the caller prints `drover: <message>` on stderr. */
  message: string | null;
}

/** Exit status of a timed-out task (GNU coreutils `timeout`). */
export const EXIT_TIMED_OUT = 124;

/** 128 + the signal's number, or null for a name this platform does not know. */
export function signalExitCode(signal: string | null | undefined): number | null {
  if (!signal) return null;
  const n = (constants.signals as Record<string, number | undefined>)[signal];
  return typeof n === 'number' ? 128 + n : null;
}

export function waitOutcome(task: Task): WaitOutcome {
  if (task.state === 'succeeded') return { exitCode: 0, message: null };
  const r = task.result;
  let exitCode = 1;
  let detail: string;
  if (task.state === 'cancelled') {
    detail = r?.error ? `cancelled (${r.error})` : 'cancelled';
  } else if (task.state === 'skipped') {
    // A DAG step its dependencies ruled out: it never ran.
    detail = task.skipReason ? `skipped (${task.skipReason.replace(/_/g, ' ')})` : 'skipped';
  } else if (!r) {
    detail = 'ended without a result';
  } else if (r.outcome === 'timed_out') {
    exitCode = EXIT_TIMED_OUT;
    detail = r.error ?? 'timed out';
  } else if (r.outcome === 'lost') {
    detail = r.error ? `worker lost: ${r.error}` : 'worker lost';
  } else if (r.outcome === 'failed' && r.signal) {
    exitCode = signalExitCode(r.signal) ?? 1;
    detail = `killed by ${r.signal}${r.error ? `: ${r.error}` : ''}`;
  } else if (r.outcome === 'failed' && r.exitCode !== null && r.exitCode > 0) {
    exitCode = Math.min(r.exitCode, 255);
    detail = `exit code ${r.exitCode}`;
  } else {
    // Could not start (start_failed), or an outcome this CLI does not know yet: Drover's own failure.
    const outcome = String(r.outcome);
    detail = [outcome === 'failed' ? '' : outcome.replace(/_/g, ' '), r.error ?? (r.exitCode !== null ? `exit code ${r.exitCode}` : '')].filter(Boolean).join(': ') || outcome;
  }
  const attempts = `attempts ${task.attempts}`;
  const duration = `duration ${r && r.durationMs !== null ? formatMs(r.durationMs) : '-'}`;
  return { exitCode, message: `task ${task.id} ${task.state}: ${detail} (${attempts}, ${duration})` };
}
