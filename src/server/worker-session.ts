/**
 * One agent's WebSocket connection, server side: registration, heartbeats,
 * log chunks and exit reports (protocol in src/core/protocol.ts).
 *
 * Trust boundary. The session speaks only for its own worker:
 *   - it was opened with a worker token (checked on the route and again
 *     here); the worker id in `hello` is bound to that token in the store
 *     (registerWorker), and a second session cannot take over an id whose
 *     session on this server is alive;
 *   - every frame is validated (worker-messages.ts) before it is acted on; a
 *     bad one closes this session only, with the reason logged;
 *   - a report about an attempt (started, log, exit, hello running/killed) is
 *     accepted only for an attempt assigned to this worker, with its random
 *     fencing token: first against what this session assigned or re-attached
 *     (in memory), then by the store's fence inside the write (core/fence.ts).
 *     A refused one changes nothing, is answered with `reject` and recorded.
 *
 * Messages are handled strictly in arrival order through one queue, because
 * order carries meaning: an attempt's last log chunk precedes its exit. Runs of
 * log chunks are written to the store in one transaction per attempt, which is
 * what keeps a task printing at full speed from costing a commit per chunk.
 * The queue is bounded: past MAX_QUEUED messages the socket is paused (TCP
 * backpressure slows the agent) until the session has caught up.
 */
import type { WebSocket } from 'ws';
import type { Clock } from '../core/clock.js';
import { tokensEqual } from '../core/fence.js';
import { MAX_EXIT_ERROR_CHARS, packFrames, PREFETCH_RERAISE_RUNS, PROTOCOL_VERSION, type AgentMessage, type AssignedAttempt, type ServerMessage, type StopOrder } from '../core/protocol.js';
import type { Attempt, Task } from '../core/task.js';
import type { ClaimedTask } from '../store/attempts.js';
import type { AttemptEndResult, Claim, NewLogChunk, Store, WorkerRecord } from '../store/store.js';
import type { Principal } from './auth.js';
import { MAX_CLAIMS_PER_ROUND, type Logger, type Scheduler, type WorkerLink } from './scheduler.js';
import { parseAgentFrame, type HelloMessage } from './worker-messages.js';
import { closeReason } from './close-reason.js';

const HELLO_TIMEOUT_MS = 10_000;
/**
 * Batches of one session whose store writes may be in flight at once (see
 * handleQueued). Measured (issue 9; 20,000 no-op tasks waiting, then one
 * `--executor noop --slots 10` agent, PostgreSQL, tasks/s, two rounds, each
 * value with `--prefetch 20` / `--prefetch 40`): 1 in flight 1,755/1,818 and
 * 2,259/2,601; 2: 2,570/2,929 and 2,354/2,545; 3: 2,617/2,659 and
 * 2,495/3,498; 4: 3,379/3,360 and 2,827/3,616; then with `--prefetch 40`
 * only, 2: 3,102 and 2,676; 4: 3,261 and 2,775; 8: 2,785 and 2,722. On
 * SQLite (one writer, whose group commit already takes what is queued) no
 * difference showed. Without a prefetch a no-op agent's exits come in bursts
 * a refill apart, so mostly one batch is in flight, as before. Tried and
 * dropped (2026-12-05, the same drain without a prefetch, three pairs
 * alternating): splitting such a burst into two end-and-refill statements at
 * once. The drain fell from 1,296-1,429/s to 878-1,040/s and PostgreSQL's CPU
 * rose from 8.2-8.8 s to 19.9-24.1 s: twice the statements, and two claims at
 * once on the queue's head, each skipping the rows the other locked.
 */
export const MAX_BATCHES_IN_FLIGHT = 4;
/** Messages waiting to be handled before the socket is paused. */
export const MAX_QUEUED = 1024;
type LogMsg = Extract<AgentMessage, { type: 'log' }>;
type ExitMsg = Extract<AgentMessage, { type: 'exit' }>;
type ReportMsg = Extract<AgentMessage, { type: 'log' | 'exit' | 'started' }>;

