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
 *   still holds: process running, or ended with its exit not yet acked. The
 *   lease of an attempt stays renewed until the server has its result.
 * - Liveness: every heartbeat also pings. A ready connection silent for
 *   2 × heartbeatMs (at least 1 s) is dropped and re-established.
 * - Lease: when no frame came from any server for `leaseMs` (from `welcome`),
 *   the server has declared this agent's attempts lost and requeued them, so
 *   the agent kills its running attempts and forgets them (design.md: "a
 *   worker that cannot reach its server stops its own attempts after the
 *   same bound"). A short outage does not touch them.
 * - Capacity is the server's to respect: an `assign` beyond `slots` still
 *   runs (with a warning) rather than silently vanish; an `assign` during
 *   `close()` is ignored and becomes `lost` on the server.
 */
import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { DEFAULT_HEARTBEAT_MS, DEFAULT_LEASE_MS, PROTOCOL_VERSION, type AgentMessage, type AssignedAttempt, type ServerMessage } from '../core/protocol.js';
import { Connection } from './connection.js';
import { HeldAttempt, type HeldRunnerOptions } from './held-attempt.js';
import { silentLogger, type Logger } from './logger.js';
import { EXECUTORS, isExecutor, type Executor } from './noop-executor.js';
import type { AttemptResult } from './process-runner.js';
import type { BackoffOptions } from './reconnect-backoff.js';

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
  /** SIGTERM → SIGKILL grace. Default 5000. */
  killGraceMs?: number;
  /** Pino-compatible. Default: silent. */
  logger?: Logger;
  /** startAgent rejects when no `welcome` arrived within this. Default 10 000. */
  startTimeoutMs?: number;
  /** Reconnect backoff. Default 100 ms doubling to 5 s, jittered. */
  backoff?: BackoffOptions;
  /** Observes every attempt that ended on this agent, reported or not (logging, tests). */
  onAttemptEnd?: (attempt: AssignedAttempt, result: AttemptResult, reported: boolean) => void;
}

export interface Agent {
  readonly workerId: string;
  /** Stop accepting, kill running attempts (SIGTERM, then SIGKILL after the grace), report them if connected, close the socket. Idempotent. */
  close(): Promise<void>;
}

/** Resolves once the first connection got `welcome`; rejects after `startTimeoutMs` without one. */
export async function startAgent(opts: AgentOptions): Promise<Agent> {
  // A work dir that cannot be created is a configuration error: say so now, not at the first attempt.
  if ((opts.executor ?? 'process') === 'process') await mkdir(opts.workDir, { recursive: true });
  const agent = new WorkerAgent(opts);
  try {
    await agent.waitWelcome(opts.startTimeoutMs ?? 10_000);
  } catch (err) {
    await agent.close();
    throw err;
  }
  return agent;
}

class WorkerAgent implements Agent {
  readonly workerId: string;
  private readonly log: Logger;
  private readonly conn: Connection;
  private readonly held = new Map<number, HeldAttempt>();
  private readonly runner: HeldRunnerOptions;
  private ready = false;
  private closing: Promise<void> | null = null;
  private heartbeatMs = DEFAULT_HEARTBEAT_MS;
  private leaseMs = DEFAULT_LEASE_MS;
  private heartbeatTimer: NodeJS.Timeout | null = null;
  private leaseTimer: NodeJS.Timeout | null = null;
  private welcomed!: () => void;
  private readonly firstWelcome = new Promise<void>((r) => (this.welcomed = r));

  constructor(private readonly opts: AgentOptions) {
    if (!Number.isInteger(opts.slots) || opts.slots < 1) throw new RangeError('slots must be a positive integer');
    if (!opts.token) throw new Error('a worker token is required');
    if (opts.executor !== undefined && !isExecutor(opts.executor)) throw new RangeError(`executor must be one of ${EXECUTORS.join(', ')}`);
    this.log = opts.logger ?? silentLogger;
    this.workerId = opts.workerId ?? `${os.hostname()}-${randomBytes(3).toString('hex')}`;
    this.runner = { workDir: opts.workDir, killGraceMs: opts.killGraceMs ?? 5_000, logger: this.log, executor: opts.executor ?? 'process' };
    this.conn = new Connection(
      { servers: opts.servers, token: opts.token, logger: this.log, backoff: opts.backoff },
      {
        onOpen: () => this.sendHello(),
        onMessage: (m) => this.onMessage(m),
        onDown: (reason) => this.onDown(reason),
        onWritable: () => this.flush(),
      },
    );
    this.conn.start();
    this.scheduleLeaseCheck();
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

  private async shutdown(): Promise<void> {
    if (this.leaseTimer) clearTimeout(this.leaseTimer);
    const live = [...this.held.values()].filter((h) => !h.result);
    for (const h of live) h.run.kill('cancelled', 'worker shutting down');
    // Output still flows to the server while it is there to ack it; without one,
    // or past the grace, it is discarded so paused pipes cannot hold the attempt open.
    const discardAll = () => live.forEach((h) => h.run.pump.discard());
    if (!this.ready) discardAll();
    const grace = this.runner.killGraceMs ?? 5_000;
    const ac = new AbortController();
    const all = Promise.all(live.map((h) => h.ended));
    await Promise.race([all, sleep(grace + 2_000, undefined, { signal: ac.signal }).catch(() => {})]);
    ac.abort();
    discardAll();
    await all;
    this.flush();
    this.stopHeartbeat();
    await this.conn.close();
    this.ready = false;
  }

  private sendHello(): void {
    this.conn.send({
      type: 'hello',
      workerId: this.workerId,
      hostname: os.hostname(),
      slots: this.opts.slots,
      labels: this.opts.labels ?? {},
      version: PROTOCOL_VERSION,
      running: this.reported().map((h) => ({ attemptId: h.attemptId, fencingToken: h.fencingToken })),
    });
  }

  private onDown(reason: string): void {
    if (this.ready) this.log.warn({ reason }, 'lost the server connection; reconnecting');
    else this.log.info({ reason }, 'could not connect; retrying');
    this.ready = false;
    this.stopHeartbeat();
  }

  private onMessage(m: ServerMessage): void {
    switch (m.type) {
      case 'welcome':
        return this.onWelcome(m);
      case 'assign':
        return this.onAssign(m.attempt);
      case 'cancel': {
        const h = this.held.get(m.attemptId);
        if (h && !h.forgotten) h.run.kill('cancelled', m.reason || null);
        return;
      }
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
        if (!h) return;
        this.log.warn({ attemptId: m.attemptId, reason: m.reason }, 'server rejected a report; stopping the attempt');
        this.forget(h);
        return;
      }
      default: {
        const unknown: { type?: unknown } = m;
        this.log.warn({ type: unknown.type }, 'ignored an unknown message type');
      }
    }
  }

