/**
 * Signals to a whole process group, the test of whether it is gone, and the
 * check that a recorded group still belongs to a given task.
 *
 * A task runs as the leader of its own group (spawned detached: pgid = pid),
 * so `process.kill(-pgid, sig)` reaches every descendant that did not leave
 * the group on purpose (setsid/setpgid). Linux does not hand out a pid while
 * it is still some group's id, so a pgid cannot be recycled to an unrelated
 * group while any member of ours remains.
 */
import { readdir, readFile } from 'node:fs/promises';

export function signalGroup(pgid: number, signal: NodeJS.Signals): 'sent' | 'gone' {
  try {
    process.kill(-pgid, signal);
    return 'sent';
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return 'gone';
    throw err;
  }
}

/**
 * True while any member of the group exists, zombies included: a member is
 * gone only once it has been reaped (by us for the leader, by init or a
 * subreaper for orphans). EPERM means a member exists that we may not signal.
 */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

/**
 * Pids of the processes whose process group is `pgid` and whose environment
 * holds `DROVER_TASK_ID=<taskId>` (Linux /proc). Used by whoever kills a group
 * recorded earlier by someone else (leftovers.ts, reaper.ts): a group is
 * theirs to kill only while a member proves it runs that task, so a pgid
 * reused by an unrelated program is never touched. No /proc: nothing can be
 * proven, so the answer is empty.
 */
export async function taskMembers(pgid: number, taskId: string): Promise<number[]> {
  let entries: string[];
  try {
    entries = await readdir('/proc');
  } catch {
    return [];
  }
  const marker = `DROVER_TASK_ID=${taskId}`;
  const found: number[] = [];
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    try {
      // Field 5 of /proc/PID/stat is the process group; the name (field 2) may hold spaces, so split after ')'.
      const stat = await readFile(`/proc/${e}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[2]) !== pgid) continue;
      const env = await readFile(`/proc/${e}/environ`, 'latin1');
      if (env.split('\0').includes(marker)) found.push(Number(e));
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return found;
}

/**
 * Sends `signal` to the group only if it still runs `taskId` (taskMembers);
 * returns the members found (empty: nothing was sent).
 */
export async function signalTaskGroup(pgid: number, taskId: string, signal: NodeJS.Signals): Promise<number[]> {
  const pids = await taskMembers(pgid, taskId);
  if (pids.length > 0) signalGroup(pgid, signal);
  return pids;
}