/**
 * What the session keeps of an attempt it assigned or re-attached. `requires`: the
 * task's placement, kept for the attempts this session assigned (a re-attached one
 * may already run); with `started` (the agent's `started` report) and `askedBack`
 * it tells which attempts may still sit in the agent's prefetch queue (queuedGuess).
 */
interface HeldBySession {
  token: string;
  claimed: ClaimedTask;
  requires?: Readonly<Record<string, string>>;
  started?: boolean;
  askedBack?: boolean;
}

/** Close codes (4000-4999 are the application's). */
const CLOSE_PROTOCOL = 4002;

const CLOSE_REFUSED = 4003;
const CLOSE_OTHER = 4000;

export interface SessionDeps {
  store: Store;
  scheduler: Scheduler;
  clock: Clock;
  log: Logger;
  /** Revocation: the session registers under its token and is closed when it is revoked. */
  sessions?: { register(tokenId: string, close: (reason: string) => void): () => void };
}

export class WorkerSession implements WorkerLink {
  workerId = '';
  slots = 0;
  prefetch = 0;
  /**
   * Exits of attempts that ran (not `returned`) on this session since it began
   * or the agent last lowered its prefetch, and a raise waiting for
   * PREFETCH_RERAISE_RUNS of them. A `--prefetch auto` agent offers its queue
   * only after that many short runs (worker/auto-prefetch.ts), so this delays
   * it only after a reconnect; it bounds a hostile one, which could otherwise
   * raise and lower its prefetch in a loop (or reconnect), each lowering
   * sending back a queue of tasks as `returned` (no retry, no loss counted,
   * one more attempt each), to that many real runs per round.
   */
  private ranSinceLowered = 0;
  private heldRaise: number | null = null;
  labels: Record<string, string> = {};
  /**
   * Attempts assigned to (or re-attached by) this session that have not ended: each one's fencing token,
   * and its task as the claim (or the re-attaching check) read it, which lets the store plan the end
   * without reading the rows first (EndRequest.claimed).
   */
  readonly attempts = new Map<number, HeldBySession>();
  /** Attempts whose exits a batch in flight is ending (onExits), with how many batches are. */
  private readonly ending = new Map<number, number>();
  /** The attempts being ended that this session still holds (counted in runningCount until deleted). */
  private endingHeld(): number {
    let n = 0;
    for (const id of this.ending.keys()) if (this.attempts.has(id)) n++;
    return n;
  }
  /** The agent said it is draining (protocol `draining`). */
  draining = false;
  /** When a frame last arrived (server clock): a session silent past the liveness bound may be replaced. */
  lastHeardAt: number;
  private readonly queue: AgentMessage[] = [];
  /** Messages (as JSON) sent in this turn of the event loop, not yet framed (send()). */
  private readonly outbox: string[] = [];
  private paused = false;
  /** A handleQueued() loop is running. */
  private handling = false;
  /** Batches whose writes are in flight, each with the attempts its messages name (handleQueued). */
  private readonly inFlight = new Set<{ done: Promise<void>; attempts: ReadonlySet<number> }>();
  private registered = false;
  private closed = false;
  private readonly helloTimer: NodeJS.Timeout;
  private readonly unregister: () => void;
  private readonly store: Store;
  private readonly scheduler: Scheduler;
  private readonly clock: Clock;
  private readonly log: Logger;

  constructor(
    private readonly ws: WebSocket,
    private readonly remote: string,
    private readonly principal: Principal,
    deps: SessionDeps,
  ) {
    ({ store: this.store, scheduler: this.scheduler, clock: this.clock, log: this.log } = deps);
    this.lastHeardAt = this.clock.now();
    this.helloTimer = setTimeout(() => this.close('no hello within 10 s'), HELLO_TIMEOUT_MS);
    this.unregister = deps.sessions?.register(principal.tokenId, (reason) => this.close(reason, CLOSE_REFUSED)) ?? (() => {});
    ws.on('message', (data, isBinary) => this.onFrame(data as Buffer, isBinary));
    ws.on('close', () => void this.onClose());
    ws.on('error', (err) => this.log.warn({ err, workerId: this.workerId }, 'worker socket error'));
    if (principal.role !== 'worker') {
      // The route admits worker tokens only; this is the second check, in the handler itself.
      this.close('only worker tokens may connect as a worker', CLOSE_REFUSED);
    }
  }