  private onWelcome(m: Extract<ServerMessage, { type: 'welcome' }>): void {
    this.heartbeatMs = positive(m.heartbeatMs, DEFAULT_HEARTBEAT_MS);
    this.leaseMs = positive(m.leaseMs, DEFAULT_LEASE_MS);
    this.ready = true;
    this.conn.markHealthy();
    for (const id of m.stale ?? []) {
      const h = this.held.get(id);
      if (h) {
        this.log.warn({ attemptId: id }, 'server says the attempt is stale; stopping it');
        this.forget(h);
      }
    }
    for (const h of this.held.values()) h.rewind();
    this.startHeartbeat();
    this.scheduleLeaseCheck();
    this.welcomed();
    this.flush();
  }

  private onAssign(a: AssignedAttempt): void {
    if (this.closing) {
      this.log.warn({ attemptId: a.attemptId }, 'ignored an assignment while shutting down');
      return;
    }
    if (this.held.has(a.attemptId)) return; // a repeated assign: already ours
    const running = [...this.held.values()].filter((h) => !h.result).length;
    if (running >= this.opts.slots) this.log.warn({ attemptId: a.attemptId, running, slots: this.opts.slots }, 'assigned beyond capacity; running it anyway');
    this.log.info({ attemptId: a.attemptId, taskId: a.taskId, attempt: a.number }, 'attempt assigned');
    const h = new HeldAttempt(a, this.runner, () => this.flush());
    this.held.set(a.attemptId, h);
    void h.ended.then((result) => {
      this.log.info({ attemptId: a.attemptId, taskId: a.taskId, ...result }, 'attempt ended');
      if (h.forgotten && this.held.get(a.attemptId) === h) this.held.delete(a.attemptId);
      this.opts.onAttemptEnd?.(a, result, !h.forgotten);
    });
  }

  private forget(h: HeldAttempt): void {
    h.forget();
    if (h.result) this.held.delete(h.attemptId);
  }

  /** Attempts whose lease the agent renews (see the contract above). */
  private reported(): HeldAttempt[] {
    return [...this.held.values()].filter((h) => !h.forgotten);
  }

  /** Sends due reports, one per attempt per round so a chatty attempt cannot starve the others. */
  private flush(): void {
    if (!this.ready) return;
    let progressed = true;
    while (progressed && this.conn.writable) {
      progressed = false;
      for (const h of this.held.values()) {
        if (!this.conn.writable) break;
        const msg: AgentMessage | null = h.nextMessage();
        if (msg && this.conn.send(msg)) progressed = true;
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
      this.conn.send({ type: 'heartbeat', running: this.reported().map((h) => h.attemptId) });
      this.conn.ping();
    }, this.heartbeatMs);
  }

  private stopHeartbeat(): void {
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    this.heartbeatTimer = null;
  }

  private scheduleLeaseCheck(): void {
    if (this.leaseTimer) clearTimeout(this.leaseTimer);
    if (this.closing) return;
    this.leaseTimer = setTimeout(() => {
      this.checkLease();
      this.scheduleLeaseCheck();
    }, Math.max(20, Math.min(1_000, this.leaseMs / 4)));
    // Only attempts need this timer; it must not keep an idle process alive.
    this.leaseTimer.unref();
  }

  private checkLease(): void {
    const silentMs = Date.now() - this.conn.lastHeardAt;
    if (silentMs <= this.leaseMs) return;
    for (const h of [...this.held.values()]) {
      if (h.result || h.forgotten) continue;
      this.log.warn({ attemptId: h.attemptId, silentMs, leaseMs: this.leaseMs }, 'server unreachable past the lease; stopping the attempt');
      this.forget(h);
    }
  }
}

function positive(v: unknown, fallback: number): number {
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : fallback;
}
