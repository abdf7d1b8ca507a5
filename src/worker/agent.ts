/**
 * The worker agent: one connection to the servers, the attempts it runs, and
 * the protocol between them (src/core/protocol.ts).
 *
 * Connection states:
 *   connecting ──open──► open (hello sent) ──welcome──► ready ──close/error──► connecting (backoff)
 * Only `ready` sends reports and heartbeats. Attempts keep running through an
 * outage; on the next `welcome` every held attempt is rewound, so unacked log
 * chunks and unacked exits go out again (see held-attempt.ts).
 *
 * Contracts:
 * - `hello.running` and `heartbeat.running` list the attempts this agent
 *   still holds: process running, or ended with its exit not yet acked, and
 *   the queued ones (prefetch). The lease of an attempt stays renewed until
 *   the server has its result.
 * - Liveness: every heartbeat also pings. A ready connection silent for
 *   2 × heartbeatMs (at least 1 s) is dropped and re-established.
 * - Heartbeats carry `seq`, increasing; the agent remembers when it sent each
 *   one (monotonic clock) and which attempts it listed. A `welcome` confirms
 *   the hello it answers, a `heartbeat_ack {seq}` that heartbeat: every
 *   attempt the confirmed message listed has `leaseConfirmedAt` = its send
 *   time, since the server renewed the lease after that send.
 *   An attempt assigned since counts from the assign's arrival: the server
 *   sends it as soon as the claim (which set its lease) has committed, so
 *   the lease started at most the delivery time before; leaseSafetyMs
 *   (core/lease.ts, 250 ms to 1 s) absorbs that delay, and the next
 *   heartbeat's answer confirms it exactly. (Counting from an older
 *   confirmed send instead would self-fence a fresh attempt on a connection
 *   whose last answers are a heartbeat period or two old.)
 * - Self-fencing (no overlap with a replacement): for each running attempt,
 *   core/lease.ts selfFencePlan(leaseConfirmedAt, leaseMs, killGraceMs) says
 *   when to stop it: at `stopAt` the agent sends SIGTERM with the plan's
 *   grace, so even a process that ignores SIGTERM is SIGKILLed before the
 *   server can end the lease and start a replacement. The attempt is then
 *   forgotten (the server ends it as lost), remembered and listed in the next
 *   `hello` as `killed` (forgotten once a `welcome` answers that hello), and
 *   the connection is dropped if open (a server that confirms no heartbeat
 *   is no use; the reconnect carries the report). Only attempts whose lease
 *   was not confirmed in time are touched: a short outage (reconnect and
 *   welcome before stopAt) changes nothing.
 * - Stop orders (`welcome.stop`, `heartbeat_ack.stop`) repeat on every answer
 *   until the attempt ends, so handling one is idempotent. report: true is a
 *   cancel (kill, outcome `cancelled`, exit reported as usual); report: false
 *   is a `reject` (kill, report nothing more, forget).
 * - Reaper (process executor): a child process holding a pipe from the agent
 *   (reaper.ts, reaper-client.ts) knows every live process group and stops
 *   them if the agent dies outright. Leftovers of an agent whose reaper died
 *   too are stopped by the next agent on the same work dir (leftovers.ts).
 * - Task environment: task-env.ts (never the agent's own environment; only
 *   the names in `passEnv` are passed on).
 * - Drain (`drain()` on SIGTERM/SIGINT, or the server's `drain`): the agent
 *   accepts no more work and says `draining` (again right after each later
 *   `hello`). Running attempts may finish for up to `drainTimeoutMs`; those
 *   still running then are stopped (SIGTERM to the group, SIGKILL after the
 *   kill grace) and reported with outcome `lost`, so the server runs them
 *   elsewhere without using a retry. An `assign` while draining is not run:
 *   it is reported `lost` ("worker is draining") at once (held, like any
 *   exit, until `exit_ack`). After a server's `drain` the agent then stays
 *   connected, idle; after `drain()` it waits (at most EXIT_ACK_WAIT_MS) for
 *   the server to ack every exit, then closes.
 * - Prefetch (`prefetch`, default 0): up to that many assignments beyond
 *   `slots` wait in a queue and start as slots free (prefetch-queue.ts has
 *   their contract: leased, listed and self-fenced like running ones; a
 *   cancel ends one without starting it; a drain or close gives them back
 *   as `lost`). `prefetch: 'auto'` (auto-prefetch.ts): the hello offers
 *   none; after a run of short attempts a `prefetch` message offers twice
 *   the slots, and `prefetch 0` withdraws it when an attempt runs long or the
 *   queue stops moving (the server then asks the queue back). Sent
 *   only to a server whose welcome said `prefetchChanges`.
 * - Capacity is the server's to respect: an `assign` beyond `slots` and the
 *   prefetch still runs (with a warning) rather than silently vanish; an
 *   `assign` during `close()` is ignored and becomes `lost` on the server.
 * - close() stops running attempts as `lost` ("worker shutting down"): they
 *   run again elsewhere without using a retry.
 */