  get runningCount(): number {
    return this.attempts.size;
  }

  has(attemptId: number): boolean {
    return this.attempts.has(attemptId);
  }

  /**
   * Queues `msg` for the frame of what this synchronous run sends
   * (core/protocol.ts framing): a batch's exit_acks and the assignments that
   * refill the slots go out as one frame. Flushed in a microtask, so before
   * the event loop turns: nothing another request can observe (a task shown
   * `running`) gets ahead of the assignment that says so to the agent, and a
   * crash right after a claim's commit loses no more than before.
   */
  send(msg: ServerMessage): boolean {
    if (this.closed || this.ws.readyState !== this.ws.OPEN) return false;
    this.outbox.push(JSON.stringify(msg));
    if (this.outbox.length === 1) queueMicrotask(() => this.flushOutbox());
    return true;
  }

  private flushOutbox(): void {
    const jsons = this.outbox.splice(0);
    if (jsons.length === 0 || this.ws.readyState !== this.ws.OPEN) return;
    for (const frame of packFrames(jsons)) this.ws.send(frame);
  }

  /** Pushes a claimed attempt to the agent; false if the socket is gone (the caller gives the task back). */
  assign(task: Task, attempt: Attempt): boolean {
    this.attempts.set(attempt.id, { token: attempt.fencingToken, claimed: claimedTask(task, attempt), requires: task.requires });
    if (this.send({ type: 'assign', attempt: assignment(task, attempt) })) return true;
    this.attempts.delete(attempt.id);
    return false;
  }

  /**
   * The attempts that may still wait in the agent's prefetch queue, newest
   * first (the agent starts the oldest first): assigned by this session, not
   * reported started, not asked back yet; at most as many as the worker holds
   * beyond its slots, less those asked back and not yet returned. A guess:
   * the agent, which holds the queue, gives back only those still queued.
   */
  queuedGuess(keep = 0): Array<{ attemptId: number; requires: Readonly<Record<string, string>> }> {
    if (this.draining || this.attempts.size <= this.slots + keep) return [];
    const held = [...this.attempts];
    let room = held.length - this.slots - keep - held.filter(([, a]) => a.askedBack && !a.started).length;
    const out: Array<{ attemptId: number; requires: Readonly<Record<string, string>> }> = [];
    for (let i = held.length - 1; i >= 0 && room > 0; i--) {
      const [attemptId, a] = held[i]!;
      if (a.requires === undefined || a.started || a.askedBack) continue;
      out.push({ attemptId, requires: a.requires });
      room--;
    }
    return out;
  }

  /**
   * The agent changed its prefetch (protocol `prefetch`; worker/auto-prefetch.ts).
   * Up: a pass fills it (Scheduler.kick; a prefetch is filled only when no
   * worker has a slot free). Down: what this session assigned beyond slots +
   * the new prefetch and may still be queued is asked back, so it waits in
   * the store, for any free slot, rather than behind this worker's running
   * tasks.
   */
  private onPrefetch(n: number): void {
    const was = this.prefetch;
    this.heldRaise = null;
    if (n > was) {
      if (this.ranSinceLowered < PREFETCH_RERAISE_RUNS) {
        this.heldRaise = n;
        return;
      }
      this.prefetch = n;
      this.scheduler.kick();
    } else if (n < was) {
      this.prefetch = n;
      this.ranSinceLowered = 0;
      const back = this.queuedGuess(n);
      if (back.length) this.askBack(back.map((q) => q.attemptId), 'the worker turned its prefetch down');
    }
  }

  /** `ran` more exits of attempts that ran (not `returned`): a held raise of the prefetch applies once there are enough (onPrefetch). */
  private countRan(ran: number): void {
    if (ran === 0 || this.ranSinceLowered >= PREFETCH_RERAISE_RUNS) return;
    this.ranSinceLowered += ran;
    if (this.heldRaise !== null && this.ranSinceLowered >= PREFETCH_RERAISE_RUNS) this.onPrefetch(this.heldRaise);
  }

