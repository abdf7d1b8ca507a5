/**
 * The worker protocol: JSON text frames over one WebSocket per agent, at
 * `GET /v1/workers/connect` with `Authorization: Bearer <worker token>`.
 *
 * Life of a connection:
 *   agent  → hello      (identity, capacity, attempts it is still running)
 *   server → welcome    (timings; stop orders for the attempts it listed that must not go on)
 *   server → assign     (push dispatch, whenever the agent has a free slot)
 *   agent  → log*       (ordered chunks; the server acks cumulatively per attempt)
 *   agent  → exit       (outcome; the agent repeats it after a reconnect until exit_ack)
 *   server → cancel     (kill the attempt's process group, report its exit)
 *   agent  → heartbeat  (every heartbeatMs; renews the leases of its attempts)
 *   server → heartbeat_ack (after the renewal is stored; stop orders again, until the attempts end)
 *   server → drain      (an admin drains the worker)   agent → draining (also on SIGTERM)
 *
 * Every report about an attempt carries its fencing token: 32 random hex
 * digits made when the attempt was created and sent only in its `assign`. A
 * report is accepted only from the worker the attempt was assigned to, with
 * its token, while it is the task's current running attempt (core/fence.ts);
 * otherwise it is rejected (`reject`), changes nothing, and is recorded.
 *
 * A stop order (`welcome.stop`, `heartbeat_ack.stop`) is the durable form of a
 * cancel: the server repeats it on every answer until the attempt has ended,
 * so a cancel made while the agent was disconnected still reaches it.
 *   report: true   the attempt is current (its task was cancelled): kill it and report its exit.
 *   report: false  the attempt is no longer current (ended, superseded, not this worker's):
 *                  kill it and report nothing more (as for `reject`).
 *
 * Every agent message is validated by the server against a schema with size
 * limits (server/worker-messages.ts); a bad one closes that session only.
 *
 * Framing (version 3): a text frame carries one message (a JSON object) or
 * several (a JSON array of at most MAX_MESSAGES_PER_FRAME, in order). Both
 * sides put what one synchronous run sends into one frame, flushed in a
 * microtask (before the event loop turns).
 * Measured (issue 9, a noop drain): a frame per message (assign, exit_ack;
 * started, exit) cost a socket write each, about a tenth of the server's CPU.
 */

export interface AssignedAttempt {
  attemptId: number;
  fencingToken: string;
  taskId: string;
  /** 1-based attempt number; the agent exports it as DROVER_ATTEMPT. */
  number: number;
  command: string | null;
  args: string[];
  script: string | null;
  interpreter: string[];
  env: Record<string, string>;
  timeoutMs: number | null;
  /**
   * Absolute directory to run in (null: the attempt's work directory, which stays HOME and holds
   * DROVER_OUTPUT_DIR either way). Absent from older servers' assigns: treated as null.
   */
  cwd?: string | null;
}

