/**
 * Attempts: claims, reports, leases. Every claim, lease change and fenced end
 * is one guarded statement or one transaction (see each backend's file).
 *
 * Clocks. SQLite (one server) uses the `now` the caller passes. PostgreSQL
 * (several servers) ignores `now` for lease arithmetic and uses the
 * database's clock, so servers whose clocks disagree still agree on which
 * leases expired. Contract tests therefore make a lease expire with a
 * negative `leaseMs`, never by moving `now`.
 */
import type { AttemptEndInput } from '../core/attempt-end.js';
import type { StopOrder } from '../core/protocol.js';
import type { Attempt, Task } from '../core/task.js';
import type { FenceReason } from '../core/fence.js';

/** A claimed attempt, ready to push to the worker. */
export interface Claim {
  task: Task;
  attempt: Attempt;
}

/** Who claims: the worker's id and its labels (placement: core/placement.ts). */
export interface ClaimingWorker {
  id: string;
  labels: Record<string, string>;
}

export type ReportCheck = { ok: true; attempt: Attempt; task: Task } | { ok: false; reason: FenceReason };

export interface AttemptEndResult {
  task: Task;
  attempt: Attempt;
}

/** Extra guards on an end, checked inside the same statement/transaction. */
export interface EndGuard {
  /** The report comes from this worker's session (core/fence.ts). Omit only for the server's own ends. */
  workerId?: string;
  /** Lease sweeper: end only if the lease has expired (store's clock, see top), so a racing heartbeat wins. */
  leaseExpired?: boolean;
}

/** One fenced end of a batch (AttemptStore.endAttempts). */
export interface EndRequest {
  attemptId: number;
  fencingToken: string;
  end: Omit<AttemptEndInput, 'attempt'>;
  /** Who ends it, for the event: `worker:<id>` or `scheduler`. */
  actor: string;
  guard?: EndGuard;
  /**
   * The task as the claim that created this attempt left it, kept by the
   * worker session that assigned the attempt. A store may plan the end from
   * it rather than from rows it reads first, and apply that plan only while
   * the rows are still as the claim left them (PostgreSQL: end-claimed.ts);
   * otherwise it plans from the rows as without it. It never changes what an
   * end does, only what it costs.
   */
  claimed?: ClaimedTask;
}

/** What endAndClaim may plan an end from (EndRequest.claimed): the claim's task and the attempt's number. */
export interface ClaimedTask extends Pick<Task, 'id' | 'retry' | 'retriesUsed' | 'lostCount' | 'dagRunId'> {
  attempt: number;
}

/** What endAndClaim claims after the ends: up to `max` tasks for `worker` (the slots the ends freed). */
export interface RefillClaim {
  worker: ClaimingWorker;
  max: number;
  leaseMs: number;
}

export interface EndAndClaimResult {
  /** As endAttempts answers. */
  ended: Array<AttemptEndResult | null>;
  /** As claimMany answers. */
  claims: Claim[];
}

export interface RenewResult {
  /** Listed attempts whose lease was extended. */
  renewed: number[];
  /**
   * Listed attempts the worker must stop: running with a stop reason (report:
   * true), or no longer its current running attempt (report: false).
   */
  stop: StopOrder[];
}

export interface AttemptStore {
  /**
   * Claims the best waiting task (highest priority, then oldest) whose
   * `requires` the worker's labels satisfy, and whose previous attempt is not
   * still running (a retry waits for it): waiting → running, a new attempt
   * with a fresh random fencing token and a lease, one event. Atomic; two
   * concurrent callers never claim the same task. Null when nothing fits.
   */
  claimNext(worker: ClaimingWorker, now: number, leaseMs: number): Promise<Claim | null>;

  /**
   * claimNext up to `max` times for one worker, as one statement (PostgreSQL)
   * or inside one transaction (SQLite): the best `max` waiting tasks it may
   * run, in claim order (priority, then age). Same guarantees as claimNext for
   * each task; fewer (or none) when fewer fit. `max` is an integer >= 1.
   */
  claimMany(worker: ClaimingWorker, max: number, now: number, leaseMs: number): Promise<Claim[]>;

  /** The fence (core/fence.ts) for a report from `workerId`'s session. Read-only. */
  checkReport(attemptId: number, fencingToken: string, workerId: string): Promise<ReportCheck>;

  /**
   * Ends an attempt and moves its task per core/attempt-end.ts, atomically and
   * fenced: null (and no change) unless the attempt is current and running,
   * the token is its, and the guards hold.
   */
  endAttempt(attemptId: number, fencingToken: string, end: Omit<AttemptEndInput, 'attempt'>, actor: string, now: number, guard?: EndGuard): Promise<AttemptEndResult | null>;

  /**
   * endAttempt for each request, all in ONE transaction, with each request
   * fenced and guarded on its own: the answer has one entry per request, in
   * order, null for each one refused (which changes nothing). A request for an
   * attempt an earlier request of the batch ended is refused like any late
   * report. Throws only if the transaction itself fails (then nothing changed).
   */
  endAttempts(requests: EndRequest[], now: number): Promise<Array<AttemptEndResult | null>>;

  /**
   * endAttempts, then (with `claim`) claimMany for that worker, in the SAME
   * transaction: a worker's exits and the claims that refill its slots cost
   * one commit. Nothing is claimed if the transaction fails; a claim sees the
   * tasks the ends requeued.
   */
  endAndClaim(requests: EndRequest[], claim: RefillClaim | null, now: number): Promise<EndAndClaimResult>;

  /** Records a rejected report as an event on the attempt's task; no-op for an attempt id that never existed. */
  recordFencedReport(attemptId: number, kind: string, actor: string, now: number): Promise<void>;

  /**
   * Extends to now + leaseMs the leases of those of `attemptIds` that are
   * `workerId`'s running attempts, and says which of them must stop (see
   * RenewResult). One statement renews; the stop list is read in the same
   * transaction.
   */
  renewLeases(workerId: string, attemptIds: number[], now: number, leaseMs: number): Promise<RenewResult>;

  /** At most `limit` running attempts whose lease ended before now (oldest first); each is ended with guard leaseExpired. */
  expiredAttempts(now: number, limit: number): Promise<Attempt[]>;
}
