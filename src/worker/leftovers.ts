/**
 * Attempts left behind by an agent that died without cleaning up (kill -9,
 * OOM, power cut of the agent alone). Its reaper (reaper.ts) normally stops
 * them at once; if the reaper died too, their processes would run on as
 * orphans while the server gives the work to someone else, so the next agent
 * started on the same work directory stops them before taking work.
 *
 * Contract: the runner records each running attempt's process group in
 * `<workDir>/<attempt dir>.pgid` ("<pgid> <taskId>"), removed with the work
 * dir. A recorded group is killed only if some process in it still carries
 * that task's DROVER_TASK_ID in its environment (process-group.ts
 * taskMembers), so a pgid that was reused by an unrelated program is never touched.
 */
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { signalTaskGroup } from './process-group.js';

export const GROUP_FILE_SUFFIX = '.pgid';

export async function recordGroup(workDirPath: string, pgid: number, taskId: string): Promise<void> {
  await writeFile(`${workDirPath}${GROUP_FILE_SUFFIX}`, `${pgid} ${taskId}\n`, { mode: 0o600 });
}

export async function forgetGroup(workDirPath: string): Promise<void> {
  await rm(`${workDirPath}${GROUP_FILE_SUFFIX}`, { force: true });
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
      const pids = await signalTaskGroup(pgid, taskId, 'SIGKILL');
      if (pids.length > 0) stopped.push({ pgid, taskId, pids });
    }
    await rm(dir, { recursive: true, force: true, maxRetries: 3 }).catch(() => {});
    await rm(file, { force: true }).catch(() => {});
  }
  return stopped;
}
