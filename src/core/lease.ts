/**
 * Lease arithmetic that keeps two runs of one task from overlapping. Pure
 * functions of times and durations; the server, the store and the agent call
 * them with their own clocks.
 *
 * The server (store) ends an attempt as lost only when its lease expired:
 * lease = (time the server renewed it) + leaseMs, renewed by each heartbeat.
 * The agent cannot read the server's clock, but it knows when it SENT the
 * last heartbeat the server confirmed (heartbeat_ack, or the welcome that
 * answered a hello): the renewal happened after that send, so the lease ends
 * no earlier than sentAt + leaseMs on any clock that runs at the same rate.
 * The agent therefore starts stopping its attempts at
 *   sentAt + leaseMs - killGraceMs - safetyMs
 * so that even a process ignoring SIGTERM is SIGKILLed by sentAt + leaseMs -
 * safetyMs, before the server can expire the lease and start a replacement.
 */

/** Margin for scheduling delays between the agent's SIGKILL and the server's expiry. */
export function leaseSafetyMs(leaseMs: number): number {
  return Math.max(250, Math.min(1_000, Math.round(leaseMs / 15)));
}

export interface SelfFencePlan {
  /** When the agent sends SIGTERM to its attempts (its own monotonic clock). */
  stopAt: number;
  /** The SIGTERM → SIGKILL grace to use so SIGKILL lands before the lease ends. */
  graceMs: number;
}

/**
 * When the agent must stop its attempts if no further renewal is confirmed.
 * `confirmedSentAt`: when the agent sent the last hello/heartbeat whose answer
 * it received. The grace shrinks when the lease is too short for the full one.
 */
export function selfFencePlan(confirmedSentAt: number, leaseMs: number, killGraceMs: number): SelfFencePlan {
  const killBy = confirmedSentAt + leaseMs - leaseSafetyMs(leaseMs);
  const graceMs = Math.max(0, Math.min(killGraceMs, Math.floor((killBy - confirmedSentAt) / 2)));
  return { stopAt: killBy - graceMs, graceMs };
}

/**
 * A server that just started gives agents one full lease to reconnect (and
 * renew) before it ends any lease: their heartbeats could not reach it while
 * it was down, which says nothing about whether they are alive.
 */
export function mayExpireLeases(serverStartedAt: number, now: number, leaseMs: number): boolean {
  return now - serverStartedAt >= leaseMs;
}
