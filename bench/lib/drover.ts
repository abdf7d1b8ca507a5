/**
 * Drover's side of every section: real `drover server` and `drover worker`
 * processes from test/e2e/harness.ts, driven over keep-alive HTTP.
 */
import { join } from 'node:path';
import { Api, startCluster, startProc, waitWorker, type Cluster, type ClusterOptions, type Proc } from '../../test/e2e/harness.js';
import { chunks, inFlight, until, wallMs } from './stats.js';

export { Api, type Cluster, type Proc };

export const NOOP = ['--executor', 'noop'];
export const BATCH_MAX = 1000;
export const TERMINAL_BAD = ['failed', 'cancelled'] as const;

/** startCluster with the server's own last words in the error when it cannot start (e.g. PostgreSQL unreachable). */
export async function cluster(opts: ClusterOptions, what: string): Promise<Cluster> {
  try {
    return await startCluster(opts);
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    throw new Error(`${what}: could not start the cluster: ${msg.split('\n').map((l) => l.trim()).filter(Boolean).slice(-3).join(' / ')}`);
  }
}

/** The batch endpoint answered 404: this server has no POST /v1/tasks/batch. */
export class NoBatchEndpoint extends Error {
  constructor() {
    super('POST /v1/tasks/batch answered 404: this build of the server has no batch endpoint (the batch helper is adding it)');
  }
}

/** Does the server have POST /v1/tasks/batch? Probed with an empty list (400 if it exists, 404 if not), which creates nothing. */
export async function hasBatch(api: Api): Promise<boolean> {
  const r = await api.req('POST', '/v1/tasks/batch', { tasks: [] });
  return r.status !== 404;
}

/**
 * One batch request of `k` copies of `spec`; throws NoBatchEndpoint on 404. Returns the task ids in order.
 * `minimal`: asks for the short answer (Prefer: return=minimal, each task as {id, state}).
 */
export async function submitBatch(api: Api, k: number, spec: Record<string, unknown>, minimal = false): Promise<string[]> {
  const r = await api.req('POST', '/v1/tasks/batch', { tasks: Array.from({ length: k }, () => spec) }, undefined, minimal ? { headers: { prefer: 'return=minimal' } } : {});
  if (r.status === 404) throw new NoBatchEndpoint();
  if (r.status !== 201 || r.body?.tasks?.length !== k) throw new Error(`batch submit: ${r.status} ${r.text.slice(0, 300)}`);
  return r.body.tasks.map((t: { id: string }) => t.id);
}

/**
 * Submits n copies of `spec`: 1,000 per batch request when the server has the
 * batch endpoint, else 32 single submits in flight. Returns how (for the notes) and the ids.
 */
export async function fill(api: Api, n: number, spec: Record<string, unknown> = { command: 'true' }): Promise<{ how: string; ids: string[] }> {
  const ids: string[] = [];
  if (await hasBatch(api)) {
    for (const k of chunks(n, BATCH_MAX)) ids.push(...(await submitBatch(api, k, spec)));
    return { how: `POST /v1/tasks/batch, ${BATCH_MAX} per request`, ids };
  }
  await inFlight(n, 32, async () => {
    ids.push(await api.submit(spec));
  });
  return { how: 'POST /v1/tasks, 32 in flight (no batch endpoint in this build)', ids };
}

export async function counts(api: Api): Promise<Record<string, number>> {
  const r = await api.req('GET', '/v1/stats/counts');
  if (r.status !== 200) throw new Error(`GET /v1/stats/counts: ${r.status} ${r.text}`);
  return r.body.counts;
}

/**
 * Until the server's counters show `n` succeeded (polled every `everyMs`, default 5); fails at once if any
 * task failed or was cancelled. Each poll costs the server about 0.3 ms of CPU on this machine: a span that
 * ends on stored timestamps polls less often, so the watching takes less from what it watches.
 */
