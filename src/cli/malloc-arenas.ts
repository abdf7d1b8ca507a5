/**
 * At most MALLOC_ARENAS glibc malloc arenas in `drover server` and `drover
 * dev` (the processes holding the server), unless the environment already
 * says how many (MALLOC_ARENA_MAX or a glibc.malloc.arena_max tunable: the
 * operator's choice wins).
 *
 * Why: glibc gives each thread that allocates its own arena, up to 8 per
 * core, and memory freed in an arena stays there for that arena's next
 * allocations. A Node process has a dozen threads that allocate (V8's
 * platform workers for GC and compilation, libuv's pool), so what their
 * bursts freed sits in many arenas at once. Measured (`npm run bench --
 * --sections=memory`, a server after 100,000 noop tasks, three runs each,
 * alternating, the variable set in the bench's environment): VmRSS at the end
 * of the drain 97.2-99.7 MB with 2 arenas against 101.5-106.7 MB without,
 * 84.8-87.3 MB against 87.8-92.3 MB idle 30 s later; the drain's rate the
 * same. With this module (the re-execution below), against the build before
 * it, the same way: 96.2-99.6 MB against 102.0-105.0 MB at the drain's end,
 * 82.9-85.1 MB against 89.7-102.3 MB idle. An agent with 10 tasks running:
 * 61.8-65.1 MB against 62.1-62.4 MB, no difference, so `drover worker` is
 * left alone (its threads allocate little).
 *
 * How: glibc reads MALLOC_ARENA_MAX when malloc initialises, before any of
 * our code runs, and mallopt(M_ARENA_MAX) later binds only threads that have
 * no arena yet (V8's workers got theirs in the GCs of start-up). So the
 * command re-executes itself once with the variable set: execve(2) through
 * the drover_memory addon, same pid, same arguments and Node flags, same
 * stdio (a supervisor or a test harness sees one process). The second start
 * finds the variable set and goes on. The cost is about one more Node
 * start-up: `drover server` until it listens took 936-969 ms (medians of
 * 20 starts) instead of 834 ms with the variable already set; re-executing
 * in the command's action instead, after the CLI's modules loaded, 997 ms
 * (hence limitMallocArenasEarly). Where execve is not used, mallopt gets what
 * it can:
 *  - the process has an IPC channel (NODE_CHANNEL_FD: the parent that forked
 *    it talks to it over that descriptor, which must not be handed to a
 *    second Node start);
 *  - execve failed;
 *  - the addon is not built or not on glibc: nothing at all.
 */
import { loadAddon } from '../worker/package-root.js';

export const MALLOC_ARENAS = 2;

/** What limitMallocArenas did when it returns (after a successful execve it does not). */
export type ArenaLimit = 'environment' | 'mallopt' | 'none';

/** The environment already bounds the arenas (the user's or our own re-execution's). */
export function arenaLimitInEnv(env: NodeJS.ProcessEnv): boolean {
  return (env.MALLOC_ARENA_MAX ?? '') !== '' || /(^|:)glibc\.malloc\.arena_max=/.test(env.GLIBC_TUNABLES ?? '');
}

/**
 * The execve arguments that restart this process as it was started, with
 * MALLOC_ARENA_MAX set: Node's flags (`execArgv`) and the script and its
 * arguments (`argv` after argv[0]) in order; argv[0] as the process was given it.
 */
export function reexecArgs(
  p: Pick<NodeJS.Process, 'execPath' | 'argv0' | 'execArgv' | 'argv'>,
  env: NodeJS.ProcessEnv,
): { file: string; argv: string[]; envp: string[] } {
  const envp = Object.entries(env)
    .filter((e): e is [string, string] => e[1] !== undefined && e[0] !== 'MALLOC_ARENA_MAX')
    .map(([k, v]) => `${k}=${v}`);
  envp.push(`MALLOC_ARENA_MAX=${MALLOC_ARENAS}`);
  return { file: p.execPath, argv: [p.argv0, ...p.execArgv, ...p.argv.slice(1)], envp };
}

/** The part of the drover_memory addon's contract (native/memory.c) used here. */
export interface ArenaBinding {
  supported: boolean;
  arenaMax(n: number): boolean;
  /** Does not return when it works; throws when execve fails. */
  exec(file: string, argv: string[], envp: string[]): void;
}

/** The addon, or null where it is not built, does not load, or is not on glibc. */
export function loadArenaBinding(): ArenaBinding | null {
  const r = loadAddon<ArenaBinding>('drover_memory', 'the malloc arena limit');
  return 'binding' in r && r.binding.supported ? r.binding : null;
}

export interface LimitOptions {
  /** Default loadArenaBinding(); null: do nothing. */
  binding?: ArenaBinding | null;
  /** Default process.env. */
  env?: NodeJS.ProcessEnv;
}

/**
 * Call in a command's action before it starts anything (it may run again
 * from the start): when the execve works this call does not return, the
 * process starts again with the variable set. Otherwise returns what it did.
 */
export function limitMallocArenas(opts: LimitOptions = {}): ArenaLimit {
  const env = opts.env ?? process.env;
  if (arenaLimitInEnv(env)) return 'environment';
  const binding = opts.binding === undefined ? loadArenaBinding() : opts.binding;
  if (!binding) return 'none';
  if (env.NODE_CHANNEL_FD === undefined) {
    const { file, argv, envp } = reexecArgs(process, env);
    try {
      binding.exec(file, argv, envp);
    } catch {
      // execve failed (the binary moved, E2BIG): go on in this process, with mallopt below.
    }
  }
  return binding.arenaMax(MALLOC_ARENAS) ? 'mallopt' : 'none';
}

/** The commands whose process limits its arenas (not the worker: no difference measured, see above). */
const LIMITED_COMMANDS = new Set(['server', 'dev']);

/**
 * At CLI start, before the CLI's own modules load: limitMallocArenas() when
 * the first argument names a command that limits its arenas, so that a
 * re-execution costs one bare Node start-up rather than a second load of the
 * CLI. Other spellings (a global option first) get it in the command's action.
 */
export function limitMallocArenasEarly(args: readonly string[], opts: LimitOptions = {}): ArenaLimit | null {
  return LIMITED_COMMANDS.has(args[0] ?? '') ? limitMallocArenas(opts) : null;
}