  /** Attempts asked back that the agent has neither returned nor reported started. */
  askedPending(): number {
    let n = 0;
    for (const a of this.attempts.values()) if (a.askedBack && !a.started) n++;
    return n;
  }

  /** Asks the agent to give these queued attempts back (protocol `give_back`); each is asked once. */
  askBack(attemptIds: number[], reason: string): void {
    const ids = attemptIds.filter((id) => {
      const a = this.attempts.get(id);
      if (!a || a.askedBack) return false;
      a.askedBack = true;
      return true;
    });
    if (ids.length === 0) return;
    this.log.info({ workerId: this.workerId, attempts: ids, reason }, 'asking the worker to give back queued attempts');
    this.send({ type: 'give_back', attemptIds: ids, reason });
  }

  /** Forget an attempt the server ended on its own (lease expiry). */
  drop(attemptId: number): void {
    this.attempts.delete(attemptId);
  }

  close(reason: string, code = CLOSE_OTHER): void {
    // What was sent before the close goes first.
    this.flushOutbox();
    if (this.ws.readyState === this.ws.OPEN || this.ws.readyState === this.ws.CONNECTING) this.ws.close(code, closeReason(reason));
  }

  private protocolError(reason: string): void {
    this.log.warn({ remote: this.remote, workerId: this.workerId || undefined, reason }, 'protocol error from worker; closing its connection');
    this.closed = true;
    this.queue.length = 0;
    this.close(`protocol error: ${reason}`, CLOSE_PROTOCOL);
  }

  private onFrame(data: Buffer, isBinary: boolean): void {
    if (this.closed) return;
    this.lastHeardAt = this.clock.now();
    const parsed = parseAgentFrame(data, isBinary);
    if (!parsed.ok) return this.protocolError(parsed.reason);
    this.queue.push(...parsed.msgs);
    if (this.queue.length >= MAX_QUEUED && !this.paused) {
      this.paused = true;
      this.ws.pause();
    }
    if (!this.handling) void this.handleQueued();
  }

  /**
   * Handles what has arrived, in batches. Until `hello` is handled, one message
   * at a time. After that, a batch's store writes are all requested before any
   * is awaited, in arrival order except that log chunks go first: SQLite runs
   * writes in request order and commits them together, so an attempt's last
   * chunk is still stored before its exit, and a burst of exits costs one
   * commit rather than one each; on PostgreSQL an exit whose attempt has
   * chunks in the batch waits for them (runBatch).
   *
   * Up to MAX_BATCHES_IN_FLIGHT batches run at once: the next batch starts
   * while the one before waits on the store, unless it names an attempt (a
   * log, `started` or exit) that a batch in flight names too, which it then
   * waits for, so each attempt's reports are still handled in arrival order.
   * Batches about different attempts are independent: each end is fenced on
   * its own attempt, and each refill reserves its slots (Scheduler.reserve),
   * so two in flight never overfill the worker. Why: a worker's exits arrive
   * while the store commits the previous ones; one batch at a time left the
   * session idle on PostgreSQL's round trips (its statement for 10 exits
   * and their refill takes a few milliseconds) while the agent's slots, with
   * a prefetch, had already freed again.
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
        this.resumeIfPaused();
        const attempts = new Set<number>();
        for (const m of batch) if (m.type === 'log' || m.type === 'exit' || m.type === 'started') attempts.add(m.attemptId);
        for (const f of [...this.inFlight]) if ([...f.attempts].some((id) => attempts.has(id))) await f.done;
        while (this.inFlight.size >= MAX_BATCHES_IN_FLIGHT) await Promise.race([...this.inFlight].map((f) => f.done));
        if (this.closed) break;
        const entry = { done: this.runBatch(batch), attempts };
        this.inFlight.add(entry);
        void entry.done.finally(() => this.inFlight.delete(entry));
      }
    } catch (err) {
      this.log.error({ err, workerId: this.workerId }, 'handling a worker message failed; closing the connection');
      this.close('server error');
    } finally {
      this.handling = false;
      this.resumeIfPaused();
    }
  }

  /** One batch's writes (see handleQueued); never rejects: a failure closes the session. */
  private async runBatch(batch: AgentMessage[]): Promise<void> {
    try {
      const logs = batch.filter((m): m is LogMsg => m.type === 'log');
      const exits = batch.filter((m): m is ExitMsg => m.type === 'exit');
      const work: Promise<void>[] = [];
      const logsStored = logs.length ? this.onLogs(logs) : null;
      if (logsStored) work.push(logsStored);
      // An attempt's chunks must be stored before its end (after it, the fence refuses them: the output's tail
      // would be lost). SQLite runs the writes in request order in one transaction (capabilities.groupCommit);
      // on PostgreSQL they go out on separate connections, so an exit whose attempt has chunks in this batch
      // waits for them (without it, test/e2e/session-batches.test.ts lost the chunk of a log + exit pair on every run).
      const chunked = new Set(logs.map((m) => m.attemptId));
      const afterLogs = logsStored !== null && !this.store.capabilities.groupCommit && exits.some((m) => chunked.has(m.attemptId));
      if (exits.length) work.push(afterLogs ? logsStored.then(() => this.onExits(exits)) : this.onExits(exits));
      for (const m of batch) if (m.type !== 'log' && m.type !== 'exit') work.push(this.handle(m));
      await Promise.all(work);
    } catch (err) {
      this.log.error({ err, workerId: this.workerId }, 'handling a worker message failed; closing the connection');
      this.close('server error');
    }
  }