import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { selfFencePlan } from '../core/lease.js';
import { DEFAULT_HEARTBEAT_MS, DEFAULT_LEASE_MS, DEFAULT_MAX_LOG_BYTES, LOG_LIMITS, MAX_PREFETCH, PROTOCOL_VERSION, type AgentMessage, type AssignedAttempt, type ServerMessage, type StopOrder } from '../core/protocol.js';
import { Connection } from './connection.js';
import { HeldAttempt, type HeldRunnerOptions } from './held-attempt.js';
import { PrefetchQueue, type Queued } from './prefetch-queue.js';
import { AutoPrefetch, autoPrefetchOptions } from './auto-prefetch.js';
import { refusalHint } from './refusal-hint.js';
import { silentLogger, type Logger } from './logger.js';
import { reapLeftovers } from './leftovers.js';
import { SpareWorkDirs } from './spare-work-dirs.js';
import { EXECUTORS, isExecutor, type Executor } from './noop-executor.js';
import { whenCleanedUp, type AttemptResult } from './process-runner.js';
import { ReaperClient } from './reaper-client.js';
import type { BackoffOptions } from './reconnect-backoff.js';
import { passedEnv } from './task-env.js';

export type { Logger } from './logger.js';
export type { AttemptResult } from './process-runner.js';
export type { Executor } from './noop-executor.js';

export interface AgentOptions {
  /** Base URLs, e.g. ['http://127.0.0.1:7070']; tried in turn. */
  servers: string[];
  /** Worker-role bearer token. */
  token: string;
  /** Max concurrent attempts. */
  slots: number;
  /**
   * Assignments taken beyond `slots`, queued until a slot frees (prefetch-queue.ts): 0..MAX_PREFETCH, or
   * 'auto' (auto-prefetch.ts: twice the slots, offered only while the tasks are short; `drover worker`'s
   * default). Default 0.
   */
  prefetch?: number | 'auto';
  labels?: Record<string, string>;
  /** Default `${hostname}-${6 random hex}`. */
  workerId?: string;
  /** Parent of the per-attempt work directories (created if missing; unused by the noop executor). */
  workDir: string;
  /**
   * What runs an assigned attempt. 'process' (default): the task's command or
   * script, in its own process group. 'noop': nothing; the attempt succeeds at
   * once (benchmarks and tests of the control plane; see noop-executor.ts).
   */
  executor?: Executor;
  /** SIGTERM → SIGKILL grace. Default 5000. Self-fencing may use less (core/lease.ts). */
  killGraceMs?: number;
  /** Output kept per attempt, in bytes; the rest is dropped after a marker line (log-pump.ts). Default DEFAULT_MAX_LOG_BYTES. */
  maxLogBytes?: number;
  /**
   * Names of the agent's environment variables passed on to tasks (when set):
   * `drover worker --pass-env NAME`. Tasks see nothing else of the agent's
   * environment (task-env.ts). DROVER_TOKEN is refused.
   */
  passEnv?: string[];
  /** Pino-compatible. Default: silent. */
  logger?: Logger;
  /** startAgent rejects when no `welcome` arrived within this. Default 10 000. */
  startTimeoutMs?: number;
  /** Reconnect backoff. Default 100 ms doubling to 5 s, jittered. */
  backoff?: BackoffOptions;
  /**
   * Drain: how long running attempts may go on finishing before the agent
   * stops them and reports them `lost`. Default 30 000.
   */
  drainTimeoutMs?: number;
  /** Observes every attempt that ended on this agent, reported or not (logging, tests). */
  onAttemptEnd?: (attempt: AssignedAttempt, result: AttemptResult, reported: boolean) => void;
}

export interface Agent {
  readonly workerId: string;
  /** Stop accepting, kill running attempts (SIGTERM, then SIGKILL after the grace), report them `lost` if connected, close the socket. Idempotent. */
  close(): Promise<void>;
  /**
   * Graceful stop (SIGTERM): accept no more work, say `draining`, let running
   * attempts finish for up to `drainTimeoutMs`, stop the rest and report them
   * `lost`, wait (bounded) for the server's exit_acks, close the socket.
   * Resolves when all that is done. `now`: stop the running attempts at once
   * instead of waiting for them (also when a drain is already under way: a
   * second SIGTERM). Idempotent.
   */
  drain(opts?: { now?: boolean }): Promise<void>;
}

export const DEFAULT_DRAIN_TIMEOUT_MS = 30_000;
/** Work directories kept made ahead (spare-work-dirs.ts): one per slot, at most this many. */
export const MAX_SPARE_WORK_DIRS = 16;
/** drain(): how long to wait for the server to ack the last exits before closing. */
export const EXIT_ACK_WAIT_MS = 5_000;
/**
 * How long a `started` report may wait for company (held-attempt.ts). Measured
 * (issue 9, 4,000 `/bin/true` through one agent with 8 slots): a short task
 * exits within a few milliseconds of its spawn, and sending `started` on its
 * own cost a socket write in the agent and a frame in the server per task.
 */
export const STARTED_DELAY_MS = 10;

/** Resolves once the first connection got `welcome`; rejects after `startTimeoutMs` without one. */
export async function startAgent(opts: AgentOptions): Promise<Agent> {
  // A work dir that cannot be created is a configuration error: say so now, not at the first attempt.
  if ((opts.executor ?? 'process') === 'process') {
    await mkdir(opts.workDir, { recursive: true });
    // A previous agent on this work dir may have died with attempts running (and its reaper too): stop them first.
    const stopped = await reapLeftovers(opts.workDir);
    for (const s of stopped) (opts.logger ?? silentLogger).warn({ pgid: s.pgid, taskId: s.taskId, pids: s.pids }, 'stopped an attempt a previous agent left running');
  }
  const agent = new WorkerAgent(opts);
  try {
    await agent.waitWelcome(opts.startTimeoutMs ?? 10_000);
  } catch (err) {
    await agent.close();
    throw err;
  }
  return agent;
}

/** A hello or heartbeat awaiting its answer: when it was sent (performance.now()) and the attempts it listed. */
interface Send {
  sentAt: number;
  ids: number[];
}

