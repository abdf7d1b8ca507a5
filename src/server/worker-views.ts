/**
 * Workers as the API and the stream show them: the store's rows, what this
 * server knows of its own live connections, and the running attempts.
 *
 * State, decided per worker (first that applies):
 *   disconnected  the store says disconnected and no connection is here;
 *   lost          connected (here, or per the store on another server) but
 *                 nothing was heard from it within the lease: its server or
 *                 its link died, and its attempts will be ended as lost;
 *   draining      an admin asked it to drain (drainingAt), or its agent said so;
 *   connected     otherwise.
 * `lastSeenAt` is the latest of the store's heartbeat time and this server's
 * last frame from it. `slotsUsed` counts every running attempt on it (with
 * `--prefetch`, the queued ones too: it can exceed `slots`); a user
 * sees only their own tasks among `runningAttempts`.
 */
import type { RunningAttemptView, Store, WorkerRecord } from '../store/store.js';
import type { WorkerLink } from './scheduler.js';

export type WorkerState = 'connected' | 'draining' | 'disconnected' | 'lost';

export interface WorkerJson {
  id: string;
  hostname: string;
  labels: Record<string, string>;
  slots: number;
  slotsUsed: number;
  state: WorkerState;
  connectedAt: string;
  lastSeenAt: string;
  drainingAt: string | null;
  runningAttempts: Array<{ attemptId: number; taskId: string; taskName: string; startedAt: string }>;
}

export interface WorkerViewDeps {
  store: Pick<Store, 'listWorkers' | 'runningAttempts'>;
  /** This server's live connections. */
  links(): readonly Pick<WorkerLink, 'workerId' | 'draining' | 'lastHeardAt'>[];
  now(): number;
  leaseMs: number;
}

/** Who is looking: null for an admin (every attempt), else the user whose attempts are listed. */
export type Viewer = string | null;

const iso = (t: number) => new Date(t).toISOString();

export function workerState(w: WorkerRecord, link: Pick<WorkerLink, 'draining' | 'lastHeardAt'> | undefined, now: number, leaseMs: number): { state: WorkerState; heardAt: number } {
  const heardAt = Math.max(w.lastSeenAt, link?.lastHeardAt ?? -Infinity);
  if (!link && w.state !== 'connected') return { state: 'disconnected', heardAt };
  if (now - heardAt > leaseMs) return { state: 'lost', heardAt };
  if (link?.draining || w.drainingAt !== null) return { state: 'draining', heardAt };
  return { state: 'connected', heardAt };
}

export function workerJson(w: WorkerRecord, state: WorkerState, heardAt: number, running: readonly RunningAttemptView[], viewer: Viewer): WorkerJson {
  return {
    id: w.id,
    hostname: w.hostname,
    labels: w.labels,
    slots: w.slots,
    slotsUsed: running.length,
    state,
    connectedAt: iso(w.connectedAt),
    lastSeenAt: iso(heardAt),
    drainingAt: w.drainingAt === null ? null : iso(w.drainingAt),
    runningAttempts: running
      .filter((a) => viewer === null || a.owner === viewer)
      .map((a) => ({ attemptId: a.attemptId, taskId: a.taskId, taskName: a.taskName, startedAt: iso(a.startedAt) })),
  };
}

/**
 * Every worker the store knows (or only `ids`), ordered by id. Running
 * attempts are read once for all workers, or per worker when a few are asked
 * for (the stream's batches name the workers that changed).
 */
export async function workerViews(deps: WorkerViewDeps, viewer: Viewer, ids?: readonly string[]): Promise<WorkerJson[]> {
  const want = ids ? new Set(ids) : null;
  const rows = (await deps.store.listWorkers()).filter((w) => !want || want.has(w.id));
  if (rows.length === 0) return [];
  const running = new Map<string, RunningAttemptView[]>();
  const all = want && rows.length <= 8 ? (await Promise.all(rows.map((w) => deps.store.runningAttempts(w.id)))).flat() : await deps.store.runningAttempts();
  for (const a of all) {
    let list = running.get(a.workerId);
    if (!list) running.set(a.workerId, (list = []));
    list.push(a);
  }
  const links = new Map(deps.links().map((l) => [l.workerId, l]));
  const now = deps.now();
  return rows.map((w) => {
    const { state, heardAt } = workerState(w, links.get(w.id), now, deps.leaseMs);
    return workerJson(w, state, heardAt, running.get(w.id) ?? [], viewer);
  });
}