export async function untilSucceeded(api: Api, n: number, timeoutMs = 900_000, everyMs = 5): Promise<void> {
  await until(
    `${n} tasks succeeded`,
    async () => {
      const k = await counts(api);
      const bad = TERMINAL_BAD.reduce((s, st) => s + (k[st] ?? 0), 0);
      if (bad) throw new Error(`${bad} tasks failed or were cancelled: ${JSON.stringify(k)}`);
      return (k.succeeded ?? 0) >= n;
    },
    timeoutMs,
    everyMs,
  );
}

export interface AgentStart {
  proc: Proc;
  /** wallMs() just before the agent process was spawned. */
  spawnAt: number;
  /** Spawn → the server lists the agent as connected (polled every 20 ms, so up to 20 ms late). */
  bootMs: number;
}

/** Starts one agent (`drover worker --slots <slots> ...extra`) on the cluster; timed from just before its spawn. */
export async function startAgent(c: Cluster, slots: number, extra: string[] = [], id?: string): Promise<AgentStart> {
  const spawnAt = wallMs();
  const proc = await c.startWorker({ slots, extra, ...(id ? { id } : {}) });
  return { proc, spawnAt, bootMs: wallMs() - spawnAt };
}

/**
 * Another `drover server` on the cluster's database (same admin token: the
 * token is in the store), listening on a port of its own. For scale-out.
 */
export async function extraServer(db: string, adminToken: string, serverArgs: string[] = []): Promise<{ proc: Proc; api: Api }> {
  const { proc, match } = await startProc(['server', '--db', db, '--host', '127.0.0.1', '--port', '0', ...serverArgs], { DROVER_ADMIN_TOKEN: adminToken }, /listening on (http:\/\/127\.0\.0\.1:\d+)/);
  return { proc, api: new Api(match![1]!, adminToken) };
}

/** An agent connected to the server at `api.url` (not the cluster's first one). */
export async function agentOn(c: Cluster, api: Api, id: string, slots: number, extra: string[]): Promise<Proc> {
  const { proc } = await startProc(['worker', '--server', api.url, '--slots', String(slots), '--id', id, '--work-dir', join(c.dir, 'work', id), ...extra], { DROVER_TOKEN: c.workerToken });
  await waitWorker(api, id, proc);
  return proc;
}

/**
 * One stamp per task from the agent's debug lines (pino JSON on stderr):
 * taskId → the number in `field` of the line whose msg is `msg` (epoch ms
 * with a fraction, the agent's clock: agent.ts).
 */
function agentStamps(output: string, msg: string, field: string): Map<string, number> {
  const out = new Map<string, number>();
  const needle = `"${msg}"`;
  for (const line of output.split('\n')) {
    if (!line.includes(needle)) continue;
    try {
      const j = JSON.parse(line) as Record<string, unknown>;
      const at = j[field];
      if (j.msg === msg && typeof j.taskId === 'string' && typeof at === 'number') out.set(j.taskId, at);
    } catch {
      // A line split by the other stream's output: not ours to count.
    }
  }
  return out;
}

/** `process started` lines: taskId → spawnedAt (the agent's clock just after the spawn). */
export const processStarts = (output: string): Map<string, number> => agentStamps(output, 'process started', 'spawnedAt');

/** `attempt assigned` lines: taskId → assignedAt (the agent's clock when it took the assignment up, before the work dir and the spawn). */
export const assignmentsTaken = (output: string): Map<string, number> => agentStamps(output, 'attempt assigned', 'assignedAt');

/** Every task in `state`, through the list API (500 a page). */
export async function listTasks(api: Api, state: string): Promise<any[]> {
  const out: any[] = [];
  let cursor: string | null = null;
  do {
    const r = await api.req('GET', `/v1/tasks?state=${state}&limit=500${cursor ? `&cursor=${cursor}` : ''}`);
    if (r.status !== 200) throw new Error(`GET /v1/tasks: ${r.status} ${r.text}`);
    out.push(...r.body.tasks);
    cursor = r.body.nextCursor;
  } while (cursor);
  return out;
}
