/**
 * How the process runner starts a task's process: the native spawner
 * (native/spawn.c, posix_spawn + pidfd) when it is built and loads, else
 * Node's child_process (native-spawn-fallback.ts). Both give the child the
 * same things (process-runner.ts's header): a new session and process group
 * (pgid = pid), stdin /dev/null, stdout/stderr pipes, cwd = the work dir,
 * exactly the env given (PATH lookup in that env's PATH), every signal at its
 * default action with an empty mask, no other fd of the agent.
 *
 * Why an addon. Measured on this machine (2 cores shared with other jobs,
 * load average 5-17, its speed drifting several-fold within minutes), each
 * line one run of `node dist/bench/spawn-probe.js 2000 8` (2,000 /bin/true,
 * 8 at a time; bench/spawn-probe.ts; from 14:54 on, xargs is run again next
 * to each Drover variant and the % is to that run), processes/s:
 *   run    xargs  child_process  addon   Drover on   Drover, work     Drover on
 *                 loop           loop    the addon   dir on tmpfs     child_process
 *   14:40  1216   1093           2847    537 (44%)   579 (48%)        -
 *   14:46   430    273           1394    327 (76%)   460 (107%)       163 (38%)
 *   14:48   576    255           1378    371 (81%)   220 (29%)        63 (19%)
 *   14:54   953    459           2165    445 (42%)   492 (56%)        175 (22%)
 *   14:57   511    301           2020    237 (76%)   282 (48%)        105 (31%)
 *   15:01   869    383           2150    383 (39%)   562 (67%)        204 (22%)
 * (the 14:57 and 15:01 runs include the tmpfs change in work-dir.ts). In
 * every run Drover on the addon starts 2-6 times as many processes as Drover
 * on child_process; against xargs it is 39-81 % with the work dir on this
 * disk, 29-67 % (107 % once) on tmpfs: below the 70 % goal when the machine
 * is quiet and xargs fast, above it when xargs is slowed by load.
 * child_process forks the whole agent (~1.3 ms of CPU per start in the
 * agent, issue 9); posix_spawn is clone(CLONE_VM|CLONE_VFORK): no page
 * tables copied. Its caller is suspended until the child's execve, 2 ms per
 * start on the busy machine (`node --cpu-prof` of the agent: 4.0 s of a
 * 10.2 s run of 2,000 attempts when it ran on the main thread), so the addon
 * starts processes on two threads of its own (except on an idle agent:
 * NativeStarts below); on libuv's threadpool the
 * spawns starved the work dirs' fs calls (runner alone, 1,000 attempts, 8 in
 * flight: 435-459/s with the default 4 pool threads, 652-765/s with 8;
 * 789-1110/s with the addon's own threads).
 * A lean spawner process (a small helper the agent talks to over a pipe)
 * would also avoid the big fork, but adds a process to supervise and
 * restart, a protocol, fd passing for the pipes (SCM_RIGHTS) and a round
 * trip through another process per start; the addon is one small C file
 * built at install like better-sqlite3, and the fallback keeps the agent
 * working where it does not build.
 * What remains of Drover's gap to xargs is outside the spawn: the server's
 * claim/end commits and the four directory calls per attempt (work-dir.ts;
 * 1.3 ms per attempt on this ext4 shared with fsyncing databases, 0.04 ms
 * on tmpfs).
 *
 * Install: package.json's `install` runs `node-gyp rebuild`, and a failed
 * build prints a warning instead of failing `npm install`: unlike
 * better-sqlite3, which the server cannot do without, the addon is an
 * optimisation with a complete fallback, so a machine without a compiler
 * still gets a working agent (it warns once, below, saying why).
 *
 * Selection: RunnerOptions.spawner, default 'auto' = the environment
 * variable DROVER_SPAWNER ('native' | 'node') if set, else native when it
 * loads. The reason the addon did not load is logged once at warn.
 */
import net from 'node:net';
import { constants as osConstants } from 'node:os';
import type { Readable } from 'node:stream';
import type { Logger } from './logger.js';
import { spawnWithNode } from './native-spawn-fallback.js';
import { loadAddon } from './package-root.js';

export type SpawnerChoice = 'auto' | 'native' | 'node';