export type AgentMessage =
  | {
      type: 'hello';
      workerId: string;
      hostname: string;
      slots: number;
      labels: Record<string, string>;
      version: string;
      running: Array<{ attemptId: number; fencingToken: string }>;
      /**
       * Attempts this agent killed on its own since it last talked to a server
       * (self-fencing: no server reachable for the lease bound). The server
       * records each on its task; the attempts were already ended as lost.
       */
      killed?: Array<{ attemptId: number; fencingToken: string; reason: string }>;
      /**
       * The agent is draining (SIGTERM, or a server's drain before it moved to
       * this server): the session takes it as draining from the start, so no
       * work is assigned before a `draining` message could arrive.
       */
      draining?: boolean;
      /**
       * Assignments the agent takes beyond `slots` and keeps queued until a
       * slot frees (`drover worker --prefetch`; absent: 0). They are leased
       * to it like running ones (listed in hello and heartbeats); the server
       * assigns up to slots + prefetch (worker/prefetch-queue.ts). A later
       * `prefetch` message changes it (`--prefetch auto`).
       */
      prefetch?: number;
    }
  /** The agent accepts no more work (SIGTERM or a server's `drain`); its running attempts go on. */
  | { type: 'draining' }
  /**
   * The agent changes its prefetch (as `hello.prefetch`): `drover worker
   * --prefetch auto` (worker/auto-prefetch.ts) offers its queue while its
   * tasks are short and withdraws it otherwise. On a decrease the server asks
   * back (`give_back`) what it assigned beyond slots + the new prefetch. A
   * raise applies once PREFETCH_RERAISE_RUNS attempts have run on the
   * connection since it began or since the last lowering. Sent only to a
   * server whose `welcome` said `prefetchChanges` (an older server refuses an
   * unknown message type).
   */
  | { type: 'prefetch'; prefetch: number }
  /** `seq`: increasing per connection; echoed by heartbeat_ack, so the agent knows which send was confirmed. */
  | { type: 'heartbeat'; seq: number; running: number[] }
  | { type: 'started'; attemptId: number; fencingToken: string; pid: number }
  | {
      type: 'log';
      attemptId: number;
      fencingToken: string;
      /** Per attempt, from 0, one per chunk, across both streams in the order read. */
      seq: number;
      stream: 'stdout' | 'stderr';
      /** base64 */
      data: string;
    }
  | {
      type: 'exit';
      attemptId: number;
      fencingToken: string;
      /**
       * `lost`: the agent gave the attempt up without a result (drain timeout): it runs again elsewhere without using a retry.
       * `start_failed`: the process could not be started (not found, not executable, missing cwd; `error` says which):
       * the task fails at once without a retry.
       * `returned`: a queued attempt (prefetch) given back unstarted, as a `give_back` asked; the task
       * waits again without using a retry. The server takes it only for an attempt it asked back
       * (otherwise it counts as `lost`).
       */
      outcome: 'succeeded' | 'failed' | 'timed_out' | 'cancelled' | 'lost' | 'start_failed' | 'returned';
      exitCode: number | null;
      signal: string | null;
      error: string | null;
      durationMs: number;
      /**
       * What the task wrote to DROVER_OUTPUT (core/task-outputs.ts), parsed by the
       * agent and checked again by the server (taskOutputsProblem). Only with outcome
       * `succeeded`, and only when the file held at least one key; absent otherwise.
       * A server older than this field refuses an exit that carries it: upgrade
       * servers before agents.
       */
      outputs?: Record<string, string>;
    };

export interface StopOrder {
  attemptId: number;
  reason: string;
  /** true: kill and report the exit (task cancelled); false: kill and forget (no longer current). */
  report: boolean;
}

export type ServerMessage =
  | {
      type: 'welcome';
      workerId: string;
      heartbeatMs: number;
      leaseMs: number;
      /** Of the attempts the hello listed, those that must stop (see StopOrder). The others' leases are renewed. */
      stop: StopOrder[];
      /** This server takes `prefetch` messages (absent: an older server; the agent then keeps its hello's prefetch). */
      prefetchChanges?: boolean;
    }
  /** The heartbeat `seq` is stored (leases renewed to the server's now + leaseMs); `stop` as in welcome. */
  | { type: 'heartbeat_ack'; seq: number; stop: StopOrder[] }
  | { type: 'assign'; attempt: AssignedAttempt }
  | { type: 'cancel'; attemptId: number; reason: string }
  /** Cumulative: every log chunk of the attempt with seq <= this one is stored. */
  | { type: 'ack'; attemptId: number; seq: number }
  | { type: 'exit_ack'; attemptId: number }
  /** A fenced report: the attempt is no longer current. The agent stops it and forgets it. */
  | { type: 'reject'; attemptId: number; reason: string }
  /**
   * An admin drained this worker: accept no more work, let running attempts
   * finish within the agent's drain timeout, then stop the rest and report them
   * `lost` (they run elsewhere). The agent stays connected, idle.
   */
  | { type: 'drain'; reason: string }
  /**
   * Of these attempts, the agent gives back those it still holds queued
   * (prefetch) and has not started: each is reported at once as an exit with
   * outcome `returned`, and runs elsewhere. Those it started meanwhile (or
   * never had) it keeps and says nothing about. Sent when another worker of
   * this server has a free slot and no task waits for it (scheduler.ts
   * takeBack), and when the agent lowered its prefetch (the attempts beyond
   * slots + the new prefetch; worker-session.ts onPrefetch). An agent older than this message ignores it; its queued
   * attempts then wait for its own slots, as before.
   */
  | { type: 'give_back'; attemptIds: number[]; reason: string };

