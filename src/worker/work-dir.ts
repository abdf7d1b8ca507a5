/**
 * Per-attempt work directories.
 *
 * Contract: every attempt gets a fresh directory
 * `<parent>/<taskId>-<attempt>-<random>` that nothing else uses, with an
 * `out` directory inside (exported as DROVER_OUTPUT_DIR). The runner removes
 * the whole directory once the attempt has ended, so nothing a task leaves
 * behind outlives it or leaks into a later attempt of the same task.
 */
import { chmod, mkdir, mkdtemp, rm, rmdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { forgetGroup } from './leftovers.js';

/** Where an inline script is written inside the work dir. */
const SCRIPT_FILE = '.drover-script';

export interface WorkDir {
  /** The attempt's cwd. */
  readonly dir: string;
  /** DROVER_OUTPUT_DIR. */
  readonly outDir: string;
  /** Set by writeScript. */
  script?: string;
}

/** Keeps a hostile or odd task id from escaping `parent` or producing odd names. */
function safeName(s: string): string {
  return s.replace(/[^A-Za-z0-9_.-]/g, '_').replace(/^\.+/, '_').slice(0, 100) || '_';
}

export async function createWorkDir(parent: string, taskId: string, attempt: number): Promise<WorkDir> {
  const prefix = path.join(parent, `${safeName(taskId)}-${attempt}-`);
  // mkdtemp appends six random characters and fails rather than reuse a name.
  // The parent normally exists (the agent makes it at start); make it only if
  // it vanished, to keep the common path at two syscalls.
  const dir = await mkdtemp(prefix).catch(async (err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw err;
    await mkdir(parent, { recursive: true });
    return mkdtemp(prefix);
  });
  const outDir = path.join(dir, 'out');
  await mkdir(outDir);
  return { dir, outDir };
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
  await forgetGroup(workDir.dir);
  try {
    if (workDir.script) await rm(workDir.script, { force: true });
    await rmdir(workDir.outDir);
    await rmdir(workDir.dir);
    return;
  } catch {
    // Not empty (or already partly gone): fall back to the full removal.
  }
  await rm(workDir.dir, { recursive: true, force: true, maxRetries: 3 });
}