  private resumeIfPaused(): void {
    if (this.paused && this.queue.length < MAX_QUEUED / 2) {
      this.paused = false;
      this.ws.resume();
    }
  }

  private async handle(msg: AgentMessage): Promise<void> {
    if (!this.registered && msg.type !== 'hello') return this.protocolError(`${msg.type} before hello`);
    switch (msg.type) {
      case 'hello':
        if (this.registered) return this.protocolError('a second hello on one connection');
        return this.onHello(msg as HelloMessage);
      case 'heartbeat':
        return this.onHeartbeat(msg);
      case 'started': {
        if (!this.owns(msg)) return this.fenced(msg.attemptId, 'started', 'not an attempt of this worker');
        const a = this.attempts.get(msg.attemptId);
        if (a) a.started = true;
        return;
      }
      case 'prefetch':
        return this.onPrefetch(msg.prefetch);
      case 'draining':
        this.draining = true;
        this.log.info({ workerId: this.workerId, running: this.attempts.size }, 'worker is draining: no new work');
        return;
      case 'exit':
        return this.onExits([msg]);
      case 'log':
        return this.onLogs([msg]);
      default: {
        const never: never = msg;
        return this.protocolError(`unhandled message ${JSON.stringify(never).slice(0, 40)}`);
      }
    }
  }

  /** The in-memory half of the fence: this session assigned or re-attached the attempt, under this token. */
  private owns(m: ReportMsg): boolean {
    const held = this.attempts.get(m.attemptId);
    return held !== undefined && tokensEqual(held.token, m.fencingToken);
  }

