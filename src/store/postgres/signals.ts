/**
 * StoreSignals over PostgreSQL LISTEN/NOTIFY.
 *
 * Sending: each write collects its signals and issues
 * `SELECT pg_notify('drover_signals', payload)`: for `cancel` inside its own
 * transaction just before COMMIT (delivered only if it commits), for the
 * hints right after the COMMIT (db.ts explains the trade). PostgreSQL delivers
 * to every session LISTENing on the channel (this server's included).
 *
 * Receiving: one dedicated connection (not from the pool, which recycles its
 * clients) runs `LISTEN drover_signals` and hands each parsed payload to the
 * listeners, except the echo of the hints it sent itself (those reached this
 * process's listeners at commit already). If that connection fails or ends (PostgreSQL restarted, the
 * backend was terminated, the network broke), it is reopened with backoff,
 * 100 ms doubling to 5 s, and LISTEN is issued again; then a synthetic
 * `{ kind: 'wake' }` goes to the listeners, because notifications sent while
 * it was down are lost (likewise when the very first LISTEN needed retries). A periodic `SELECT 1` on the connection notices a
 * connection that died without closing (no FIN, e.g. a network partition),
 * and so does any other query on it that gets no answer within the client's
 * `query_timeout` (postgres-store.ts: `listenTimeoutMs`).
 *
 * Peers: the LISTEN connection also carries each store's presence
 * (signal-peers.ts), so a store knows whether any other one listens and db.ts
 * can skip the hints when none does.
 */
import pg from 'pg';
import type { StoreSignal } from '../store.js';
import { isConnectionError } from './pg-errors.js';
import { PEER_TTL_MS, PRESENCE_MS, PRESENCE_PAYLOAD, presenceFromPayload, SignalPeers, type Presence } from './signal-peers.js';

export const SIGNAL_CHANNEL = 'drover_signals';

/** A NOTIFY payload, parsed and checked; null for anything that is not a StoreSignal. */
export function signalFromPayload(payload: string | undefined): StoreSignal | null {
  if (!payload) return null;
  let v: unknown;
  try {
    v = JSON.parse(payload);
  } catch {
    return null;
  }
  if (typeof v !== 'object' || v === null) return null;
  const o = v as Record<string, unknown>;
  switch (o.kind) {
    case 'wake':
      return { kind: 'wake' };
    case 'task':
      return typeof o.taskId === 'string' ? { kind: 'task', taskId: o.taskId } : null;
    case 'cancel':
      return typeof o.taskId === 'string' && typeof o.attemptId === 'number' ? { kind: 'cancel', taskId: o.taskId, attemptId: o.attemptId } : null;
    case 'drain':
      return typeof o.workerId === 'string' && typeof o.reason === 'string' ? { kind: 'drain', workerId: o.workerId, reason: o.reason } : null;
    default:
      return null;
  }
}

const BACKOFF_FIRST_MS = 100;
const BACKOFF_MAX_MS = 5_000;

export interface SignalHubOptions {
  /** Connection settings for the LISTEN client (the pool's, minus pool-only ones). */
  client: pg.ClientConfig;
  /** How often the idle LISTEN connection is checked with `SELECT 1`. */
  pingMs?: number;
  /** How often this store says it is there, and how long a silent peer counts (signal-peers.ts; tests shorten them). */
  presenceMs?: number;
  peerTtlMs?: number;
  onError?: (err: unknown) => void;
}

const PRESENCE_SQL = 'SELECT pg_notify($1, $2)';

export class SignalHub {
  private readonly listeners = new Set<(s: StoreSignal) => void>();
  private client: pg.Client | null = null;
  private started = false;
  private closed = false;
  /** Connection attempts since the last successful LISTEN, the current one included: above 1, notifications may have been missed. */
  private attempts = 0;
  private backoffMs = BACKOFF_FIRST_MS;
  private retryTimer: NodeJS.Timeout | null = null;
  private pingTimer: NodeJS.Timeout | null = null;
  private presenceTimer: NodeJS.Timeout | null = null;
  private readonly peers: SignalPeers;
  private pinging = false;
  /** Settles when the first connection attempt has succeeded or failed. */
  private firstAttempt: Promise<void> = Promise.resolve();
  private listeningWaiters: Array<() => void> = [];
  /** Queries on the LISTEN connection run one after another. */
  private queue: Promise<void> = Promise.resolve();