class WorkerAgent implements Agent {
  readonly workerId: string;
  private readonly log: Logger;
  private readonly conn: Connection;
  private readonly held = new Map<number, HeldAttempt>();
  private readonly queued: PrefetchQueue;
  /** `prefetch: 'auto'`: whether the queue is offered now (auto-prefetch.ts); null: a fixed prefetch. */
  private readonly auto: AutoPrefetch | null = null;
  /** The server of this connection takes `prefetch` messages (its welcome said so). */
  private prefetchChanges = false;
  /** Checks whether the queue has stalled while the auto prefetch is offered (armQueueCheck). */
  private queueTimer: NodeJS.Timeout | null = null;
  /** When an attempt last left the queue to start, or entered it empty (the agent's monotonic clock): the queue's last move. */
  private queueMovedAt = 0;
  private readonly runner: HeldRunnerOptions & { killGraceMs: number };
  private readonly spares: SpareWorkDirs | null = null;
  private readonly reaper: ReaperClient | null = null;
  private ready = false;
  private closing: Promise<void> | null = null;
  private heartbeatMs = DEFAULT_HEARTBEAT_MS;
  private leaseMs = DEFAULT_LEASE_MS;
  private heartbeatTimer: NodeJS.Timeout | null = null;
  private startedTimer: NodeJS.Timeout | null = null;
  private welcomed!: () => void;
  private readonly firstWelcome = new Promise<void>((r) => (this.welcomed = r));
  private readonly drainTimeoutMs: number;
  /** Set once draining starts; resolves when no attempt runs any more (finished, or stopped as lost). */
  private drained: Promise<void> | null = null;
  /** drain(): drained, exits acked (bounded), closed. */
  private drainedAndClosed: Promise<void> | null = null;
  private skipDrainWaitRequested = false;
  private skipDrainWaiter: (() => void) | null = null;
  /** Self-fencing kills not yet acknowledged by a `welcome`. */
  private readonly selfFenced: Array<{ attemptId: number; fencingToken: string; reason: string }> = [];
  /** How many of `selfFenced` the last hello carried. */
  private killedInHello = 0;
  /** Woken on anything that may change what the agent holds (messages, attempt ends). */
  private changeWaiters: Array<() => void> = [];
  /** The hello of the current connection, until its welcome. */
  private helloSend: Send | null = null;
  /** Heartbeats of the current connection not answered yet, by seq. */
  private readonly heartbeats = new Map<number, Send>();
  private heartbeatSeq = 0;
  private fenceTimer: NodeJS.Timeout | null = null;

  constructor(private readonly opts: AgentOptions) {
    if (!Number.isInteger(opts.slots) || opts.slots < 1) throw new RangeError('slots must be a positive integer');
    if (!opts.token) throw new Error('a worker token is required');
    const prefetch = opts.prefetch ?? 0;
    if (prefetch === 'auto') this.auto = new AutoPrefetch(autoPrefetchOptions(opts.slots, MAX_PREFETCH));
    else if (!Number.isInteger(prefetch) || prefetch < 0 || prefetch > MAX_PREFETCH) throw new RangeError(`prefetch must be an integer from 0 to ${MAX_PREFETCH}, or 'auto'`);
    // Auto: the queue holds what the largest offer lets the server send, including assigns already on their way when the offer is withdrawn.
    this.queued = new PrefetchQueue(this.auto ? this.auto.opts.cap : (prefetch as number));
    if (opts.executor !== undefined && !isExecutor(opts.executor)) throw new RangeError(`executor must be one of ${EXECUTORS.join(', ')}`);
    const drainTimeoutMs = opts.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS;
    if (!Number.isFinite(drainTimeoutMs) || drainTimeoutMs < 0) throw new RangeError('drainTimeoutMs must be a non-negative number of milliseconds');
    const killGraceMs = opts.killGraceMs ?? 5_000;
    if (!Number.isFinite(killGraceMs) || killGraceMs < 0) throw new RangeError('killGraceMs must be a non-negative number of milliseconds');
    const maxLogBytes = opts.maxLogBytes ?? DEFAULT_MAX_LOG_BYTES;
    if (!Number.isSafeInteger(maxLogBytes) || maxLogBytes < 1) throw new RangeError('maxLogBytes must be a positive whole number of bytes');
    // Read once: the agent's environment is not consulted again for tasks.
    const passEnv = passedEnv(opts.passEnv ?? [], process.env);
    this.drainTimeoutMs = drainTimeoutMs;
    this.log = opts.logger ?? silentLogger;
    for (const name of opts.passEnv ?? []) if (!(name in passEnv)) this.log.warn({ name }, 'passEnv: not set in the agent\'s environment; tasks will not have it');
    this.workerId = opts.workerId ?? `${os.hostname()}-${randomBytes(3).toString('hex')}`;
    this.conn = new Connection(
      { servers: opts.servers, token: opts.token, logger: this.log, backoff: opts.backoff },
      {
        onOpen: () => {
          this.heartbeats.clear();
          this.sendHello();
          if (this.drained) this.conn.send({ type: 'draining' });
        },
        onMessage: (m) => this.onMessage(m),
        onDown: (reason) => this.onDown(reason),
        onWritable: () => this.flush(true),
      },
    );
    // Started once the options are known good (the Connection checked the URLs), so a bad option leaks no process.
    const executor = opts.executor ?? 'process';
    if (executor === 'process') this.reaper = new ReaperClient(killGraceMs, this.log);
    // A new group gets its reaper deadline at once (scheduleFence), not only at the next heartbeat answer.
    const reaper = this.reaper;
    const groups = reaper && {
      add: (pgid: number, taskId: string) => {
        reaper.add(pgid, taskId);
        this.scheduleFence();
      },
      remove: (pgid: number) => reaper.remove(pgid),
    };
    // Made after startAgent reaped the work dir's leftovers (which would take spares for leftovers).
    if (executor === 'process') {
      this.spares = new SpareWorkDirs(opts.workDir, Math.min(opts.slots, MAX_SPARE_WORK_DIRS), this.log);
      this.spares.fill();
    }
    const workDirs = this.spares ? { workDirs: this.spares } : {};
    const logLimits = { ...LOG_LIMITS, maxKeptBytes: maxLogBytes };
    this.runner = { workDir: opts.workDir, ...workDirs, killGraceMs, logLimits, logger: this.log, executor, passEnv, workerId: this.workerId, ...(groups ? { groups } : {}) };
    this.conn.start();
  }