export interface SpawnRequest {
  /** A path, or a name looked up in `env.PATH` (not the agent's PATH). */
  file: string;
  args: readonly string[];
  cwd: string;
  env: Readonly<Record<string, string>>;
}

export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /**
   * Present (true) only when the native spawner found the process group empty right after reaping the leader
   * (native/spawn.c onExit): nothing is left to signal, and the group's id may already be someone else's.
   * Absent: unknown (the Node spawner), or members remain.
   */
  groupGone?: true;
}

export interface SpawnedProcess {
  pid: number;
  stdout: Readable;
  stderr: Readable;
  /** Resolves once the process has exited and been reaped; never rejects. */
  exited: Promise<ProcessExit>;
}

/**
 * A spawner resolves with the running process, or with `{ error }` when
 * nothing was started (message like Node's: "spawn <file> ENOENT"). It never
 * rejects: bad arguments (a NUL byte) are an `{ error }` too.
 */
export type Spawner = (req: SpawnRequest) => Promise<SpawnedProcess | SpawnFailure>;

/**
 * Nothing was started. `code`: the errno name (ENOENT, EACCES, ENOEXEC...), the
 * same from both spawners, or null (invalid input such as a NUL byte); the runner
 * turns it into a message with core/start-failure.ts.
 */
export interface SpawnFailure {
  error: string;
  code: string | null;
}

/** The addon's one function (native/spawn.c states the contract). */
export interface NativeBinding {
  spawn(
    file: string,
    argv: string[],
    envp: string[],
    cwd: string,
    onSpawn: (errno: number, pid: number, stdoutFd: number, stderrFd: number) => void,
    onExit: (code: number, signal: number, groupGone: boolean) => void,
    inline?: boolean,
  ): void;
}

let loaded: { binding: NativeBinding } | { reason: string } | undefined;
let warned = false;

/** Loads the addon once: from build/Release of the package root (the nearest parent with a package.json). */
export function loadNativeSpawn(): { binding: NativeBinding } | { reason: string } {
  loaded ??= loadAddon<NativeBinding>('drover_spawn', 'the native spawner');
  return loaded;
}

/**
 * The spawner for `choice`. 'native' when the addon cannot load is an error
 * (a test or an operator asked for it explicitly); 'auto' falls back to
 * Node's child_process and warns once with the reason.
 */
export function pickSpawner(choice: SpawnerChoice = 'auto', log?: Logger, starts: NativeStarts = 'idle'): Spawner {
  return chooseSpawner(choice, process.env.DROVER_SPAWNER, () => loadNativeSpawn(), log, starts);
}

/** pickSpawner's decision, with its inputs given (tests): `fromEnv` is DROVER_SPAWNER. */
export function chooseSpawner(
  choice: SpawnerChoice,
  fromEnv: string | undefined,
  load: () => { binding: NativeBinding } | { reason: string },
  log?: Logger,
  starts: NativeStarts = 'idle',
): Spawner {
  let want = choice;
  if (want === 'auto' && (fromEnv === 'native' || fromEnv === 'node')) want = fromEnv;
  if (want === 'node') return spawnWithNode;
  const n = load();
  if ('binding' in n) return (req) => spawnNative(n.binding, req, starts);
  if (want === 'native') throw new Error(`native spawner requested but unavailable: ${n.reason}`);
  if (!warned && log) {
    warned = true;
    log.warn({ reason: n.reason }, 'native spawner unavailable; starting processes with child_process (about 1.3 ms of CPU more per start)');
  }
  return spawnWithNode;
}

const signalNames = new Map<number, NodeJS.Signals>(Object.entries(osConstants.signals).map(([name, no]) => [no, name as NodeJS.Signals]));
const errnoNames = new Map<number, string>(Object.entries(osConstants.errno).map(([name, no]) => [no, name]));

