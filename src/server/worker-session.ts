/**
 * One agent's WebSocket connection, server side: registration, heartbeats,
 * log chunks and exit reports (protocol in src/core/protocol.ts).
 *
 * Messages are handled strictly in arrival order through one queue, because
 * order carries meaning: an attempt's last log chunk precedes its exit. Runs of
 * log chunks are written to the store in one transaction per attempt, which is
 * what keeps a task printing at full speed from costing a commit per chunk.
 */
import type { WebSocket } from 'ws';
import type { Clock } from '../core/clock.js';
import { PROTOCOL_VERSION, type AgentMessage, type ServerMessage } from '../core/protocol.js';
import type { NewLogChunk, Store } from '../store/store.js';
import type { Logger, Scheduler, WorkerLink } from './scheduler.js';

const HELLO_TIMEOUT_MS = 10_000;
/** What an agent may report; `lost` = given up without a result (drain timeout): requeued without using a retry. */
const EXIT_OUTCOMES = new Set(['succeeded', 'failed', 'timed_out', 'cancelled', 'lost']);
type LogMsg = Extract<AgentMessage, { type: 'log' }>;

export class WorkerSession implements WorkerLink {
  workerId = '';
  slots = 0;
  private hello: Omit<import('../store/store.js').WorkerRecord, 'state'> | null = null;
  readonly running = new Set<number>();
  /** The agent said it is draining (protocol `draining`). */
  draining = false;
  private readonly queue: AgentMessage[] = [];
  /** A handleQueued() loop is running. */
  private handling = false;
  private registered = false;
  private closed = false;
  private readonly helloTimer: NodeJS.Timeout;