  private async onHello(msg: HelloMessage): Promise<void> {
    if (msg.version !== PROTOCOL_VERSION) {
      this.close(`protocol error: version ${msg.version}, this server speaks ${PROTOCOL_VERSION}`, CLOSE_PROTOCOL);
      this.closed = true;
      return;
    }
    clearTimeout(this.helloTimer);
    const actor = `worker:${msg.workerId}`;
    // A live session of the same worker on this server keeps it; a stale one is replaced.
    const refusal = this.scheduler.canTakeWorkerId(msg.workerId, this);
    if (refusal) {
      this.log.warn({ workerId: msg.workerId, remote: this.remote }, `refused a second session: ${refusal}`);
      this.close(refusal, CLOSE_REFUSED);
      this.closed = true;
      return;
    }
    const now = this.clock.now();
    const rec: Omit<WorkerRecord, 'state' | 'drainingAt'> = { id: msg.workerId, hostname: msg.hostname, slots: msg.slots, labels: msg.labels, connectedAt: now, lastSeenAt: now };
    // A draining agent (it says so in its hello) is draining here from the start: nothing is assigned to it.
    if (msg.draining === true) this.draining = true;
    if (!(await this.store.registerWorker(rec, this.principal.tokenId, this.draining))) {
      this.log.warn({ workerId: msg.workerId, tokenId: this.principal.tokenId, remote: this.remote }, 'refused hello: the worker id is bound to another token');
      this.close(`worker id ${msg.workerId} is registered to another worker token`, CLOSE_REFUSED);
      this.closed = true;
      return;
    }
    this.workerId = msg.workerId;
    this.slots = msg.slots;
    this.prefetch = msg.prefetch ?? 0;
    this.labels = msg.labels;

    // Re-attach attempts the agent kept running through a reconnect, if they are its own and current.
    const stop: StopOrder[] = [];
    const checks = await Promise.all(msg.running.map((r) => this.store.checkReport(r.attemptId, r.fencingToken, msg.workerId)));
    const current: number[] = [];
    for (const [i, r] of msg.running.entries()) {
      const check = checks[i]!;
      if (check.ok) {
        this.attempts.set(r.attemptId, { token: r.fencingToken, claimed: claimedTask(check.task, check.attempt) });
        current.push(r.attemptId);
      } else {
        // A late report (ended, superseded, or never this worker's): the agent kills it; recorded.
        stop.push({ attemptId: r.attemptId, reason: `attempt is no longer current (${check.reason})`, report: false });
        await this.store.recordFencedReport(r.attemptId, `hello (${check.reason})`, actor, now);
        this.log.warn({ attemptId: r.attemptId, workerId: msg.workerId, reason: check.reason }, 'worker reconnected with an attempt that is no longer current; it will stop it');
      }
    }
    if (current.length) {
      // Renewal, and the stored stop orders (a cancel made while the agent was away).
      const renewed = await this.store.renewLeases(this.workerId, current, now, this.scheduler.opts.leaseMs);
      stop.push(...renewed.stop);
    }
    // Attempts the agent stopped on its own while it could reach no server (self-fencing):
    // recorded on their tasks if they were this worker's, under their token.
    for (const k of msg.killed ?? []) {
      const a = await this.store.getAttempt(k.attemptId);
      if (a && a.workerId === msg.workerId && tokensEqual(a.fencingToken, k.fencingToken)) {
        await this.store.recordFencedReport(k.attemptId, `agent killed it: ${k.reason}`, actor, now);
      }
    }
    for (const s of stop) if (!s.report) this.attempts.delete(s.attemptId);
    this.registered = true;
    this.send({ type: 'welcome', workerId: msg.workerId, heartbeatMs: this.scheduler.opts.heartbeatMs, leaseMs: this.scheduler.opts.leaseMs, stop, prefetchChanges: true });
    this.log.info({ workerId: msg.workerId, slots: msg.slots, prefetch: this.prefetch, remote: this.remote, reattached: this.attempts.size, stop: stop.length }, 'worker connected');
    this.scheduler.addLink(this);
  }

  private async onHeartbeat(msg: Extract<AgentMessage, { type: 'heartbeat' }>): Promise<void> {
    const now = this.clock.now();
    // Only this session's attempts are renewed; the store renews only this worker's running ones.
    const listed = msg.running.filter((id) => this.attempts.has(id));
    const stop: StopOrder[] = msg.running.filter((id) => !this.attempts.has(id)).map((attemptId) => ({ attemptId, reason: 'not an attempt of this worker session', report: false }));
    const [renewed] = await Promise.all([
      listed.length ? this.store.renewLeases(this.workerId, listed, now, this.scheduler.opts.leaseMs) : Promise.resolve({ renewed: [], stop: [] }),
      this.store.touchWorker(this.workerId, now),
    ]);
    stop.push(...renewed.stop);
    for (const s of stop) if (!s.report) this.attempts.delete(s.attemptId);
    this.send({ type: 'heartbeat_ack', seq: msg.seq, stop });
  }

