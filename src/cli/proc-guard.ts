/**
 * Keeps the long-running commands' secrets out of the reach of the tasks
 * they run, which run as the same OS user:
 *
 * - guardProcFiles(): makes the process non-dumpable (native/proc-guard.c),
 *   so /proc/<pid>/environ (DROVER_TOKEN, DROVER_ADMIN_TOKEN, a database URL
 *   with its password), /mem and /fd are no longer readable by other
 *   processes of the user, and it cannot be ptrace-attached by them. Without
 *   the addon (not Linux, not built) nothing changes and the caller says so.
 * - hideArgvSecrets(): a secret given on the command line (`--token T`) is
 *   readable by every user through /proc/<pid>/cmdline (ps), whatever the
 *   above; the process title is rewritten with the value masked. Node's
 *   process.title setter overwrites the argv area on Linux (libuv), which is
 *   what /proc/<pid>/cmdline shows; the value itself is only in memory now.
 *
 * Neither keeps anything from a task that runs as root: a separate OS user for
 * tasks does that (README, Security model).
 */
import { loadAddon } from '../worker/package-root.js';
import { UsageError } from './usage-error.js';

/** The addon's contract (native/proc-guard.c). */
export interface GuardBinding {
  nondumpable(): boolean;
  dumpable(): number;
}

/** The addon, or the reason there is none. */
export function loadGuardBinding(): { binding: GuardBinding } | { reason: string } {
  return loadAddon<GuardBinding>('drover_guard', 'the /proc guard');
}

/**
 * Makes this process non-dumpable; null when done, else why not (for a
 * warning). Env DROVER_KEEP_DUMPABLE=1 leaves it dumpable: core dumps, a
 * debugger, or a test that reads /proc/<pid>/environ as the same user, at the
 * price of the above. Any other value is a usage error.
 */
export function guardProcFiles(env: Record<string, string | undefined> = process.env): string | null {
  const keep = env.DROVER_KEEP_DUMPABLE;
  if (keep !== undefined && keep !== '' && keep !== '1') throw new UsageError(`invalid DROVER_KEEP_DUMPABLE "${keep.slice(0, 40)}": expected 1 (or leave it unset)`);
  if (keep === '1') return 'DROVER_KEEP_DUMPABLE=1 keeps this process dumpable';
  const r = loadGuardBinding();
  if ('reason' in r) return r.reason;
  return r.binding.nondumpable() ? null : 'prctl(PR_SET_DUMPABLE, 0) failed';
}

/** The flags whose values are secrets. */
const SECRET_FLAGS = ['--token'];

/**
 * `argv` (process.argv without the node binary) with each secret flag's value
 * replaced by `***`, in both `--token T` and `--token=T` forms; null when
 * there is none to hide.
 */
export function maskArgvSecrets(argv: readonly string[]): string[] | null {
  let masked = false;
  const out = argv.map((a, i) => {
    const prev = argv[i - 1];
    if (prev !== undefined && SECRET_FLAGS.includes(prev)) {
      masked = true;
      return '***';
    }
    const eq = a.indexOf('=');
    if (eq > 0 && SECRET_FLAGS.includes(a.slice(0, eq))) {
      masked = true;
      return `${a.slice(0, eq)}=***`;
    }
    return a;
  });
  return masked ? out : null;
}

/** Rewrites the process title (what /proc/<pid>/cmdline and ps show) when argv holds a secret. */
export function hideArgvSecrets(argv: readonly string[] = process.argv.slice(1)): boolean {
  const masked = maskArgvSecrets(argv);
  if (!masked) return false;
  process.title = ['node', ...masked].join(' ');
  return true;
}