  constructor(
    private readonly ws: WebSocket,
    private readonly remote: string,
    private readonly store: Store,
    private readonly scheduler: Scheduler,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {
    this.helloTimer = setTimeout(() => this.close('no hello within 10 s'), HELLO_TIMEOUT_MS);
    ws.on('message', (data, isBinary) => this.onFrame(data as Buffer, isBinary));
    ws.on('close', () => void this.onClose());
    ws.on('error', (err) => this.log.warn({ err, workerId: this.workerId }, 'worker socket error'));
  }

  send(msg: ServerMessage): boolean {
    if (this.closed || this.ws.readyState !== this.ws.OPEN) return false;
    this.ws.send(JSON.stringify(msg));
    return true;
  }

  close(reason: string): void {
    if (this.ws.readyState === this.ws.OPEN) this.ws.close(4000, reason.slice(0, 120));
  }

  private onFrame(data: Buffer, isBinary: boolean): void {
    let msg: AgentMessage;
    try {
      if (isBinary) throw new Error('binary frame');
      msg = JSON.parse(data.toString('utf8')) as AgentMessage;
      if (typeof msg !== 'object' || msg === null || typeof msg.type !== 'string') throw new Error('not a message object');
    } catch (err) {
      this.log.warn({ err, remote: this.remote }, 'malformed frame from worker; closing');
      this.close('protocol error: malformed frame');
      return;
    }
    this.queue.push(msg);
    if (!this.handling) void this.handleQueued();
  }

  /**
   * Handles what has arrived, in batches. Until `hello` is handled, one message
   * at a time. After that, a batch's store writes are all requested before any
   * is awaited, in arrival order except that log chunks go first: the store
   * runs writes in request order and commits them together, so an attempt's
   * last chunk is still stored before its exit, and a burst of exits costs one
   * commit rather than one each.
   */
  private async handleQueued(): Promise<void> {
    this.handling = true;
    try {
      while (this.queue.length && !this.closed) {
        if (!this.registered) {
          await this.handle(this.queue.shift()!);
          continue;
        }
        const batch = this.queue.splice(0);
        const logs = batch.filter((m): m is LogMsg => m.type === 'log');
        const work: Promise<void>[] = [];
        if (logs.length) work.push(this.onLogs(logs));
        for (const m of batch) if (m.type !== 'log') work.push(this.handle(m));
        await Promise.all(work);
      }
    } catch (err) {
      this.log.error({ err, workerId: this.workerId }, 'handling a worker message failed; closing the connection');
      this.close('server error');
    } finally {
      this.handling = false;
    }
  }

  private async handle(msg: AgentMessage): Promise<void> {
    if (!this.registered && msg.type !== 'hello') {
      this.close('protocol error: hello expected first');
      return;
    }
    switch (msg.type) {
      case 'hello':
        return this.onHello(msg);
      case 'heartbeat': {
        const now = this.clock.now();
        await this.store.renewLeases(this.workerId, [...this.running], now, this.scheduler.opts.leaseMs);
        if (this.hello) await this.store.upsertWorker({ ...this.hello, lastSeenAt: now });
        return;
      }
      case 'started':
        return;
      case 'draining':
        this.draining = true;
        this.log.info({ workerId: this.workerId, running: this.running.size }, 'worker is draining: no new work');
        return;
      case 'exit':
        return this.onExit(msg);
      case 'log':
        return this.onLogs([msg]);
      default:
        this.log.warn({ msg }, 'unknown message type from worker; ignored');
    }
  }

  private async onHello(msg: Extract<AgentMessage, { type: 'hello' }>): Promise<void> {
    if (this.registered) return;
    const valid = typeof msg.workerId === 'string' && /^[A-Za-z0-9._:-]{1,100}$/.test(msg.workerId) && Number.isInteger(msg.slots) && msg.slots >= 1 && msg.slots <= 1024;
    if (!valid || msg.version !== PROTOCOL_VERSION) {
      this.close(`protocol error: bad hello (version ${String(msg.version)}, expected ${PROTOCOL_VERSION})`);
      return;
    }
    clearTimeout(this.helloTimer);
    this.workerId = msg.workerId;
    this.slots = msg.slots;
    const now = this.clock.now();
    this.hello = { id: msg.workerId, hostname: String(msg.hostname ?? ''), slots: msg.slots, labels: msg.labels ?? {}, connectedAt: now, lastSeenAt: now };
    await this.store.upsertWorker(this.hello);
    // Re-attach attempts the agent kept running through a reconnect, if they are still current.
    const stale: number[] = [];
    for (const r of msg.running ?? []) {
      const check = await this.store.checkReport(r.attemptId, r.fencingToken);
      if (check.ok && check.attempt.workerId === msg.workerId) this.running.add(r.attemptId);
      else {
        // A late report (the attempt was ended or given to someone else meanwhile): rejected, and logged.
        stale.push(r.attemptId);
        await this.store.recordFencedReport(r.attemptId, `hello (${check.ok ? 'attempt belongs to another worker' : check.reason})`, `worker:${msg.workerId}`, now);
        this.log.warn({ attemptId: r.attemptId, workerId: msg.workerId }, 'worker reconnected with an attempt that is no longer current; it will stop it');
      }
    }
    if (this.running.size) await this.store.renewLeases(this.workerId, [...this.running], now, this.scheduler.opts.leaseMs);
    // Attempts the agent stopped on its own while it could reach no server (self-fencing):
    // they were already ended as lost by the lease sweeper; the kill goes into their history.
    for (const k of Array.isArray(msg.killed) ? msg.killed : []) {
      if (Number.isSafeInteger(k?.attemptId)) await this.store.recordFencedReport(k.attemptId, `agent killed it: ${String(k.reason ?? 'self-fencing').slice(0, 300)}`, `worker:${msg.workerId}`, now);
    }
    this.registered = true;
    this.send({ type: 'welcome', workerId: msg.workerId, heartbeatMs: this.scheduler.opts.heartbeatMs, leaseMs: this.scheduler.opts.leaseMs, stale });
    this.log.info({ workerId: msg.workerId, slots: msg.slots, remote: this.remote, reattached: this.running.size }, 'worker connected');
    this.scheduler.addLink(this);
  }

  private async onLogs(msgs: LogMsg[]): Promise<void> {
    const byAttempt = new Map<number, { token: number; chunks: NewLogChunk[] }>();
    for (const m of msgs) {
      let g = byAttempt.get(m.attemptId);
      if (!g) byAttempt.set(m.attemptId, (g = { token: m.fencingToken, chunks: [] }));
      g.chunks.push({ seq: m.seq, stream: m.stream === 'stderr' ? 'stderr' : 'stdout', data: Buffer.from(m.data, 'base64') });
    }
    // Request every attempt's append before awaiting any (see handleQueued()).
    await Promise.all(
      [...byAttempt].map(async ([attemptId, g]) => {
        const ok = await this.store.appendLogs(attemptId, g.token, g.chunks, this.clock.now());
        if (!ok) return this.fenced(attemptId, 'log');
        this.send({ type: 'ack', attemptId, seq: g.chunks[g.chunks.length - 1]!.seq });
      }),
    );
  }

  private async onExit(msg: Extract<AgentMessage, { type: 'exit' }>): Promise<void> {
    const outcome = msg.outcome;
    if (!EXIT_OUTCOMES.has(outcome)) {
      this.close(`protocol error: unknown exit outcome ${String(outcome).slice(0, 40)}`);
      return;
    }
    const end = { outcome, exitCode: msg.exitCode ?? null, signal: msg.signal ?? null, error: msg.error ?? null, durationMs: Math.round(msg.durationMs ?? 0) };
    const res = await this.store.endAttempt(msg.attemptId, msg.fencingToken, end, `worker:${this.workerId}`, this.clock.now());
    this.running.delete(msg.attemptId);
    if (res) {
      if (res.task.state === 'retrying' && res.task.runAfter !== null) this.scheduler.wakeAtTime(res.task.runAfter);
    } else {
      const a = await this.store.getAttempt(msg.attemptId);
      // An exit for an attempt that already ended normally is a resend after a reconnect: ack it again.
      // One for an attempt that was declared lost (or never existed) is a fenced report.
      if (!a || a.state === 'lost' || a.id !== msg.fencingToken) await this.fenced(msg.attemptId, 'exit');
    }
    this.send({ type: 'exit_ack', attemptId: msg.attemptId });
    // A slot of this worker is free again (not a store change, so no signal says so).
    this.scheduler.kick();
  }

  private async fenced(attemptId: number, kind: string): Promise<void> {
    this.running.delete(attemptId);
    await this.store.recordFencedReport(attemptId, kind, `worker:${this.workerId}`, this.clock.now());
    this.send({ type: 'reject', attemptId, reason: 'attempt is no longer current (fenced)' });
    this.log.warn({ attemptId, kind, workerId: this.workerId }, 'rejected a report from a fenced attempt');
  }

  private async onClose(): Promise<void> {
    this.closed = true;
    clearTimeout(this.helloTimer);
    if (!this.registered) return;
    this.scheduler.removeLink(this);
    this.log.info({ workerId: this.workerId, running: this.running.size }, 'worker disconnected; its attempts keep their leases until they expire');
    try {
      await this.store.markWorkerDisconnected(this.workerId, this.clock.now());
    } catch (err) {
      this.log.warn({ err }, 'could not mark worker disconnected');
    }
  }
}
