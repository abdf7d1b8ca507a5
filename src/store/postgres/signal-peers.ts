/**
 * Which other stores LISTEN on the signal channel (signals.ts), as their
 * presence notifications tell (pure: the clock is passed in).
 *
 * Why: the hints (wake, task) a write NOTIFYs after its commit are for the
 * other servers on the database; this server's own listeners get them at
 * commit (deliverLocally). A server alone on its database sends them to
 * nobody, yet each costs a statement on the LISTEN connection and work in
 * PostgreSQL. Measured (issue 9, 2,000 sequential awaited submits to one
 * server on PostgreSQL, builds alternating, three pairs, 2026-12-05 06:00-06:25
 * UTC): with the hints cut out of the build before, 538, 470 and 543/s
 * sending them against 613, 528 and 592/s not; this protocol against that
 * build, 585, 560 and 574/s before against 608, 631 and 633/s (p50 1.40,
 * 1.43, 1.48 ms against 1.35, 1.34, 1.33 ms).
 *
 * The protocol: every listening store NOTIFYs `{"kind":"peer","state":"here"}`
 * on the LISTEN connection when LISTEN starts (and after each reconnect) and
 * every PRESENCE_MS after, and `{"state":"bye"}` when it closes. A store that
 * hears `here` from a backend it did not know answers with its own `here` at
 * once, so a newcomer learns of the others within a round trip, not a
 * period. A peer is a backend process id (the LISTEN connection's); it counts
 * until PEER_TTL_MS after its last `here`, or until its `bye`.
 *
 * What a miss costs: hints are hints. A newcomer's first milliseconds (before
 * its `here` arrives) and a peer whose presence stopped arriving are covered
 * by the scheduler's one-second sweep and the followers' one-second poll,
 * exactly as a lost NOTIFY is today. A store whose LISTEN connection is down
 * does not know its peers and sends every hint (db.ts). During a rolling
 * upgrade, a server of a version before this protocol never says `here`: a
 * newer one beside it sends it no hints, and its dispatch waits for its sweep
 * (up to a second) until it is upgraded too.
 */

/** How often a listening store says it is there. */
export const PRESENCE_MS = 5_000;
/** A peer silent this long is gone: four periods, as a busy peer's NOTIFY may queue behind its other statements. */
export const PEER_TTL_MS = 4 * PRESENCE_MS;

export type Presence = 'here' | 'bye';

/** The presence payloads (JSON, like every other signal on the channel). */
export const PRESENCE_PAYLOAD: Record<Presence, string> = {
  here: JSON.stringify({ kind: 'peer', state: 'here' }),
  bye: JSON.stringify({ kind: 'peer', state: 'bye' }),
};

/** The presence in a NOTIFY payload; null when the payload is anything else. */
export function presenceFromPayload(payload: string | undefined): Presence | null {
  if (!payload || !payload.startsWith('{"kind":"peer"')) return null;
  try {
    const v = JSON.parse(payload) as { kind?: unknown; state?: unknown };
    return v.kind === 'peer' && (v.state === 'here' || v.state === 'bye') ? v.state : null;
  } catch {
    return null;
  }
}

export class SignalPeers {
  /** Backend process id → when its last `here` arrived. */
  private readonly lastHere = new Map<number, number>();

  constructor(private readonly ttlMs: number = PEER_TTL_MS) {}

  /**
   * Records what backend `pid` said at `now`. Returns true when it said
   * `here` and was not a live peer before: the caller answers with its own
   * `here` (see the header).
   */
  heard(pid: number, presence: Presence, now: number): boolean {
    if (presence === 'bye') {
      this.lastHere.delete(pid);
      return false;
    }
    const known = this.isLive(pid, now);
    this.lastHere.set(pid, now);
    return !known;
  }

  /** Whether any peer is live at `now`. */
  any(now: number): boolean {
    return this.count(now) > 0;
  }

  /** The live peers at `now`; forgets the expired ones. */
  count(now: number): number {
    for (const [pid, at] of this.lastHere) if (!this.live(at, now)) this.lastHere.delete(pid);
    return this.lastHere.size;
  }

  private isLive(pid: number, now: number): boolean {
    const at = this.lastHere.get(pid);
    return at !== undefined && this.live(at, now);
  }

  private live(at: number, now: number): boolean {
    return now - at < this.ttlMs;
  }
}