  private async onLogs(msgs: LogMsg[]): Promise<void> {
    const byAttempt = new Map<number, { token: string; chunks: NewLogChunk[] }>();
    const refused = new Set<number>();
    for (const m of msgs) {
      if (!this.owns(m)) {
        refused.add(m.attemptId);
        continue;
      }
      let g = byAttempt.get(m.attemptId);
      if (!g) byAttempt.set(m.attemptId, (g = { token: m.fencingToken, chunks: [] }));
      g.chunks.push({ seq: m.seq, stream: m.stream, data: Buffer.from(m.data, 'base64') });
    }
    // Request every attempt's append before awaiting any (see handleQueued()).
    await Promise.all([
      ...[...refused].map((id) => this.fenced(id, 'log', 'not an attempt of this worker')),
      ...[...byAttempt].map(async ([attemptId, g]) => {
        const ok = await this.store.appendLogs(attemptId, g.token, this.workerId, g.chunks, this.clock.now());
        if (!ok) return this.fenced(attemptId, 'log');
        this.send({ type: 'ack', attemptId, seq: g.chunks[g.chunks.length - 1]!.seq });
      }),
    ]);
  }

  /**
   * The exits of one batch are ended in ONE store transaction, each fenced on
   * its own, and the same transaction claims tasks for the slots they free
   * (endAndClaim), so a worker's burst of exits and the refill of its slots
   * cost one commit, and the next assignments go out with the exit_acks.
   * Measured (issue 9, PostgreSQL, one agent with 10 slots): one transaction
   * per exit plus a separate claim statement cost five round trips and two
   * WAL flushes per task, and the drain ran at 393 tasks/s.
   */
  private async onExits(msgs: ExitMsg[]): Promise<void> {
    const mine = msgs.filter((m) => this.owns(m));
    this.countRan(mine.filter((m) => m.outcome !== 'returned').length);
    const refused = msgs.filter((m) => !this.owns(m));
    const actor = `worker:${this.workerId}`;
    const requests = mine.map((m) => {
      const held = this.attempts.get(m.attemptId)!;
      // `returned` (no retry used, not counted as lost) only for an attempt this session asked back: any other
      // is taken as `lost`, so an agent cannot keep a task from ever running by returning it again and again
      // (the lost count has a cap, core/attempt-end.ts).
      const unasked = m.outcome === 'returned' && !held.askedBack;
      const outcome = unasked ? 'lost' : m.outcome;
      const error = unasked ? `returned without being asked back: ${m.error ?? ''}`.slice(0, MAX_EXIT_ERROR_CHARS) : m.error;
      return {
        attemptId: m.attemptId,
        fencingToken: m.fencingToken,
        // outputs: validated with the frame (worker-messages.ts); the store records them only if the task succeeds now.
        end: { outcome, exitCode: m.exitCode, signal: m.signal, error, durationMs: Math.round(m.durationMs), outputs: m.outputs ?? null },
        actor,
        guard: { workerId: this.workerId },
        claimed: held.claimed,
      };
    });
    // Every attempt reported here leaves this session's count once answered: those slots, and any already free, are
    // refilled; the prefetch's only when no other worker of this server has a slot free (as in Scheduler.dispatchPass),
    // so tasks given back (outcome `returned`) go to that worker, not back into this one's queue. The attempts that
    // batches in flight are ending count as free already, and their refills are reserved (Scheduler.reserve) until
    // assigned: two batches at once fill the slots exactly once.
    const endingIds = [...new Set(mine.map((m) => m.attemptId))];
    for (const id of endingIds) this.ending.set(id, (this.ending.get(id) ?? 0) + 1);
    const withPrefetch = !this.scheduler.otherHasFreeSlot(this);
    const max = this.draining || this.closed ? 0 : Math.min(MAX_CLAIMS_PER_ROUND, this.scheduler.freeSlots(this, withPrefetch, this.endingHeld()));
    const release = this.scheduler.reserve(this, max);
    let claims: Claim[] = [];
    let requeued = false;
    let unsent: Claim[] = [];
    try {
      let ended: Array<AttemptEndResult | null> = [];
      const refill = max > 0 ? { worker: { id: this.workerId, labels: this.labels }, max, leaseMs: this.scheduler.opts.leaseMs } : null;
      const [res] = await Promise.all([
        requests.length || refill ? this.store.endAndClaim(requests, refill, this.clock.now()) : Promise.resolve({ ended: [], claims: [] }),
        ...refused.map((m) => this.fenced(m.attemptId, 'exit', 'not an attempt of this worker')),
      ]);
      ({ ended, claims } = res);
      for (const [i, m] of mine.entries()) {
        const r = ended[i];
        this.attempts.delete(m.attemptId);
        if (r) {
          if (r.task.state === 'retrying' && r.task.runAfter !== null) this.scheduler.wakeAtTime(r.task.runAfter);
          if (r.task.state === 'waiting') requeued = true;
        } else {
          const a = await this.store.getAttempt(m.attemptId);
          // An exit for an attempt of ours that already ended normally is a resend after a reconnect: ack it again.
          // One for an attempt that was declared lost is a fenced report.
          if (!a || a.state === 'lost' || a.state === 'running') await this.fenced(m.attemptId, 'exit');
        }
        this.send({ type: 'exit_ack', attemptId: m.attemptId });
      }
      unsent = claims.filter((c) => !this.assign(c.task, c.attempt));
    } finally {
      release();
      for (const id of endingIds) {
        const n = this.ending.get(id)! - 1;
        if (n > 0) this.ending.set(id, n);
        else this.ending.delete(id);
      }
    }
    await this.scheduler.giveBack(unsent.map((c) => c.attempt));
    // A task these ends requeued may suit another worker better; an empty refill means nothing waits for this one.
    if (requeued || unsent.length) this.scheduler.kick();
    // A refill that came back short left slots free that no waiting task fills: another worker's queued ones may.
    else if (claims.length < max || max === 0) this.scheduler.takeBack();
  }