  constructor(private readonly opts: SignalHubOptions) {
    this.peers = new SignalPeers(opts.peerTtlMs ?? PEER_TTL_MS);
  }

  /**
   * Whether a hint (wake, task) should go out on the channel: when another
   * store listens, and whenever this one is not LISTENing (it cannot know).
   */
  needsHints(): boolean {
    return !this.listening || this.peers.any(Date.now());
  }

  /** The other stores heard from lately (diagnostics and tests). */
  peerCount(): number {
    return this.peers.count(Date.now());
  }

  /** NOTIFYs this store's presence on the LISTEN connection, after whatever is queued there. */
  private sendPresence(client: pg.Client, state: Presence): Promise<void> {
    this.queue = this.queue.then(() =>
      client.query(PRESENCE_SQL, [SIGNAL_CHANNEL, PRESENCE_PAYLOAD[state]]).then(
        () => {},
        (e: unknown) => this.failed(client, e), // the next connect says `here` again
      ),
    );
    return this.queue;
  }

  /**
   * Runs a NOTIFY statement on the LISTEN connection when it is up: it is
   * otherwise idle, so hints never wait for a pool connection behind the
   * writers. False when it is not connected (the caller uses the pool).
   */
  notifyVia(sql: string, params: unknown[]): boolean {
    const client = this.client;
    if (!client || !this.listening || this.closed) return false;
    // One query at a time on this connection (pg 9 drops implicit queueing): chain them.
    this.queue = this.queue.then(() =>
      client.query(sql, params).then(
        () => {},
        (e: unknown) => this.failed(client, e), // a hint lost with it is covered by the sweeps
      ),
    );
    return true;
  }

  subscribe(listener: (s: StoreSignal) => void): () => void {
    this.listeners.add(listener);
    this.start();
    return () => {
      this.listeners.delete(listener);
    };
  }

  /** True while the LISTEN connection is up. */
  get listening(): boolean {
    return this.client !== null && this.pingTimer !== null;
  }

  /**
   * Resolves once the first LISTEN attempt has settled (succeeded or failed).
   * Writes await this, so that a listener registered just before a write is
   * LISTENing when the write's NOTIFY commits; it never blocks once settled.
   */
  firstAttemptSettled(): Promise<void> {
    return this.firstAttempt;
  }

  /** Resolves when LISTEN is active (now, or after the next successful (re)connect). */
  whenListening(): Promise<void> {
    if (this.listening || this.closed) return Promise.resolve();
    this.start();
    return new Promise((resolve) => this.listeningWaiters.push(resolve));
  }

  private start(): void {
    if (this.started || this.closed) return;
    this.started = true;
    this.firstAttempt = this.connect();
  }