  async waitWelcome(timeoutMs: number): Promise<void> {
    const ac = new AbortController();
    const timeout = sleep(timeoutMs, undefined, { signal: ac.signal }).then(
      () => {
        throw new Error(`no server welcomed worker ${this.workerId} within ${timeoutMs} ms (last error: ${this.conn.lastError ?? 'none'})`);
      },
      () => {},
    );
    try {
      await Promise.race([this.firstWelcome, timeout]);
    } finally {
      ac.abort();
    }
  }

  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  drain(opts: { now?: boolean } = {}): Promise<void> {
    if (this.closing && !this.drainedAndClosed) return this.closing; // close() came first
    const drained = this.startDrain();
    if (opts.now) this.skipDrainWait();
    this.drainedAndClosed ??= (async () => {
      await drained;
      await this.waitFor(() => this.reported().length === 0, EXIT_ACK_WAIT_MS);
      await this.close();
    })();
    return this.drainedAndClosed;
  }

  private async shutdown(): Promise<void> {
    if (this.queueTimer) clearTimeout(this.queueTimer);
    this.queueTimer = null;
    this.giveBackQueued('worker shutting down');
    const live = [...this.held.values()].filter((h) => !h.result);
    // Lost, not cancelled: the task runs again elsewhere without using a retry.
    for (const h of live) h.run.kill('lost', 'worker shutting down');
    this.skipDrainWait();
    await this.awaitEnd(live, !this.ready);
    this.flush(true);
    this.stopHeartbeat();
    await this.conn.close();
    this.ready = false;
    if (this.fenceTimer) clearTimeout(this.fenceTimer);
    this.fenceTimer = null;
    // The work dirs of attempts that ended are removed after their exit reports (process-runner.ts).
    await whenCleanedUp();
    await this.spares?.close();
    await this.reaper?.close();
  }

  /**
   * Waits for killed attempts to end. Output still flows to the server while it
   * is there to ack it; without one (`discardNow`), or past the grace, it is
   * discarded so paused pipes cannot hold the attempt open.
   */
  private async awaitEnd(killed: HeldAttempt[], discardNow: boolean): Promise<void> {
    const discardAll = () => killed.forEach((h) => h.run.pump.discard());
    if (discardNow) discardAll();
    const grace = this.runner.killGraceMs;
    const ac = new AbortController();
    const all = Promise.all(killed.map((h) => h.ended));
    await Promise.race([all, sleep(grace + 2_000, undefined, { signal: ac.signal }).catch(() => {})]);
    ac.abort();
    discardAll();
    await all;
  }

  /** Starts draining (once): see the contract at the top. */
  private startDrain(): Promise<void> {
    if (!this.drained) {
      this.log.info({ drainTimeoutMs: this.drainTimeoutMs }, 'draining: accepting no more work');
      // Sent whenever the socket is open: after a reconnect it follows the hello (onOpen).
      this.conn.send({ type: 'draining' });
      this.giveBackQueued('worker is draining');
      this.drained = this.finishOrStop();
    }
    return this.drained;
  }

  /** Ends the drain's wait for running attempts now (second signal, close()). */
  private skipDrainWait(): void {
    this.skipDrainWaitRequested = true;
    this.skipDrainWaiter?.();
  }

  private async finishOrStop(): Promise<void> {
    const running = () => [...this.held.values()].filter((h) => h.live);
    const skip = new Promise<void>((r) => {
      this.skipDrainWaiter = r;
      if (this.skipDrainWaitRequested) r();
    });
    const ac = new AbortController();
    await Promise.race([Promise.all(running().map((h) => h.ended)), skip, sleep(this.drainTimeoutMs, undefined, { signal: ac.signal }).catch(() => {})]);
    ac.abort();
    const rest = running();
    if (rest.length === 0) return;
    const error = this.skipDrainWaitRequested
      ? 'worker drained: stopped at once (asked to stop without waiting)'
      : `worker drained: stopped after the ${humanMs(this.drainTimeoutMs)} drain timeout`;
    this.log.warn({ attempts: rest.map((h) => h.attemptId), drainTimeoutMs: this.drainTimeoutMs }, 'drain: stopping the attempts still running; they are reported lost');
    for (const h of rest) h.run.kill('lost', error);
    await this.awaitEnd(rest, false);
  }