export const WORKER_CONNECT_PATH = '/v1/workers/connect';
export const PROTOCOL_VERSION = '3';

/** Messages one frame may carry (an array frame); a receiver refuses more. */
export const MAX_MESSAGES_PER_FRAME = 256;
/** A sender starts a new frame past this many characters of JSON (a single larger message goes alone). */
export const FRAME_BATCH_CHARS = 64 * 1024;

/**
 * Packs messages (already JSON) into frame texts: in order, at most
 * MAX_MESSAGES_PER_FRAME and about FRAME_BATCH_CHARS each; one message is
 * sent as itself, several as an array.
 */
export function packFrames(jsons: readonly string[]): string[] {
  const frames: string[] = [];
  let group: string[] = [];
  let chars = 0;
  const close = () => {
    if (group.length === 1) frames.push(group[0]!);
    else if (group.length > 1) frames.push(`[${group.join(',')}]`);
    group = [];
    chars = 0;
  };
  for (const j of jsons) {
    if (group.length > 0 && (group.length >= MAX_MESSAGES_PER_FRAME || chars + j.length > FRAME_BATCH_CHARS)) close();
    group.push(j);
    chars += j.length + 1;
  }
  close();
  return frames;
}

/** Bounds that keep both processes' memory flat however much a task prints. */
/** The most assignments an agent may hold queued beyond its slots (`drover worker --prefetch`). */
export const MAX_PREFETCH = 1024;
/**
 * Attempts that must run (exits other than `returned`) on a connection, and since
 * the agent last lowered its prefetch, before a server applies a raise by a
 * `prefetch` message (worker-session.ts onPrefetch); an agent with `--prefetch
 * auto` offers only after as many short runs in a row (worker/auto-prefetch.ts
 * AUTO_WINDOW), so it waits for this only after a reconnect.
 */
export const PREFETCH_RERAISE_RUNS = 20;

export const LOG_LIMITS = {
  /** Largest chunk the agent sends. */
  maxChunkBytes: 64 * 1024,
  /** Unacknowledged bytes per attempt before the agent stops reading the pipe. */
  maxInFlightBytes: 1024 * 1024,
} as const;

/** The longest `error` an exit report may carry, in characters (code points, as the server's schema counts). */
export const MAX_EXIT_ERROR_CHARS = 4096;

/**
 * `error` cut to MAX_EXIT_ERROR_CHARS (ending in `…`). An agent sends only
 * this: a longer one (a start failure naming a 4,096-character cwd) is a
 * protocol error at the server, which closes the connection, and the resent
 * report would close the next one too.
 */
export function clampExitError(error: string | null): string | null {
  if (error === null || error.length <= MAX_EXIT_ERROR_CHARS) return error;
  const points = [...error];
  return points.length <= MAX_EXIT_ERROR_CHARS ? error : `${points.slice(0, MAX_EXIT_ERROR_CHARS - 1).join('')}…`;
}

/**
 * Output an agent keeps of one attempt by default (`drover worker
 * --max-log`): the rest is read and dropped after a marker line
 * (worker/log-pump.ts), so one task cannot fill the server's disk.
 */
export const DEFAULT_MAX_LOG_BYTES = 100 * 1024 * 1024;

/** A worker's labels (hello), as `drover worker --label` accepts them. */
export const LABEL_LIMITS = { count: 64, keyLength: 256, valueLength: 1024 } as const;

export const DEFAULT_HEARTBEAT_MS = 5_000;
export const DEFAULT_LEASE_MS = 15_000;