  private async connect(): Promise<void> {
    this.retryTimer = null;
    if (this.closed) return;
    this.attempts++;
    const client = new pg.Client(this.opts.client);
    this.client = client;
    client.on('error', (e) => this.lost(client, e));
    client.on('end', () => this.lost(client, new Error('the LISTEN connection ended')));
    client.on('notification', (n) => {
      if (n.channel !== SIGNAL_CHANNEL) return;
      // Our own echo: hints sent through notifyVia (this very connection) were
      // delivered to this process's listeners at commit (deliverLocally), so the
      // echo would only hand every listener each of this server's hints twice.
      // `cancel` and `drain` are sent from pool connections, so they still arrive.
      if (n.processId === (client as unknown as { processID: number | null }).processID) return;
      const presence = presenceFromPayload(n.payload);
      if (presence) {
        if (this.peers.heard(n.processId, presence, Date.now()) && this.client === client) void this.sendPresence(client, 'here');
        return;
      }
      const sig = signalFromPayload(n.payload);
      if (sig) this.dispatch(sig);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${SIGNAL_CHANNEL}`);
    } catch (e) {
      this.lost(client, e);
      return;
    }
    if (this.client !== client) {
      // Lost or closed meanwhile: this client is not ours any more.
      client.end().catch(() => {});
      return;
    }
    const missedSome = this.attempts > 1;
    this.attempts = 1;
    this.backoffMs = BACKOFF_FIRST_MS;
    this.pinging = false;
    this.pingTimer = setInterval(() => this.ping(client), this.opts.pingMs ?? 30_000);
    this.pingTimer.unref();
    void this.sendPresence(client, 'here');
    this.presenceTimer = setInterval(() => void this.sendPresence(client, 'here'), this.opts.presenceMs ?? PRESENCE_MS);
    this.presenceTimer.unref();
    for (const w of this.listeningWaiters.splice(0)) w();
    // Whatever was notified while the connection was down is lost: make everyone re-read.
    if (missedSome) this.dispatch({ kind: 'wake' });
  }

  private ping(client: pg.Client): void {
    if (this.pinging) return; // the previous one is still out (the client's query_timeout ends it)
    this.pinging = true;
    this.queue = this.queue
      .then(() => client.query('SELECT 1'))
      .then(() => {}, (e: unknown) => this.lost(client, e))
      .finally(() => {
        if (this.client === client) this.pinging = false;
      });
  }

  /**
   * A query on the LISTEN connection failed. A statement's own error leaves
   * the connection usable; a connection error (reset, or `Query read timeout`:
   * no answer within the client's query_timeout, so the connection died
   * silently) drops it at once. It must: after a read timeout, pg keeps the
   * unanswered query as the active one, so every later query on that client
   * (the ping's included) waits behind it, and the hub would stay deaf until
   * the ping's own timeout, twice the wait for nothing.
   */
  private failed(client: pg.Client, e: unknown): void {
    if (isConnectionError(e)) this.lost(client, e);
  }

  /** The connection `client` failed: drop it and, unless closed, reconnect after the backoff. */
  private lost(client: pg.Client, err: unknown): void {
    if (this.client !== client) return;
    this.client = null;
    if (this.pingTimer) clearInterval(this.pingTimer);
    this.pingTimer = null;
    if (this.presenceTimer) clearInterval(this.presenceTimer);
    this.presenceTimer = null;
    client.removeAllListeners();
    client.on('error', () => {}); // a late error from the dead connection must not crash the process
    client.end().catch(() => {});
    if (this.closed) return;
    this.opts.onError?.(err);
    const delay = this.backoffMs;
    this.backoffMs = Math.min(this.backoffMs * 2, BACKOFF_MAX_MS);
    this.retryTimer = setTimeout(() => void this.connect(), delay);
    this.retryTimer.unref();
  }

  /**
   * Hands hints of this process's own committed writes to its listeners at
   * once, without waiting for PostgreSQL to echo the NOTIFY back. The echo
   * of hints sent on the LISTEN connection is dropped on arrival; one sent on
   * a pool connection while LISTEN was down may still come back as a
   * duplicate, which listeners tolerate (signals are hints).
   */
  deliverLocally(signals: StoreSignal[]): void {
    for (const sig of signals) this.dispatch(sig);
  }

  private dispatch(sig: StoreSignal): void {
    for (const l of [...this.listeners]) {
      try {
        l(sig);
      } catch {
        // A listener's failure must not keep the signal from the others.
      }
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const wasListening = this.listening;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    if (this.pingTimer) clearInterval(this.pingTimer);
    if (this.presenceTimer) clearInterval(this.presenceTimer);
    this.retryTimer = null;
    this.pingTimer = null;
    this.presenceTimer = null;
    for (const w of this.listeningWaiters.splice(0)) w();
    const client = this.client;
    this.client = null;
    this.listeners.clear();
    if (client) {
      client.removeAllListeners();
      client.on('error', () => {});
      // Tells the peers at once that this store stops listening (else they count it until PEER_TTL_MS).
      // end() waits for the server to close the socket; a dead network must hold neither up.
      if (wasListening) await Promise.race([this.sendPresence(client, 'bye'), new Promise<void>((r) => setTimeout(r, 200).unref())]);
      await Promise.race([client.end().catch(() => {}), new Promise<void>((r) => setTimeout(r, 1000).unref())]);
    }
  }
}
