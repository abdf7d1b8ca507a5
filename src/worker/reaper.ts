/**
 * The reaper: a small process each agent (process executor) starts once, so
 * that its attempts' process groups stop promptly when the agent is killed
 * outright (kill -9, OOM killer), instead of running on as orphans while the
 * server gives their tasks to other workers.
 *
 * Run as `node dist/src/worker/reaper.js --grace-ms N` (reaper-command.ts says how an agent starts it) with a pipe on stdin
 * that only the agent holds (the agent's end is close-on-exec, so attempts do
 * not inherit it). Contract:
 * - stdin carries one line per change: `add <pgid> <taskId>` when an
 *   attempt's group is spawned, `del <pgid>` once it is gone. Other lines are
 *   reported on stderr and ignored.
 * - SIGINT, SIGTERM and SIGHUP are ignored: a Ctrl-C to the terminal's
 *   process group (which the reaper shares with the agent) must not kill it
 *   while the agent is still draining its attempts.
 * - `deadline <pgid> <termInMs> <killInMs>` (a dead-man switch): unless a
 *   newer deadline for that group arrives first, the group gets SIGTERM in
 *   termInMs and SIGKILL in killInMs. The agent sends one for each running
 *   attempt whenever a lease renewal is confirmed, a little after the time it
 *   would stop the attempt itself (core/lease.ts), so a live agent always
 *   acts first; an agent that cannot act (SIGSTOP, a blocked event loop)
 *   still has its attempts killed before the server may expire their leases
 *   and start replacements. The group stays registered (the agent sends
 *   `del` when it sees the attempt end).
 * - At EOF (the agent is gone, or closed the pipe on shutdown): with nothing
 *   registered it exits at once. Otherwise it sends SIGTERM to each
 *   registered group, SIGKILL `graceMs` later to those still alive, then
 *   exits. A group is signalled only while some member still carries that
 *   task's DROVER_TASK_ID (process-group.ts taskMembers), so a reused pgid is
 *   never touched.
 * Bound: an outright killed agent's attempts are gone within graceMs
 * (REAPER_MAX_GRACE_MS at most) plus the time to scan /proc.
 */
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { groupAlive, signalTaskGroup } from './process-group.js';
import { REAPER_MAX_GRACE_MS } from './reaper-command.js';

/** One parsed stdin line, or an error message. */
export type ReaperLine =
  | { op: 'add'; pgid: number; taskId: string }
  | { op: 'del'; pgid: number }
  | { op: 'deadline'; pgid: number; termInMs: number; killInMs: number }
  | { error: string };

const isMs = (x: string | undefined) => x !== undefined && /^\d{1,12}$/.test(x);

export function parseReaperLine(line: string): ReaperLine {
  const parts = line.trim().split(' ');
  const shape =
    (parts[0] === 'add' && parts.length === 3 && parts[2]) ||
    (parts[0] === 'del' && parts.length === 2) ||
    (parts[0] === 'deadline' && parts.length === 4 && isMs(parts[2]) && isMs(parts[3]) && Number(parts[2]) <= Number(parts[3]));
  if (!shape) return { error: `expected "add <pgid> <taskId>", "del <pgid>" or "deadline <pgid> <termInMs> <killInMs>", got "${line}"` };
  const pgid = Number(parts[1]);
  if (!/^\d+$/.test(parts[1]!) || !Number.isSafeInteger(pgid) || pgid <= 1) return { error: `bad pgid in "${line}"` };
  if (parts[0] === 'deadline') return { op: 'deadline', pgid, termInMs: Number(parts[2]), killInMs: Number(parts[3]) };
  return parts[0] === 'add' ? { op: 'add', pgid, taskId: parts[2]! } : { op: 'del', pgid };
}

/** Stops the registered groups (see the contract above). */
export async function reapGroups(groups: ReadonlyMap<number, string>, graceMs: number, say: (line: string) => void): Promise<void> {
  const termed: Array<[number, string]> = [];
  for (const [pgid, taskId] of groups) {
    const pids = await signalTaskGroup(pgid, taskId, 'SIGTERM').catch(() => []);
    if (pids.length > 0) {
      termed.push([pgid, taskId]);
      say(`the agent is gone: SIGTERM to process group ${pgid} (task ${taskId})`);
    }
  }
  const deadline = Date.now() + graceMs;
  let delay = 5;
  while (termed.some(([pgid]) => groupAlive(pgid)) && Date.now() < deadline) {
    await sleep(Math.min(delay, Math.max(1, deadline - Date.now())));
    delay = Math.min(delay * 2, 50);
  }
  for (const [pgid, taskId] of termed) {
    if (!groupAlive(pgid)) continue;
    const pids = await signalTaskGroup(pgid, taskId, 'SIGKILL').catch(() => []);
    if (pids.length > 0) say(`SIGKILL to process group ${pgid} (task ${taskId}) after ${graceMs} ms`);
  }
}

function main(): void {
  const i = process.argv.indexOf('--grace-ms');
  const graceArg = i >= 0 ? Number(process.argv[i + 1]) : REAPER_MAX_GRACE_MS;
  const graceMs = Number.isFinite(graceArg) && graceArg >= 0 ? Math.min(graceArg, REAPER_MAX_GRACE_MS) : REAPER_MAX_GRACE_MS;
  const say = (line: string) => {
    try {
      process.stderr.write(`drover reaper[${process.pid}]: ${line}\n`);
    } catch {
      // stderr gone with the agent: nobody to tell
    }
  };
  process.stderr.on('error', () => {});
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(sig, () => {});
  const groups = new Map<number, string>();
  const deadlines = new Map<number, NodeJS.Timeout[]>();
  const clearDeadline = (pgid: number) => {
    for (const t of deadlines.get(pgid) ?? []) clearTimeout(t);
    deadlines.delete(pgid);
  };
  const fire = (pgid: number, signal: 'SIGTERM' | 'SIGKILL') => {
    const taskId = groups.get(pgid);
    if (taskId === undefined) return;
    void signalTaskGroup(pgid, taskId, signal)
      .then((pids) => {
        if (pids.length > 0) say(`the agent did not renew its deadline: ${signal} to process group ${pgid} (task ${taskId})`);
      })
      .catch(() => {});
  };
  const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
  rl.on('line', (line) => {
    if (!line.trim()) return;
    const p = parseReaperLine(line);
    if ('error' in p) say(p.error);
    else if (p.op === 'add') groups.set(p.pgid, p.taskId);
    else if (p.op === 'del') {
      groups.delete(p.pgid);
      clearDeadline(p.pgid);
    } else if (groups.has(p.pgid)) {
      clearDeadline(p.pgid);
      deadlines.set(p.pgid, [setTimeout(() => fire(p.pgid, 'SIGTERM'), p.termInMs), setTimeout(() => fire(p.pgid, 'SIGKILL'), p.killInMs)]);
    }
  });
  // A read error on stdin is as good as EOF: the agent's end is unusable.
  process.stdin.on('error', () => rl.close());
  rl.once('close', () => {
    for (const pgid of [...deadlines.keys()]) clearDeadline(pgid);
    if (groups.size === 0) process.exit(0);
    void reapGroups(groups, graceMs, say).finally(() => process.exit(0));
  });
}

// Run only as the entry point (tests import this module for its parts; agents do not import it: reaper-command.ts).
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) main();
