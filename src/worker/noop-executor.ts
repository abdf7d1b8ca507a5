/**
 * The no-op executor (`drover worker --executor noop`, `AgentOptions.executor:
 * 'noop'`), like Nomad's mock driver: for benchmarks and tests of the control
 * plane (submit → claim → start → complete) without the cost of fork+exec, a
 * work directory or output pipes drowning out the scheduler's own costs.
 *
 * An assigned attempt "starts" at once with pid 0 and "exits" right after:
 * outcome `succeeded`, exitCode 0, durationMs 0, no output. It goes through
 * the same HeldAttempt as a real run, so the agent reports it the same way
 * (`started`, then `exit`, re-sent after a reconnect until `exit_ack`). The
 * task's command or script is ignored: nothing runs. Not for production.
 */
import { LOG_LIMITS } from '../core/protocol.js';
import { LogPump } from './log-pump.js';
import type { AttemptResult, AttemptSpec, KillOptions, KillReason, RunnerOptions } from './process-runner.js';

/** What runs an assigned attempt: real processes (process-runner.ts) or nothing (this file). */
export type Executor = 'process' | 'noop';
export const EXECUTORS: readonly Executor[] = ['process', 'noop'];

export function isExecutor(v: unknown): v is Executor {
  return typeof v === 'string' && (EXECUTORS as readonly string[]).includes(v);
}

/** The part of an AttemptRun (process-runner.ts) that HeldAttempt and the agent use. */
export class NoopRun {
  /** Never gets a stream: always drained, nothing to send. */
  readonly pump: LogPump;
  readonly result: Promise<AttemptResult>;
  readonly pid: number | null = 0;
  private killReason: KillReason | null = null;
  private killError: string | null = null;
  private done = false;

  constructor(_spec: AttemptSpec, opts: Pick<RunnerOptions, 'onStarted' | 'onOutput' | 'logLimits'>) {
    this.pump = new LogPump({ ...(opts.logLimits ?? LOG_LIMITS), onOutput: opts.onOutput });
    // Asynchronous, like a spawn: the caller finishes setting up before `started` and the result arrive.
    this.result = Promise.resolve().then(() => {
      if (!this.killReason) opts.onStarted?.(0);
      this.done = true;
      if (this.killReason) return { outcome: this.killReason, exitCode: null, signal: null, error: this.killError, durationMs: 0 };
      return { outcome: 'succeeded', exitCode: 0, signal: null, error: null, durationMs: 0 };
    });
  }

  /** Before the (immediate) end: the attempt ends with this reason; after it: nothing to stop. */
  kill(reason: KillReason, error: string | null = null, _opts: KillOptions = {}): void {
    if (this.done || this.killReason) return;
    this.killReason = reason;
    this.killError = error;
  }
}

export function runNoop(spec: AttemptSpec, opts: Pick<RunnerOptions, 'onStarted' | 'onOutput' | 'logLimits'>): NoopRun {
  return new NoopRun(spec, opts);
}
