/**
 * Per-attempt work directories.
 *
 * Contract: every attempt gets a fresh directory
 * `<parent>/<taskId>-<attempt>-<random>` that nothing else uses, with an
 * `out` directory inside (exported as DROVER_OUTPUT_DIR). The runner removes
 * the whole directory once the attempt has ended, so nothing a task leaves
 * behind outlives it or leaks into a later attempt of the same task.
 */
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

export interface WorkDir {
  /** The attempt's cwd. */
  readonly dir: string;
  /** DROVER_OUTPUT_DIR. */
  readonly outDir: string;
}

/** Keeps a hostile or odd task id from escaping `parent` or producing odd names. */
function safeName(s: string): string {
  return s.replace(/[^A-Za-z0-9_.-]/g, '_').replace(/^\.+/, '_').slice(0, 100) || '_';
}

export async function createWorkDir(parent: string, taskId: string, attempt: number): Promise<WorkDir> {
  await mkdir(parent, { recursive: true });
  // mkdtemp appends six random characters and fails rather than reuse a name.
  const dir = await mkdtemp(path.join(parent, `${safeName(taskId)}-${attempt}-`));
  const outDir = path.join(dir, 'out');
  await mkdir(outDir);
  return { dir, outDir };
}

/**
 * Writes an inline script into the work dir, executable by its owner only
 * (0700: the script may hold secrets; others on the machine must not read it).
 */
export async function writeScript(workDir: WorkDir, script: string): Promise<string> {
  const file = path.join(workDir.dir, '.drover-script');
  await writeFile(file, script, { mode: 0o700 });
  // writeFile's mode is filtered by the umask; chmod makes it exact.
  await chmod(file, 0o700);
  return file;
}

export async function removeWorkDir(workDir: WorkDir): Promise<void> {
  await rm(workDir.dir, { recursive: true, force: true, maxRetries: 3 });
}
