/**
 * One attempt the agent holds, and the order in which it reports on it.
 *
 * Contract:
 * - On any connection an attempt's reports go out in this order: `started`
 *   (once, after the spawn), its log chunks by seq, then `exit`.
 * - `started` does not ask for a send of its own: it goes just before the
 *   attempt's own next report, with another attempt's report, or when the
 *   agent's STARTED_DELAY_MS timer fires (the `onStartedPending` callback
 *   arms it), whichever comes first (nextMessage's `startedAlone`). The
 *   server only checks it against the fence; a short task's `started` and
 *   `exit` then share one frame, one socket write on each side instead of two.
 * - `exit` goes out only when the runner's result is in (process group gone,
 *   pipes at EOF) and every chunk has been sent: the server never sees an
 *   exit before the last byte of output.
 * - After a reconnect, `rewind()` makes the chunks the server has not acked,
 *   and an exit it has not acked (`exit_ack`), go out again. The server
 *   dedupes chunks by seq.
 * - A forgotten attempt (rejected, stopped by a `report: false` stop order,
 *   or self-fenced because no server confirmed its lease in time) is killed,
 *   its output discarded, and it reports nothing more. The agent drops it
 *   once its process has ended.
 * - `leaseConfirmedAt` (the agent's monotonic clock, performance.now()) is
 *   the send time of the latest hello/heartbeat that listed this attempt and
 *   that a server answered: its lease runs until at least that + leaseMs on
 *   the server (core/lease.ts). The agent keeps it; see agent.ts.
 */
import { clampExitError, type AgentMessage, type AssignedAttempt } from '../core/protocol.js';
import { runNoop, type Executor } from './noop-executor.js';
import { runAttempt, type AttemptResult, type AttemptRun, type KillOptions, type KillReason, type RunnerOptions } from './process-runner.js';

/** `executor`: what runs the attempt; default 'process' (see noop-executor.ts for 'noop'). */
export type HeldRunnerOptions = Omit<RunnerOptions, 'onStarted' | 'onOutput'> & { executor?: Executor };

/** What HeldAttempt and the agent use of a run, whichever executor made it. */
export type Execution = Pick<AttemptRun, 'pump' | 'result' | 'pid' | 'kill'>;

export class HeldAttempt {
  readonly run: Execution;
  /** Resolves with the outcome when the attempt has ended (never rejects). */
  readonly ended: Promise<AttemptResult>;
  result: AttemptResult | null = null;
  forgotten = false;
  /** A stop order (or cancel) was acted on: repeats of it change nothing. */
  stopOrdered = false;
  /** See the contract above; set by the agent when it takes the attempt. */
  leaseConfirmedAt: number;
  private startedPending = false;
  /** Highest seq sent on the current connection. */
  private sentThrough = -1;
  private exitSent = false;

  /** `onChange`: something may be ready to send (the agent flushes). */
  constructor(
    readonly attempt: AssignedAttempt,
    runner: HeldRunnerOptions,
    onChange: (h: HeldAttempt) => void,
    leaseConfirmedAt: number,
    /** Called once the process exists (after the spawn), with its pid (0 for the noop executor). */
    onSpawned?: (pid: number) => void,
    /** `started` is due, without a send of its own (see the contract); default: onChange. */
    onStartedPending: (h: HeldAttempt) => void = onChange,
  ) {
    this.leaseConfirmedAt = leaseConfirmedAt;
    const { executor, ...runnerOpts } = runner;
    this.run = (executor === 'noop' ? runNoop : runAttempt)(attempt, {
      ...runnerOpts,
      onStarted: (pid) => {
        onSpawned?.(pid);
        this.startedPending = true;
        onStartedPending(this);
      },
      onOutput: () => onChange(this),
    });
    this.ended = this.run.result.then((r) => {
      this.result = r;
      onChange(this);
      return r;
    });
  }

  get attemptId(): number {
    return this.attempt.attemptId;
  }

  get fencingToken(): string {
    return this.attempt.fencingToken;
  }

  /**
   * The next report due on the current connection, or null. The caller must
   * send what it gets. `startedAlone`: a pending `started` goes even when
   * nothing of this attempt follows it (see the contract).
   */
  nextMessage(startedAlone = true): AgentMessage | null {
    if (this.forgotten) return null;
    const { attemptId, fencingToken } = this.attempt;
    const pump = this.run.pump;
    if (this.startedPending && this.run.pid !== null) {
      const more = pump.hasNext || pump.unackedChunk(this.sentThrough + 1) !== undefined || (this.result !== null && pump.drained && !this.exitSent);
      if (!startedAlone && !more) return null;
      this.startedPending = false;
      return { type: 'started', attemptId, fencingToken, pid: this.run.pid };
    }
    const chunk = pump.unackedChunk(this.sentThrough + 1) ?? pump.next();
    if (chunk) {
      this.sentThrough = chunk.seq;
      return { type: 'log', attemptId, fencingToken, seq: chunk.seq, stream: chunk.stream, data: chunk.data.toString('base64') };
    }
    if (this.result && pump.drained && !this.exitSent) {
      this.exitSent = true;
      return { type: 'exit', attemptId, fencingToken, ...this.result, error: clampExitError(this.result.error) };
    }
    return null;
  }

  /** A new connection: what the server has not acked is due again. */
  rewind(): void {
    this.sentThrough = this.run.pump.stats().ackedSeq;
    this.exitSent = false;
  }

  /** Kill (if still running) and report nothing more. `reason` is only seen locally (onAttemptEnd, logs). */
  forget(reason: KillReason = 'cancelled', error: string | null = null, opts: KillOptions = {}): void {
    if (this.forgotten) return;
    this.forgotten = true;
    this.run.kill(reason, error, opts);
    this.run.pump.discard();
  }

  /** Still running: no result yet, and not forgotten. */
  get live(): boolean {
    return !this.result && !this.forgotten;
  }
}
