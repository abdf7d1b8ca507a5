/**
 * Attempts left behind by an agent that died without cleaning up (kill -9,
 * OOM, power cut of the agent alone). Its processes would run on as orphans
 * while the server gives the work to someone else; the next agent started on
 * the same work directory stops them before taking work.
 *
 * Contract: the runner records each running attempt's process group in
 * `<workDir>/<attempt dir>.pgid` ("<pgid> <taskId>"), removed with the work
 * dir. A recorded group is killed only if some process in it still carries
 * that task's DROVER_TASK_ID in its environment (Linux /proc), so a pgid that
 * was reused by an unrelated program is never touched.
 */
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { signalGroup } from './process-group.js';

export const GROUP_FILE_SUFFIX = '.pgid';

export async function recordGroup(workDirPath: string, pgid: number, taskId: string): Promise<void> {
  await writeFile(`${workDirPath}${GROUP_FILE_SUFFIX}`, `${pgid} ${taskId}\n`, { mode: 0o600 });
}

export async function forgetGroup(workDirPath: string): Promise<void> {
  await rm(`${workDirPath}${GROUP_FILE_SUFFIX}`, { force: true });
}

/** Pids of the processes whose process group is `pgid` and whose environment names `taskId`. */
async function membersOf(pgid: number, taskId: string): Promise<number[]> {
  let entries: string[];
  try {
    entries = await readdir('/proc');
  } catch {
    return []; // no /proc: cannot prove ownership, so touch nothing
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
 * Kills the process groups of attempts a previous agent left running in
 * `workDir` and removes their directories. Returns what it stopped.
 */
export async function reapLeftovers(workDir: string): Promise<Array<{ pgid: number; taskId: string; pids: number[] }>> {
  let names: string[];
  try {
    names = await readdir(workDir);
  } catch {
    return [];
  }
  const stopped: Array<{ pgid: number; taskId: string; pids: number[] }> = [];
  for (const name of names) {
    if (!name.endsWith(GROUP_FILE_SUFFIX)) continue;
    const file = path.join(workDir, name);
    const dir = file.slice(0, -GROUP_FILE_SUFFIX.length);
    const [pgidText, taskId] = (await readFile(file, 'utf8').catch(() => '')).trim().split(' ');
    const pgid = Number(pgidText);
    if (Number.isSafeInteger(pgid) && pgid > 1 && taskId) {
      const pids = await membersOf(pgid, taskId);
      if (pids.length > 0) {
        signalGroup(pgid, 'SIGKILL');
        stopped.push({ pgid, taskId, pids });
      }
    }
    await rm(dir, { recursive: true, force: true, maxRetries: 3 }).catch(() => {});
    await rm(file, { force: true }).catch(() => {});
  }
  return stopped;
}