/**
 * Where the addon runs a start (native/spawn.c, `inline`):
 *  - 'idle' (the agent's): on the calling thread, the agent's main thread,
 *    when no process started through this module is starting or running;
 *    else on the addon's spawner threads.
 *  - 'threads': always on the spawner threads (tests, for that path).
 *
 * Why 'idle'. A start on the spawner threads costs two hand-offs between
 * threads (the request to a spawner thread, its answer back to the event
 * loop), and on an idle agent each is a wake-up of a sleeping thread. On the
 * main thread the agent is suspended for the start instead (posix_spawn
 * returns at the child's execve), which is why busy agents keep the threads;
 * an agent with nothing running has nothing else for its loop to do then.
 * Measured (2026-12-05, a SQLite server and a 10-slot agent, 150 submits of
 * `true` 20 ms apart, the agent's clock from the call into the addon to
 * onSpawn; two runs each, alternating with the build before): 1.02 and 1.25
 * ms at p50, 2.67 and 2.85 ms at p90 on the threads; 0.78 and 0.70 ms at
 * p50, 0.97 and 0.91 ms at p90 inline. `npm run bench -- --sections=latency`,
 * two pairs alternating with the build before (DROVER_BIN), 02:23-02:28 UTC:
 * the assignment → process started part, p50, 1.5 and 1.6 → 1.1 and 1.1 ms
 * on SQLite, 3.4 and 2.0 → 1.9 and 1.3 ms on PostgreSQL. Busy agents
 * (process starts, 8 at a time) mostly start on the threads: one of their
 * processes is usually running. With `/bin/true` in a fast hour for fork
 * their count does fall to 0 between starts at times (a CPU profile showed
 * inline starts); forcing the threads there (2,000 `/bin/true`, one
 * 8-slot agent, three pairs alternating, 2026-12-05 about 04:20 UTC) gave
 * 818, 755 and 767/s against 751, 686 and 808/s as is: nothing the spread
 * can tell apart.
 */
export type NativeStarts = 'idle' | 'threads';

/** Processes started through this module (any spawner made by it) that are starting or not yet reaped. */
let live = 0;

/** How many processes of the native spawner are starting or not yet reaped (tests). */
export function nativeLive(): number {
  return live;
}

function spawnNative(binding: NativeBinding, req: SpawnRequest, starts: NativeStarts): Promise<SpawnedProcess | SpawnFailure> {
  const argv = [req.file, ...req.args];
  const envp = Object.entries(req.env).map(([k, v]) => `${k}=${v}`);
  const bad = argv.findIndex((a) => a.includes('\0'));
  if (bad >= 0) return Promise.resolve({ error: `spawn ${req.file}: ${bad === 0 ? 'the command' : `argument ${bad}`} holds a NUL byte`, code: null });
  const badEnv = envp.find((e) => e.includes('\0'));
  if (badEnv !== undefined) return Promise.resolve({ error: `spawn ${req.file}: environment variable ${badEnv.slice(0, badEnv.indexOf('='))} holds a NUL byte`, code: null });
  if (req.cwd.includes('\0')) return Promise.resolve({ error: `spawn ${req.file}: the working directory holds a NUL byte`, code: null });

  let onExit!: (e: ProcessExit) => void;
  const exited = new Promise<ProcessExit>((resolve) => (onExit = resolve));
  const inline = starts === 'idle' && live === 0;
  live++;
  return new Promise((resolve) => {
    // Inline, onSpawn runs before binding.spawn returns.
    try {
      binding.spawn(
        req.file,
        argv,
        envp,
        req.cwd,
        (errno, pid, outFd, errFd) => {
          if (errno !== 0) {
            live--;
            const code = errnoNames.get(errno) ?? null;
            return resolve({ error: `spawn ${req.file} ${code ?? `errno ${errno}`}`, code });
          }
          // The same stream type Node gives a child's stdout (a net.Socket on a libuv pipe handle): non-blocking
          // reads, readStop when the reader stops pulling, the fd closed on destroy.
          const stdout = new net.Socket({ fd: outFd, readable: true, writable: false });
          const stderr = new net.Socket({ fd: errFd, readable: true, writable: false });
          resolve({ pid, stdout, stderr, exited });
        },
        // signal 0 with code -1: the addon could not learn how it ended (reaped elsewhere); report it as killed.
        (code, signal, groupGone) => {
          live--;
          const e: ProcessExit = code >= 0 ? { code, signal: null } : { code: null, signal: signalNames.get(signal) ?? 'SIGKILL' };
          if (groupGone === true) e.groupGone = true;
          onExit(e);
        },
        inline,
      );
    } catch (err) {
      live--; // nothing was started (a TypeError from the addon)
      throw err;
    }
  });
}