  /** Resolves when `pred()` holds, or after `timeoutMs`. */
  private async waitFor(pred: () => boolean, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!pred()) {
      const left = deadline - Date.now();
      if (left <= 0) return;
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.changeWaiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  private changed(): void {
    const w = this.changeWaiters;
    this.changeWaiters = [];
    w.forEach((f) => f());
  }

  private sendHello(): void {
    const killed = [...this.selfFenced];
    this.killedInHello = killed.length;
    const running = this.leased();
    this.helloSend = { sentAt: performance.now(), ids: running.map((h) => h.attemptId) };
    this.conn.send({
      type: 'hello',
      workerId: this.workerId,
      hostname: os.hostname(),
      slots: this.opts.slots,
      // Auto: 0 until a welcome says this server takes `prefetch` messages (onWelcome then sends the offer).
      ...(!this.auto && this.queued.capacity > 0 ? { prefetch: this.queued.capacity } : {}),
      labels: this.opts.labels ?? {},
      version: PROTOCOL_VERSION,
      running: running.map((h) => ({ attemptId: h.attemptId, fencingToken: h.fencingToken })),
      ...(killed.length > 0 ? { killed } : {}),
      // In the hello itself: a server assigns nothing to a draining agent from the first moment (the separate
      // `draining` message after it is for servers that predate this field).
      ...(this.drained ? { draining: true } : {}),
    });
  }

  private onDown(reason: string): void {
    // close() (a drain's end, a shutdown) ends the connection itself: nothing was lost, nothing is retried.
    if (this.closing) this.log.debug({ reason }, 'connection closed');
    else if (this.ready) this.log.warn({ reason }, 'lost the server connection; reconnecting');
    else {
      const hint = refusalHint(reason);
      // A refusal no retry changes is an error, said once per reason (the retries go on, at debug).
      if (hint && !this.refusalsLogged.has(reason)) {
        this.refusalsLogged.add(reason);
        this.log.error({ reason }, `cannot connect: ${hint}; retrying`);
      } else if (hint) this.log.debug({ reason }, 'could not connect; retrying');
      else this.log.info({ reason }, 'could not connect; retrying');
    }
    this.ready = false;
    this.helloSend = null;
    this.stopHeartbeat();
  }

  /** Connection refusals already logged as errors (refusal-hint.ts), so each is said once. */
  private readonly refusalsLogged = new Set<string>();

  private onMessage(m: ServerMessage): void {
    this.handle(m);
    this.changed();
  }

  private handle(m: ServerMessage): void {
    switch (m.type) {
      case 'welcome':
        return this.onWelcome(m);
      case 'heartbeat_ack':
        return this.onHeartbeatAck(m);
      case 'assign':
        return this.onAssign(m.attempt);
      case 'cancel':
        return this.stop({ attemptId: m.attemptId, reason: m.reason, report: true });
      case 'ack':
        this.held.get(m.attemptId)?.run.pump.ack(m.seq);
        return this.flush();
      case 'exit_ack': {
        const h = this.held.get(m.attemptId);
        if (h?.result) this.held.delete(m.attemptId);
        return;
      }
      case 'reject': {
        const h = this.held.get(m.attemptId);
        if (!h || h.forgotten) return;
        this.log.warn({ attemptId: m.attemptId, reason: m.reason }, 'server rejected a report; stopping the attempt');
        this.forget(h);
        return;
      }
      case 'drain':
        this.log.warn({ reason: m.reason }, 'the server drains this worker');
        void this.startDrain();
        return;
      case 'give_back':
        return this.onGiveBack(m.attemptIds, m.reason);
      default: {
        const unknown: { type?: unknown } = m;
        this.log.warn({ type: unknown.type }, 'ignored an unknown message type');
      }
    }
  }

  private onWelcome(m: Extract<ServerMessage, { type: 'welcome' }>): void {
    this.heartbeatMs = positive(m.heartbeatMs, DEFAULT_HEARTBEAT_MS);
    this.leaseMs = positive(m.leaseMs, DEFAULT_LEASE_MS);
    this.conn.capDelay(this.leaseMs / 4);
    this.ready = true;
    this.refusalsLogged.clear(); // connected: a later refusal (a revoked token) is news again
    this.conn.markHealthy();
    // The server has the self-fencing kills the hello carried.
    this.selfFenced.splice(0, this.killedInHello);
    this.killedInHello = 0;
    if (this.helloSend) this.confirm(this.helloSend);
    this.helloSend = null;
    this.applyStops(m.stop);
    this.prefetchChanges = m.prefetchChanges === true;
    if (this.auto && this.auto.offered > 0) this.offerPrefetch(this.auto.offered);
    for (const h of this.held.values()) h.rewind();
    this.startHeartbeat();
    this.scheduleFence();
    this.welcomed();
    this.flush(true);
  }

  private onHeartbeatAck(m: Extract<ServerMessage, { type: 'heartbeat_ack' }>): void {
    const send = this.heartbeats.get(m.seq);
    if (send) {
      // Acks come in order: older unanswered heartbeats will not be answered any more usefully.
      for (const seq of this.heartbeats.keys()) if (seq <= m.seq) this.heartbeats.delete(seq);
      this.confirm(send);
    }
    this.applyStops(m.stop);
    this.scheduleFence();
  }

  /** A server stored the renewal `send` asked for: the attempts it listed are leased until at least sentAt + leaseMs. */
  private confirm(send: Send): void {
    for (const id of send.ids) {
      const h = this.held.get(id);
      if (h) h.leaseConfirmedAt = Math.max(h.leaseConfirmedAt, send.sentAt);
      else this.queued.confirm(id, send.sentAt);
    }
  }

  private applyStops(stop: StopOrder[] | undefined): void {
    if (!Array.isArray(stop)) return;
    for (const o of stop as unknown[]) {
      // The connection checks only `type`: an entry of the wrong shape is logged and skipped, never fatal.
      if (!o || typeof o !== 'object' || typeof (o as StopOrder).attemptId !== 'number' || typeof (o as StopOrder).report !== 'boolean') {
        this.log.warn({ order: o }, 'ignored a malformed stop order');
        continue;
      }
      this.stop(o as StopOrder);
    }
  }

  /** One stop order (or `cancel`); repeats are harmless: a kill and a forget happen once. */
  private stop(o: StopOrder): void {
    const q = this.queued.take(o.attemptId);
    if (q) return this.stopQueued(q, o);
    const h = this.held.get(o.attemptId);
    if (!h || h.forgotten) return;
    if (!o.report) {
      this.log.warn({ attemptId: o.attemptId, reason: o.reason }, 'server says the attempt must not go on; stopping it, reporting nothing');
      this.forget(h);
      return;
    }
    if (h.result || h.stopOrdered) return;
    h.stopOrdered = true;
    this.log.info({ attemptId: o.attemptId, reason: o.reason }, 'stopping the attempt (cancelled)');
    h.run.kill('cancelled', o.reason || null);
  }

  private onAssign(a: AssignedAttempt): void {
    if (this.held.has(a.attemptId) || this.queued.has(a.attemptId)) return; // a repeated assign: already ours
    if (this.drained) {
      // Not run: reported lost at once (held like any attempt until exit_ack), so the server requeues it.
      this.log.warn({ attemptId: a.attemptId, taskId: a.taskId }, 'refused an assignment while draining');
      this.endUnstarted(a, 'lost', 'worker is draining');
      return;
    }
    if (this.closing) {
      this.log.warn({ attemptId: a.attemptId }, 'ignored an assignment while shutting down');
      return;
    }
    // debug, like 'attempt ended' below: a line per task is a measurable share of a busy agent's work (issue 9).
    // `assignedAt`: the agent's clock (as spawnedAt below) when it took the assignment up: a latency's
    // server part and agent part are told apart by it.
    this.log.debug({ attemptId: a.attemptId, taskId: a.taskId, attempt: a.number, assignedAt: performance.timeOrigin + performance.now() }, 'attempt assigned');
    // Behind those already queued (oldest first), unless the queue is full; startQueued then runs what a free slot can take.
    const wasEmpty = this.queued.size === 0;
    if (this.queued.push(a, performance.now())) {
      if (wasEmpty) this.queueMovedAt = performance.now();
      this.startQueued();
      this.armQueueCheck();
      return;
    }
    const running = this.liveCount();
    if (running >= this.opts.slots) this.log.warn({ attemptId: a.attemptId, running, slots: this.opts.slots, prefetch: this.queued.capacity }, 'assigned beyond capacity; running it anyway');
    this.hold(a, this.runner);
    this.scheduleFence();
  }

  /** Attempts holding a slot: started (or starting) and not ended. */
  private liveCount(): number {
    let n = 0;
    for (const h of this.held.values()) if (!h.result) n++;
    return n;
  }

  /** Starts queued attempts, oldest first, while a slot is free (not while draining or closing: those gave the queue back). */
  private startQueued(): void {
    if (this.queued.size === 0 || this.drained || this.closing) return;
    while (this.liveCount() < this.opts.slots) {
      const q = this.queued.shift();
      if (!q) break;
      this.queueMovedAt = performance.now();
      this.hold(q.attempt, this.runner, q.leaseConfirmedAt);
    }
    this.scheduleFence();
  }

  /**
   * Auto prefetch: tells the server the new offer (protocol `prefetch`). Not
   * sent before a welcome, nor to a server that did not say it takes it: the
   * next welcome sends the offer then in force (the hello says 0).
   */
  private offerPrefetch(n: number): void {
    this.log.debug({ prefetch: n }, n > 0 ? 'tasks are short: prefetch offered' : 'prefetch withdrawn');
    if (n === 0 && this.queueTimer) {
      clearTimeout(this.queueTimer);
      this.queueTimer = null;
    }
    if (this.ready && this.prefetchChanges) this.conn.send({ type: 'prefetch', prefetch: n });
  }

  /** Auto prefetch, while offered and something is queued: one timer for when the queue will have gone too long without a start. */
  private armQueueCheck(): void {
    if (!this.auto || this.queueTimer || this.closing || this.queued.size === 0) return;
    const delay = this.auto.nextCheckIn(performance.now() - this.queueMovedAt);
    if (delay === null) return;
    this.queueTimer = setTimeout(() => {
      this.queueTimer = null;
      if (this.queued.size === 0) return;
      const change = this.auto!.stalledFor(performance.now() - this.queueMovedAt);
      if (change !== null) this.offerPrefetch(change);
      else this.armQueueCheck();
    }, delay);
    this.queueTimer.unref();
  }

  /**
   * A stop order for a queued attempt: it never starts. A cancel (report) is
   * reported `cancelled` (endUnstarted); a `report: false` stop drops it, as
   * the server asked.
   */
  private stopQueued(q: Queued, o: StopOrder): void {
    if (!o.report) {
      this.log.warn({ attemptId: o.attemptId, reason: o.reason }, 'server says the queued attempt must not go on; dropped it, reporting nothing');
      this.scheduleFence();
      return;
    }
    this.log.info({ attemptId: o.attemptId, reason: o.reason }, 'cancelled a queued attempt before it started');
    this.endUnstarted(q.attempt, 'cancelled', o.reason || null, q.leaseConfirmedAt).stopOrdered = true;
  }

  /**
   * The server asks back queued attempts (protocol `give_back`): those still
   * queued leave the queue and are reported `returned` at once, never started;
   * one already started, or not ours, is kept and not mentioned (the agent,
   * which holds the queue, decides: prefetch-queue.ts).
   */
  private onGiveBack(attemptIds: unknown, reason: unknown): void {
    if (!Array.isArray(attemptIds)) return;
    const back: Queued[] = [];
    for (const id of attemptIds) {
      const q = typeof id === 'number' ? this.queued.take(id) : undefined;
      if (q) back.push(q);
    }
    if (back.length === 0) return;
    const why = typeof reason === 'string' && reason ? reason.slice(0, 200) : 'the server asked for it back';
    this.log.info({ attempts: back.map((q) => q.attempt.attemptId), reason: why }, 'gave back queued attempts (never started)');
    for (const q of back) this.endUnstarted(q.attempt, 'returned', `given back unstarted: ${why}`, q.leaseConfirmedAt);
    this.scheduleFence();
  }

  /** Drain or close: every queued attempt is reported `lost` at once (never started), so it runs elsewhere without using a retry. */
  private giveBackQueued(reason: string): void {
    const all = this.queued.clear();
    if (all.length === 0) return;
    this.log.info({ attempts: all.map((q) => q.attempt.attemptId), reason }, 'giving back the queued attempts (reported lost, never started)');
    for (const q of all) this.endUnstarted(q.attempt, 'lost', reason, q.leaseConfirmedAt);
    this.scheduleFence();
  }

  /**
   * Holds an attempt that never runs and reports its end (`outcome`, `error`): the noop executor, killed
   * before it starts, so no `started` goes out, just the exit, kept until `exit_ack` like any other.
   */
  private endUnstarted(a: AssignedAttempt, outcome: 'lost' | 'cancelled' | 'returned', error: string | null, leaseConfirmedAt?: number): HeldAttempt {
    const h = this.hold(a, { ...this.runner, executor: 'noop' }, leaseConfirmedAt);
    h.run.kill(outcome, error);
    return h;
  }

  private hold(a: AssignedAttempt, runner: HeldRunnerOptions, leaseConfirmedAt?: number): HeldAttempt {
    // See the contract at the top: the lease was set by the claim just before this assign was sent
    // (a queued attempt brings its own, from its arrival or a later confirmed heartbeat).
    const confirmedAt = leaseConfirmedAt ?? performance.now();
    // `spawnedAt`: epoch ms with a fraction (performance.timeOrigin + now()), the agent's clock just after the
    // spawn; `npm run bench` reads it (at --log-level debug) for submit → process started.
    const onSpawned = (pid: number) => this.log.debug({ attemptId: a.attemptId, taskId: a.taskId, pid, spawnedAt: performance.timeOrigin + performance.now() }, 'process started');
    const h = new HeldAttempt(a, runner, () => this.flush(), confirmedAt, onSpawned, () => this.flushSoon());
    this.held.set(a.attemptId, h);
    void h.ended.then((result) => {
      // debug: the server keeps every attempt's end in the task's history; a line per task cost a busy
      // agent about 10 % of its CPU (issue 9, 2,000 /bin/true). A failure to report is still a warning.
      this.log.debug({ attemptId: a.attemptId, taskId: a.taskId, ...result }, 'attempt ended');
      if (h.forgotten && this.held.get(a.attemptId) === h) this.held.delete(a.attemptId);
      this.opts.onAttemptEnd?.(a, result, !h.forgotten);
      // Auto prefetch: only attempts that ran count (not those ended unstarted: given back, cancelled, refused).
      if (this.auto && runner === this.runner) {
        const change = this.auto.ended(result.durationMs);
        if (change !== null) this.offerPrefetch(change);
      }
      // A slot freed: the oldest queued attempt takes it.
      this.startQueued();
      this.scheduleFence();
      this.changed();
    });
    return h;
  }

  private forget(h: HeldAttempt, ...args: Parameters<HeldAttempt['forget']>): void {
    h.forget(...args);
    if (h.result) this.held.delete(h.attemptId);
  }

  /** Held attempts the agent still reports on (not forgotten). */
  private reported(): HeldAttempt[] {
    return [...this.held.values()].filter((h) => !h.forgotten);
  }

  /** Attempts whose lease the agent renews (see the contract above): those it reports on, then the queued ones. */
  private leased(): Array<{ attemptId: number; fencingToken: string }> {
    return [...this.reported(), ...this.queued.values().map((q) => q.attempt)];
  }

  /**
   * A flush that sends `started` reports on their own within STARTED_DELAY_MS
   * (one timer for the agent; held-attempt.ts): until then they wait for
   * company.
   */
  private flushSoon(): void {
    this.startedTimer ??= setTimeout(() => {
      this.startedTimer = null;
      this.flush(true);
    }, STARTED_DELAY_MS);
  }

  /**
   * Sends due reports, one per attempt per round so a chatty attempt cannot
   * starve the others; `started` reports only with another report, unless
   * `startedDue`.
   */
  private flush(startedDue = false): void {
    if (!this.ready) return;
    let due = startedDue;
    let progressed = true;
    while (progressed && this.conn.writable) {
      progressed = false;
      for (const h of this.held.values()) {
        if (!this.conn.writable) break;
        const msg: AgentMessage | null = h.nextMessage(due);
        if (msg && this.conn.send(msg)) {
          progressed = true;
          // This flush makes a frame anyway: pending `started` reports ride along (the loop comes round again).
          due = true;
        }
      }
    }
  }

  private startHeartbeat(): void {
    this.stopHeartbeat();
    this.heartbeatTimer = setInterval(() => {
      const silentMs = Date.now() - this.conn.lastHeardAt;
      if (silentMs > Math.max(2 * this.heartbeatMs, 1_000)) {
        this.conn.drop(`no frame from the server for ${silentMs} ms`);
        return;
      }
      const seq = ++this.heartbeatSeq;
      const ids = this.leased().map((h) => h.attemptId);
      const sentAt = performance.now();
      if (this.conn.send({ type: 'heartbeat', seq, running: ids })) this.heartbeats.set(seq, { sentAt, ids });
      // An answer to a heartbeat older than a lease could confirm nothing still leased: stop waiting for it.
      for (const [old, s] of this.heartbeats) if (s.sentAt < sentAt - this.leaseMs) this.heartbeats.delete(old);
      this.conn.ping();
    }, this.heartbeatMs);
  }

  private stopHeartbeat(): void {
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    this.heartbeatTimer = null;
  }

  private fencePlan(h: HeldAttempt): ReturnType<typeof selfFencePlan> {
    return selfFencePlan(h.leaseConfirmedAt, this.leaseMs, this.runner.killGraceMs);
  }

  /** Arms one timer for the earliest self-fencing stop among running attempts (none when nothing runs). */
  private scheduleFence(): void {
    if (this.fenceTimer) clearTimeout(this.fenceTimer);
    this.fenceTimer = null;
    let next = Number.POSITIVE_INFINITY;
    for (const h of this.held.values()) {
      if (!h.live) continue;
      const plan = this.fencePlan(h);
      next = Math.min(next, plan.stopAt);
      // The reaper's dead-man switch, for when this process cannot act (SIGSTOP, a blocked
      // loop): a little after the agent's own stop, with SIGKILL at the same kill time.
      const pgid = h.run.pid;
      if (pgid !== null) this.reaper?.deadline(pgid, plan.stopAt + Math.min(REAPER_LAG_MS, plan.graceMs / 2), plan.stopAt + plan.graceMs);
    }
    for (const q of this.queued.values()) next = Math.min(next, selfFencePlan(q.leaseConfirmedAt, this.leaseMs, this.runner.killGraceMs).stopAt);
    if (next === Number.POSITIVE_INFINITY) return;
    this.fenceTimer = setTimeout(() => this.fenceDue(), Math.max(0, Math.ceil(next - performance.now())));
    // Running attempts keep the process alive anyway; this timer alone must not.
    this.fenceTimer.unref();
  }

  private fenceDue(): void {
    this.fenceTimer = null;
    const now = performance.now();
    let fenced = 0;
    for (const h of [...this.held.values()]) {
      if (!h.live) continue;
      const plan = this.fencePlan(h);
      if (plan.stopAt > now + 1) continue;
      // A late timer must not push the SIGKILL past the plan's kill time.
      const graceMs = Math.max(0, Math.min(plan.graceMs, Math.floor(plan.stopAt + plan.graceMs - now)));
      const unconfirmedMs = Math.round(now - h.leaseConfirmedAt);
      const reason = `no server confirmed the lease for ${humanMs(unconfirmedMs)} (lease ${humanMs(this.leaseMs)}): stopped by the agent before it could expire (self-fencing)`;
      this.log.warn({ attemptId: h.attemptId, unconfirmedMs, leaseMs: this.leaseMs, graceMs }, 'lease renewal not confirmed in time; stopping the attempt (self-fencing)');
      this.selfFenced.push({ attemptId: h.attemptId, fencingToken: h.fencingToken, reason });
      this.forget(h, 'lost', reason, { graceMs });
      fenced++;
    }
    // Queued attempts have no process to stop: dropped, and reported in the next hello like the others.
    // Once a running attempt is fenced, every queued one goes with it, its own stop time reached or not:
    // the kill above frees a slot, and a queued attempt whose lease was confirmed a moment later (its
    // assignment arrived after the running one's last confirmation) would otherwise start in that
    // moment, on a connection about to be dropped for want of confirmations, only to be fenced in turn
    // (CI saw it once: test/worker/prefetch.test.ts). Dropped, it is reported lost and runs again
    // elsewhere; dropping it a heartbeat early is the safe side.
    const dropAll = fenced > 0;
    for (const q of this.queued.values()) {
      const unconfirmedMs = Math.round(now - q.leaseConfirmedAt);
      if (!dropAll && selfFencePlan(q.leaseConfirmedAt, this.leaseMs, this.runner.killGraceMs).stopAt > now + 1) continue;
      this.queued.take(q.attempt.attemptId);
      const reason = `no server confirmed the lease for ${humanMs(unconfirmedMs)} (lease ${humanMs(this.leaseMs)}): dropped by the agent before it started (self-fencing)`;
      this.log.warn({ attemptId: q.attempt.attemptId, unconfirmedMs, leaseMs: this.leaseMs }, 'lease renewal not confirmed in time; dropping the queued attempt (self-fencing)');
      this.selfFenced.push({ attemptId: q.attempt.attemptId, fencingToken: q.attempt.fencingToken, reason });
      fenced++;
    }
    // A server that confirms no heartbeat is of no use: reconnect (maybe elsewhere) and report the kills in the hello.
    if (fenced > 0 && this.conn.isOpen) this.conn.drop(`no heartbeat confirmed within the lease; stopped ${fenced} attempt(s)`);
    this.scheduleFence();
  }
}

/** How long after the agent's own self-fencing time the reaper steps in (at most half the grace). */
const REAPER_LAG_MS = 250;

/** "30 s", "1.5 s", "250 ms". */
function humanMs(ms: number): string {
  return ms >= 1_000 ? `${+(ms / 1_000).toFixed(3)} s` : `${ms} ms`;
}

function positive(v: unknown, fallback: number): number {
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : fallback;
}