  private async fenced(attemptId: number, kind: string, why?: string): Promise<void> {
    this.attempts.delete(attemptId);
    await this.store.recordFencedReport(attemptId, why ? `${kind} (${why})` : kind, `worker:${this.workerId}`, this.clock.now());
    this.send({ type: 'reject', attemptId, reason: why ?? 'attempt is no longer current (fenced)' });
    this.log.warn({ attemptId, kind, why, workerId: this.workerId }, 'rejected a report');
  }

  private async onClose(): Promise<void> {
    this.closed = true;
    clearTimeout(this.helloTimer);
    this.unregister();
    if (!this.registered) return;
    // Replaced by a newer session of the same worker: that one owns the worker's state now.
    if (!this.scheduler.removeLink(this)) return;
    this.log.info({ workerId: this.workerId, running: this.attempts.size }, 'worker disconnected; its attempts keep their leases until they expire');
    try {
      await this.store.markWorkerDisconnected(this.workerId, this.clock.now());
    } catch (err) {
      this.log.warn({ err }, 'could not mark worker disconnected');
    }
  }
}

/** What a store may plan an attempt's end from (EndRequest.claimed): its task as last read, and its number. */
function claimedTask(task: Task, attempt: Attempt): ClaimedTask {
  return { id: task.id, retry: task.retry, retriesUsed: task.retriesUsed, lostCount: task.lostCount, dagRunId: task.dagRunId, attempt: attempt.number };
}

/** What the agent gets for an attempt: the task's spec and the attempt's fencing token (only this worker learns it). */
export function assignment(task: Task, attempt: Attempt): AssignedAttempt {
  return {
    attemptId: attempt.id,
    fencingToken: attempt.fencingToken,
    taskId: task.id,
    number: attempt.number,
    command: task.command,
    args: task.args,
    script: task.script,
    interpreter: task.interpreter,
    env: task.env,
    timeoutMs: task.timeoutMs,
    cwd: task.cwd,
  };
}
