/**
 * Attempts left behind by an agent that died without cleaning up (kill -9,
 * OOM, power cut of the agent alone). Its reaper (reaper.ts) normally stops
 * them at once; if the reaper died too, their processes would run on as
 * orphans while the server gives the work to someone else, so the next agent
 * started on the same work directory stops them before taking work.
 *
 * Contract: the record of a running attempt is its work directory itself
 * (`<workDir>/<taskId>-<attempt>-<random>`, or a spare made ahead,
 * `attempt-0-<random>`: work-dir.ts, spare-work-dirs.ts), which exists from
 * before the spawn until the attempt has ended; every process of the attempt
 * carries `DROVER_OUTPUT_DIR=<that dir>/out` in its environment (task-env.ts),
 * a path no other attempt ever had. At start, for each directory left in
 * `workDir` that has that shape and an `out` directory, the groups of the
 * processes that carry its marker get SIGKILL, then the directory is removed. A process is thus killed only when it proves
 * it belongs to that very attempt, so a reused pgid or pid is never touched.
 * One scan of /proc serves all the directories.
 *
 * Why not a record file per attempt (as before: `<attempt dir>.pgid` with
 * "<pgid> <taskId>", checked against DROVER_TASK_ID): writing and removing it
 * were two of the six filesystem calls per attempt, ~0.3 ms of syscalls on
 * this machine's disk plus two threadpool round trips (measured: 2,000
 * `/bin/true` through one agent, `node --cpu-prof`; 6 sync metadata calls on
 * this ext4 took 0.94 ms per attempt). Records an older agent left are still
 * honoured the old way.
 */
import { readdir, readFile, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { signalGroup, signalTaskGroup } from './process-group.js';

/** The record file of older agents (see above). */
export const GROUP_FILE_SUFFIX = '.pgid';

/** `<safe task id>-<attempt>-<6 random characters>` (work-dir.ts). */
const ATTEMPT_DIR = /^[A-Za-z0-9_.-]{1,100}-\d+-[A-Za-z0-9]{6}$/;

export interface StoppedAttempt {
  pgid: number;
  /** The DROVER_TASK_ID its processes carried ('' if none). */
  taskId: string;
  pids: number[];
}

/** Processes whose environment has DROVER_OUTPUT_DIR under `workDir`: marker value → members (Linux /proc). */
async function markedProcesses(workDir: string): Promise<Map<string, Array<{ pid: number; pgid: number; taskId: string }>>> {
  const found = new Map<string, Array<{ pid: number; pgid: number; taskId: string }>>();
  let entries: string[];
  try {
    entries = await readdir('/proc');
  } catch {
    return found; // no /proc: nothing can be proven, nothing is killed
  }
  const prefix = `DROVER_OUTPUT_DIR=${workDir}${path.sep}`;
  for (const e of entries) {
    if (!/^\d+$/.test(e) || Number(e) === process.pid) continue;
    try {
      const env = (await readFile(`/proc/${e}/environ`, 'latin1')).split('\0');
      const marker = env.find((v) => v.startsWith(prefix));
      if (!marker) continue;
      // Field 5 of /proc/PID/stat is the process group; the name (field 2) may hold spaces, so split after ')'.
      const stat = await readFile(`/proc/${e}/stat`, 'utf8');
      const pgid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
      const taskId = (env.find((v) => v.startsWith('DROVER_TASK_ID=')) ?? '').slice('DROVER_TASK_ID='.length);
      const key = marker.slice('DROVER_OUTPUT_DIR='.length);
      found.set(key, [...(found.get(key) ?? []), { pid: Number(e), pgid, taskId }]);
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return found;
}

/**
 * Kills the process groups of attempts a previous agent left running in
 * `workDir` and removes their directories. Returns what it stopped. Only for
 * an agent's start: every directory there is a leftover then.
 */
export async function reapLeftovers(workDir: string): Promise<StoppedAttempt[]> {
  let names: string[];
  try {
    names = await readdir(workDir);
  } catch {
    return [];
  }
  const stopped: StoppedAttempt[] = [];
  // Older agents' records: "<pgid> <taskId>", proven by DROVER_TASK_ID.
  for (const name of names) {
    if (!name.endsWith(GROUP_FILE_SUFFIX)) continue;
    const file = path.join(workDir, name);
    const [pgidText, taskId] = (await readFile(file, 'utf8').catch(() => '')).trim().split(' ');
    const pgid = Number(pgidText);
    if (Number.isSafeInteger(pgid) && pgid > 1 && taskId) {
      const pids = await signalTaskGroup(pgid, taskId, 'SIGKILL');
      if (pids.length > 0) stopped.push({ pgid, taskId, pids });
    }
    await rm(file.slice(0, -GROUP_FILE_SUFFIX.length), { recursive: true, force: true, maxRetries: 3 }).catch(() => {});
    await rm(file, { force: true }).catch(() => {});
  }
  // Only what the runner makes: a name of work-dir.ts's shape with an `out` directory inside. Anything else an
  // operator keeps in the work dir is left alone.
  const dirs: string[] = [];
  for (const name of names) {
    if (ATTEMPT_DIR.test(name) && (await stat(path.join(workDir, name, 'out')).then((s) => s.isDirectory(), () => false))) dirs.push(name);
  }
  if (dirs.length === 0) return stopped;
  const marked = await markedProcesses(path.resolve(workDir));
  for (const name of dirs) {
    const dir = path.join(path.resolve(workDir), name);
    const members = marked.get(path.join(dir, 'out')) ?? [];
    for (const pgid of new Set(members.map((m) => m.pgid))) {
      if (!Number.isSafeInteger(pgid) || pgid <= 1) continue;
      const inGroup = members.filter((m) => m.pgid === pgid);
      try {
        signalGroup(pgid, 'SIGKILL');
        stopped.push({ pgid, taskId: inGroup[0]!.taskId, pids: inGroup.map((m) => m.pid) });
      } catch {
        // EPERM: not ours to stop
      }
    }
    await rm(dir, { recursive: true, force: true, maxRetries: 3 }).catch(() => {});
  }
  return stopped;
}
