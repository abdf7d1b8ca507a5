/**
 * The worker protocol: JSON text frames over one WebSocket per agent, at
 * `GET /v1/workers/connect` with `Authorization: Bearer <worker token>`.
 *
 * Life of a connection:
 *   agent  → hello      (identity, capacity, attempts it is still running)
 *   server → welcome    (timings; which of the agent's running attempts are still current)
 *   server → assign     (push dispatch, whenever the agent has a free slot)
 *   agent  → log*       (ordered chunks; the server acks cumulatively per attempt)
 *   agent  → exit       (outcome; the agent repeats it after a reconnect until exit_ack)
 *   server → cancel     (kill the attempt's process group)
 *   agent  → heartbeat  (every heartbeatMs; renews the leases of its attempts)
 *   server → drain      (an admin drains the worker)   agent → draining (also on SIGTERM)
 *
 * Every report about an attempt carries its fencing token. A report whose
 * token is not the task's current attempt is rejected (`reject`) and changes
 * nothing.
 */

export interface AssignedAttempt {
  attemptId: number;
  fencingToken: number;
  taskId: string;
  /** 1-based attempt number; the agent exports it as DROVER_ATTEMPT. */
  number: number;
  command: string | null;
  args: string[];
  script: string | null;
  interpreter: string[];
  env: Record<string, string>;
  timeoutMs: number | null;
}

export type AgentMessage =
  | {
      type: 'hello';
      workerId: string;
      hostname: string;
      slots: number;
      labels: Record<string, string>;
      version: string;
      running: Array<{ attemptId: number; fencingToken: number }>;
      /**
       * Attempts this agent killed on its own since it last talked to a server
       * (self-fencing: no server reachable for the lease bound). The server
       * records each on its task; the attempts were already ended as lost.
       */
      killed?: Array<{ attemptId: number; fencingToken: number; reason: string }>;
    }
  /** The agent accepts no more work (SIGTERM or a server's `drain`); its running attempts go on. */
  | { type: 'draining' }
  | { type: 'heartbeat'; running: number[] }
  | { type: 'started'; attemptId: number; fencingToken: number; pid: number }
  | {
      type: 'log';
      attemptId: number;
      fencingToken: number;
      /** Per attempt, from 0, one per chunk, across both streams in the order read. */
      seq: number;
      stream: 'stdout' | 'stderr';
      /** base64 */
      data: string;
    }
  | {
      type: 'exit';
      attemptId: number;
      fencingToken: number;
      /** `lost`: the agent gave the attempt up without a result (drain timeout): it runs again elsewhere without using a retry. */
      outcome: 'succeeded' | 'failed' | 'timed_out' | 'cancelled' | 'lost';
      exitCode: number | null;
      signal: string | null;
      error: string | null;
      durationMs: number;
    };

export type ServerMessage =
  | {
      type: 'welcome';
      workerId: string;
      heartbeatMs: number;
      leaseMs: number;
      /** Of the attempts the agent said it runs, those that are no longer current: it kills them. */
      stale: number[];
    }
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
  | { type: 'drain'; reason: string };

export const WORKER_CONNECT_PATH = '/v1/workers/connect';
export const PROTOCOL_VERSION = '1';

/** Bounds that keep both processes' memory flat however much a task prints. */
export const LOG_LIMITS = {
  /** Largest chunk the agent sends. */
  maxChunkBytes: 64 * 1024,
  /** Unacknowledged bytes per attempt before the agent stops reading the pipe. */
  maxInFlightBytes: 1024 * 1024,
} as const;

export const DEFAULT_HEARTBEAT_MS = 5_000;
export const DEFAULT_LEASE_MS = 15_000;
