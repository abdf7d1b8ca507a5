/**
 * Per-attempt work directories.
 *
 * Contract: every attempt gets a fresh directory
 * `<parent>/<taskId>-<attempt>-<random>` that nothing else uses (or one the
 * agent made ahead, `<parent>/attempt-0-<random>`: spare-work-dirs.ts), with an
 * `out` directory inside (exported as DROVER_OUTPUT_DIR), and the path of its
 * outputs file, `drover-output.env` (exported as DROVER_OUTPUT; not created:
 * the task writes it if it has outputs, core/task-outputs.ts). The runner removes
 * the whole directory once the attempt has ended, so nothing a task leaves
 * behind outlives it or leaks into a later attempt of the same task. The
 * directory is also the attempt's record for leftovers.ts while it runs.
 */
import { chmod, mkdir, mkdtemp, rm, rmdir, unlink, writeFile } from 'node:fs/promises';
import { mkdirSync, mkdtempSync, rmdirSync, statfsSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import { OUTPUT_FILE_NAME } from '../core/task-outputs.js';
import { REMOVE_OUTPUT, REMOVE_SCRIPT, workDirBatcher } from './work-dir-native.js';

/** Where an inline script is written inside the work dir. */
const SCRIPT_FILE = '.drover-script';

export interface WorkDir {
  /** The attempt's cwd. */
  readonly dir: string;
  /** DROVER_OUTPUT_DIR. */
  readonly outDir: string;
  /** DROVER_OUTPUT: `<dir>/drover-output.env`, absolute; does not exist when the attempt starts. */
  readonly outputFile: string;
  /** Set by the runner when it found the outputs file (its removal is then part of the fast path). */
  outputFileSeen?: boolean;
  /** Set by writeScript. */
  script?: string;
}

/** Keeps a hostile or odd task id from escaping `parent` or producing odd names. */
function safeName(s: string): string {
  return s.replace(/[^A-Za-z0-9_.-]/g, '_').replace(/^\.+/, '_').slice(0, 100) || '_';
}

/**
 * Whether `parent` is on a filesystem that lives in memory (tmpfs, ramfs):
 * there the directory calls below are made synchronously, elsewhere on
 * libuv's threadpool. Measured on this 2-core machine (2,000 attempts,
 * `node --cpu-prof`): on tmpfs a mkdir/rmdir takes ~9 us, but handing it to
 * the threadpool cost the main thread 60-80 us each (waking a pool thread),
 * four times per attempt; on the ext4 disk, shared with fsyncing databases,
 * the same calls take 150-300 us and can wait behind a journal commit, so
 * they must not block the event loop (made synchronously there, 1,000
 * attempts through the runner ran at 280-297/s against 490-558/s async).
 * Decided once per parent (statfs); an unknown answer means disk. On a disk,
 * where the addon is built, the calls of many makings and removals share one
 * threadpool job (work-dir-native.ts); else each call is a job of its own.
 */
const inMemory = new Map<string, boolean>();
const MEMORY_FS = new Set([0x01021994 /* TMPFS_MAGIC */, 0x858458f6 /* RAMFS_MAGIC */]);

export function onMemoryFs(parent: string): boolean {
  let known = inMemory.get(parent);
  if (known === undefined) {
    try {
      known = MEMORY_FS.has(statfsSync(parent).type);
    } catch {
      return false; // not there yet (created below): ask again next time
    }
    inMemory.set(parent, known);
  }
  return known;
}

export async function createWorkDir(parent: string, taskId: string, attempt: number): Promise<WorkDir> {
  const prefix = path.join(parent, `${safeName(taskId)}-${attempt}-`);
  // mkdtemp appends six random characters and fails rather than reuse a name.
  // The parent normally exists (the agent makes it at start); make it only if
  // it vanished, to keep the common path at two syscalls.
  if (onMemoryFs(parent)) {
    try {
      const dir = mkdtempSync(prefix);
      mkdirSync(path.join(dir, 'out'));
      return workDirAt(dir);
    } catch {
      // ENOENT (the parent vanished) and the rest: the general path below says what went wrong
    }
  } else {
    const made = await makeNative(prefix, 1, 'now');
    if (made.length === 1) return made[0]!;
  }
  const dir = await mkdtemp(prefix).catch(async (err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw err;
    await mkdir(parent, { recursive: true });
    return mkdtemp(prefix);
  });
  await mkdir(path.join(dir, 'out'));
  return workDirAt(dir);
}

/**
 * Up to `count` work dirs named like createWorkDir's, for spares made ahead:
 * on a disk with the addon, in one threadpool job that may wait a few
 * milliseconds for others to join it. Resolves with those made, at least one;
 * when none could be made, rejects with createWorkDir's error, which names
 * the path.
 */
export async function createWorkDirs(parent: string, name: string, attempt: number, count: number, when: 'now' | 'soon' = 'soon'): Promise<WorkDir[]> {
  if (!onMemoryFs(parent) && workDirBatcher()) {
    const made = await makeNative(path.join(parent, `${safeName(name)}-${attempt}-`), count, when);
    return made.length > 0 ? made : [await createWorkDir(parent, name, attempt)];
  }
  const settled = await Promise.allSettled(Array.from({ length: count }, () => createWorkDir(parent, name, attempt)));
  const made = settled.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  if (made.length === 0) throw (settled[0] as PromiseRejectedResult).reason;
  return made;
}

/** The WorkDir of `dir`, whose `out` exists. */
function workDirAt(dir: string): WorkDir {
  return { dir, outDir: path.join(dir, 'out'), outputFile: path.join(dir, OUTPUT_FILE_NAME) };
}

/** The addon's making (none where it is not built or failed: Node's fs then makes it, and its errors name the path). */
async function makeNative(prefix: string, count: number, when: 'now' | 'soon'): Promise<WorkDir[]> {
  const b = workDirBatcher();
  if (!b) return [];
  const r = await b.make(prefix, count, when).catch(() => ({ dirs: [] }));
  return r.dirs.map((dir) => workDirAt(dir));
}

/**
 * Writes an inline script into the work dir, executable by its owner only
 * (0700: the script may hold secrets; others on the machine must not read it).
 */
export async function writeScript(workDir: WorkDir, script: string): Promise<string> {
  const file = path.join(workDir.dir, SCRIPT_FILE);
  await writeFile(file, script, { mode: 0o700 });
  // writeFile's mode is filtered by the umask; chmod makes it exact.
  await chmod(file, 0o700);
  workDir.script = file;
  return file;
}

export async function removeWorkDir(workDir: WorkDir): Promise<void> {
  // Fast path for the common case of a task that left nothing behind: remove
  // the two empty directories (and the script) directly, instead of a
  // recursive walk that lstats and lists every level.
  try {
    const b = workDirBatcher();
    if (onMemoryFs(path.dirname(workDir.dir))) {
      if (workDir.script) unlinkSync(workDir.script);
      if (workDir.outputFileSeen) unlinkSync(workDir.outputFile);
      rmdirSync(workDir.outDir);
      rmdirSync(workDir.dir);
    } else if (b) {
      const flags = (workDir.script ? REMOVE_SCRIPT : 0) | (workDir.outputFileSeen ? REMOVE_OUTPUT : 0);
      if (!(await b.remove(workDir.dir, flags))) throw new Error('not empty');
    } else {
      if (workDir.script) await unlink(workDir.script);
      if (workDir.outputFileSeen) await unlink(workDir.outputFile);
      await rmdir(workDir.outDir);
      await rmdir(workDir.dir);
    }
    return;
  } catch {
    // Not empty (or already partly gone): fall back to the full removal.
  }
  await rm(workDir.dir, { recursive: true, force: true, maxRetries: 3 });
}
