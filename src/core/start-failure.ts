/**
 * What a person reads when an attempt's process could not be started: a pure
 * function of the errno name both spawners report (native/spawn.c through
 * worker/native-spawn.ts, and Node's child_process) and where the start was
 * tried, so the two spawners say the same thing. Such an attempt ends with
 * outcome `start_failed` (core/attempt-end.ts): no retry, the task fails.
 *
 * The messages answer the question a cron user has on a first run ("it is
 * right here, why not found?"): a relative path resolves in the directory the
 * attempt runs in, which is a fresh work directory unless the task has a cwd;
 * a bare name is looked up in the task's PATH, not the submitting shell's.
 */

export interface StartFailure {
  /** What was executed: argv[0] (the command, the interpreter, or the script file for a #! script). */
  file: string;
  /** errno name (ENOENT, EACCES...); null when the spawner gave none (e.g. a NUL byte). */
  code: string | null;
  /** The spawner's own message, used when there is no code or it is not one this file knows. */
  detail: string;
  /** The directory the process was to start in. */
  cwd: string;
  /** True when `cwd` is the attempt's fresh work directory (the task has no cwd). */
  inWorkDir: boolean;
  /** The PATH of the task's environment (what a bare name is looked up in). */
  path: string;
  /** Set when `file` is the task's own script run through its #! line: that line. */
  shebang?: string;
}

/** A relative path with a slash (`./x`, `bin/x`, `../x`): resolved against the process's cwd. */
function isRelativePath(file: string): boolean {
  return file.includes('/') && !file.startsWith('/');
}

function notFound(f: StartFailure): string {
  if (f.shebang !== undefined) return `the interpreter named on its first line (${f.shebang}) was not found`;
  if (!f.file.includes('/')) return `not found in PATH=${f.path}`;
  if (isRelativePath(f.file)) {
    return f.inWorkDir
      ? `not found in the work directory ${f.cwd} (a relative path resolves there; use an absolute path or --cwd)`
      : `not found in ${f.cwd} (the task's cwd, where a relative path resolves)`;
  }
  return 'no such file';
}

/** One line: `cannot start <file>: <why>`. */
export function startFailureMessage(f: StartFailure): string {
  const what = f.shebang !== undefined ? 'the script' : f.file;
  let why: string;
  switch (f.code) {
    case 'ENOENT':
      why = notFound(f);
      break;
    case 'EACCES':
      why = f.file.includes('/')
        ? 'permission denied (the file is not executable, or a directory on its path is not searchable, by the worker\'s user)'
        : `permission denied (found in PATH=${f.path}, but not executable by the worker's user)`;
      break;
    case 'ENOEXEC':
      why = 'not an executable format (a script needs a #! first line, or run it through an interpreter)';
      break;
    case 'ENOTDIR':
      why = 'a component of its path is not a directory';
      break;
    case 'EISDIR':
      why = 'it is a directory';
      break;
    case 'ELOOP':
      why = 'too many symbolic links on its path';
      break;
    case 'ENAMETOOLONG':
      why = 'its path is too long';
      break;
    case 'E2BIG':
      why = 'the arguments and environment are too large';
      break;
    case 'ETXTBSY':
      why = 'the file is open for writing (text file busy)';
      break;
    default:
      why = f.code ? `${f.code} (${f.detail})` : f.detail;
  }
  return `cannot start ${what}: ${why}`;
}

/** Why the task's cwd cannot be used (from a stat of it), naming the directory and the worker. */
export function cwdProblemMessage(cwd: string, workerId: string, problem: 'missing' | 'not_directory' | { code: string }): string {
  const why = problem === 'missing' ? 'does not exist' : problem === 'not_directory' ? 'is not a directory' : `cannot be used (${problem.code})`;
  return `cannot start: the task's cwd ${cwd} ${why} on worker ${workerId}`;
}
