/**
 * Runs one attempt as a process group and reports how it ended.
 *
 * Life of an attempt:
 *   setup     fresh work dir (+ script file, mode 0700). A kill during setup
 *             ends the attempt without spawning; one that comes while the
 *             spawner is starting the process stops the new group as soon as
 *             it exists (SIGTERM now, SIGKILL after that kill's grace).
 *   spawn     native-spawn.ts: the native addon (posix_spawn) or, where it
 *             is not built, Node's child_process; RunnerOptions.spawner.
 *             No shell, a new session and process group (pgid = pid), stdin
 *             /dev/null, cwd = the task's cwd or else the work dir, only the
 *             task's env (the command is looked up in its PATH), every signal
 *             at its default action and an empty mask, no other fd of the
 *             agent. A start failure (ENOENT, EACCES, ENOEXEC, ENOTDIR,
 *             E2BIG..., or a task cwd that is missing or not a directory,
 *             checked before the spawn) is outcome `start_failed` with
 *             exitCode null and a message from core/start-failure.ts that
 *             says where a relative path resolved and which PATH was
 *             searched; the server fails the task without a retry.
 *             A script whose interpreter is empty (task-input.ts picks that
 *             for a script starting with `#!`) is executed itself: the kernel
 *             reads its #! line.
 *   running   stdout/stderr go through a LogPump (bounded, flow-controlled).
 *             `timeoutMs` elapsing is kill('timed_out').
 *   kill      SIGTERM to the group now, SIGKILL to the group killGraceMs
 *             (or the kill's own `graceMs`) later, whether or not the leader
 *             is gone by then. A later kill with a shorter grace moves the
 *             SIGKILL earlier (self-fencing must beat the lease), never later.
 *   leader exits
 *             - after a kill: the attempt waits until the group is empty; a
 *               member that ignores SIGTERM dies by the SIGKILL at the end of
 *               the grace period, so nothing outlives the attempt.
 *             - without a kill (batch contract): the rest of the group gets
 *               SIGKILL at once. A batch task ends when its leader exits;
 *               background children it left behind do not outlive it.
 *   outputs   once the group is gone and the pipes are closed, after a
 *             leader's exit 0 without a kill: the work dir's
 *             DROVER_OUTPUT file is read (output-file.ts: no link followed,
 *             regular files only, bounded) and parsed (core/task-outputs.ts):
 *             its keys go in the result; a file that breaks the rules makes
 *             the outcome `failed` with an error naming the line, and the exit
 *             code stays 0. Any other end ignores the file.
 *   ended     leader exited, group empty (kill(-pgid, 0) fails with ESRCH),
 *             both pipes closed. Only then does `result` resolve, so the
 *             caller's exit report follows every log byte. The work dir's
 *             removal starts then and is not on the exit's path
 *             (`cleanedUp`, and whenCleanedUp() for all attempts): measured
 *             (issue 9, 2,000 `/bin/true` through one agent on ext4), its two
 *             rmdir calls through the threadpool were about 1 ms of an 11 ms
 *             slot cycle (where the work-directory addon is built, removals
 *             share threadpool jobs: work-dir-native.ts). Nothing is lost if
 *             the agent dies before it is done: a leftover dir with no
 *             process is removed by the next agent (leftovers.ts).
 *
 * Environment: task-env.ts (a fixed minimal base, the operator's passed
 * variables, the task's env, DROVER_*), never the agent's own.
 * Group watch: `groups.add(pgid, taskId)` right after the spawn and
 * `groups.remove(pgid)` once the group is gone, so the agent's reaper can
 * stop the group if the agent dies meanwhile (reaper.ts). If the reaper dies
 * too, the next agent on the work dir finds the group by the work dir
 * (leftovers.ts).
 *
 * Outcome: `start_failed` when nothing could be started; the kill reason
 * (`timed_out`, `cancelled`, `lost`) when a kill was requested before the
 * leader exited; else `succeeded` iff the exit code is 0, else `failed`. A
 * leader killed by a signal reports its name (`signal: 'SIGKILL'`, exitCode
 * null), so a client can map it to 128 + n; a timeout reports `timed_out`
 * (with the SIGTERM/SIGKILL it took in `signal`). durationMs runs from spawn to the leader's exit.
 */
import { stat } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { setLongTimeout, type LongTimeout } from '../core/long-timeout.js';
import { cwdProblemMessage, startFailureMessage } from '../core/start-failure.js';
import { LOG_LIMITS, type AgentMessage, type AssignedAttempt } from '../core/protocol.js';
import { LogPump } from './log-pump.js';
import { readOutputFile } from './output-file.js';
import { silentLogger, type Logger } from './logger.js';
import { groupAlive, signalGroup } from './process-group.js';
import { createWorkDir, removeWorkDir, writeScript, type WorkDir } from './work-dir.js';
import { taskEnv } from './task-env.js';
import { pickSpawner, type Spawner, type SpawnerChoice } from './native-spawn.js';
import type { WorkDirSource } from './spare-work-dirs.js';

/** What the runner needs of an assignment. */
export type AttemptSpec = Pick<AssignedAttempt, 'taskId' | 'number' | 'command' | 'args' | 'script' | 'interpreter' | 'env' | 'timeoutMs' | 'cwd'>;

/**
 * `lost`: the agent gave the attempt up (drain timeout); it runs again elsewhere.
 * `returned`: a queued attempt given back before it started, as the server asked (agent.ts onGiveBack);
 * only ever the reason of an attempt that never ran.
 */
export type KillReason = 'timed_out' | 'cancelled' | 'lost' | 'returned';

type ExitReport = Extract<AgentMessage, { type: 'exit' }>;
/** `outputs` only when the attempt succeeded and its DROVER_OUTPUT file held at least one key. */
export type AttemptResult = Pick<ExitReport, 'outcome' | 'exitCode' | 'signal' | 'error' | 'durationMs' | 'outputs'>;

export interface RunnerOptions {
  /** Parent of the per-attempt work directories. */
  workDir: string;
  /** Where an attempt's work directory comes from: the agent's spares (spare-work-dirs.ts); default made at the attempt's start in `workDir`. */
  workDirs?: WorkDirSource;
  /** SIGTERM → SIGKILL grace. Default 5000. */
  killGraceMs?: number;
  /** Default LOG_LIMITS from the protocol. */
  logLimits?: { maxChunkBytes: number; maxInFlightBytes: number; maxKeptBytes?: number };
  /** Called once, synchronously after a successful spawn. */
  onStarted?: (pid: number) => void;
  /** `pump.next()` may have something new (or the pipes closed). */
  onOutput?: () => void;
  /** Variables the operator passes on to tasks (already read from the agent's environment); see task-env.ts. */
  passEnv?: Readonly<Record<string, string>>;
  /** Told about each spawned process group and its end (the agent's reaper registry). */
  groups?: GroupWatch;
  /**
   * How long after the group's last SIGKILL to wait for its members to be
   * reaped before giving up with a warning (a zombie that init does not
   * reap, a process stuck in the kernel). Default 10 000.
   */
  reapTimeoutMs?: number;
  /**
   * Once the group is gone the pipes normally hit EOF at once. A descendant
   * that left the group (setsid) can hold them open: they are closed when they
   * stay unpaused this long without reaching EOF. Default 2000.
   */
  drainIdleMs?: number;
  logger?: Logger;
  /**
   * How processes are started (native-spawn.ts): 'auto' (default) = the
   * native addon when it loads, else Node's child_process.
   */
  spawner?: SpawnerChoice;
  /** Named in start-failure messages about the task's cwd (it exists, or not, on this worker). */
  workerId?: string;
}

export interface GroupWatch {
  add(pgid: number, taskId: string): void;
  remove(pgid: number): void;
}

export interface KillOptions {
  /** SIGTERM → SIGKILL grace for this kill; default the runner's killGraceMs. */
  graceMs?: number;
}

export class AttemptRun {
  readonly pump: LogPump;
  /** Never rejects. */
  readonly result: Promise<AttemptResult>;
  /** Resolves once the work dir is removed (its removal starts when `result` resolves; see the life cycle above). Never rejects. */
  cleanedUp: Promise<void> = Promise.resolve();
  private pidValue: number | null = null;
  private killReason: KillReason | null = null;
  private killError: string | null = null;
  private killDeadline = 0;
  private killTimer: NodeJS.Timeout | null = null;
  /** The task's timeout: a chain of timers (core/long-timeout.ts), since timeouts run up to 30 days. */
  private timeoutTimer: LongTimeout | null = null;
  private leaderExited = false;
  private readonly killGraceMs: number;
  private readonly log: Logger;
  /** The grace of a kill that came before there was a group to signal (see execute). */
  private pendingGraceMs = Infinity;

  constructor(
    spec: AttemptSpec,
    private readonly opts: RunnerOptions,
  ) {
    this.killGraceMs = opts.killGraceMs ?? 5_000;
    this.log = opts.logger ?? silentLogger;
    const limits = opts.logLimits ?? LOG_LIMITS;
    this.pump = new LogPump({ ...limits, onOutput: opts.onOutput });
    this.result = this.run(spec).catch((err: unknown) => {
      // Setup and bookkeeping errors end up here; the attempt must still end with a result.
      this.log.error({ err, taskId: spec.taskId }, 'attempt runner failed');
      this.clearTimers();
      return failed(`worker error: ${errorMessage(err)}`, 0);
    });
  }

  /** The leader's pid (= the group id) once spawned. */
  get pid(): number | null {
    return this.pidValue;
  }

  /**
   * Stops the attempt: SIGTERM to the group, SIGKILL after the grace period.
   * The first reason wins; a kill after the leader exited without one changes
   * nothing (the attempt has its outcome, the rest of its group got SIGKILL).
   * A later kill whose grace ends sooner than the pending SIGKILL brings the
   * SIGKILL forward (only the deadline changes, not the reason).
   */
  kill(reason: KillReason, error: string | null = null, opts: KillOptions = {}): void {
    const graceMs = Math.max(0, opts.graceMs ?? this.killGraceMs);
    if (this.killReason) {
      if (this.killTimer && Date.now() + graceMs < this.killDeadline) this.armSigkill(graceMs);
      else if (this.pidValue === null) this.pendingGraceMs = Math.min(this.pendingGraceMs, graceMs);
      return;
    }
    if (this.leaderExited) return;
    this.killReason = reason;
    this.killError = error;
    if (this.pidValue === null) {
      // Still in setup: run() sees killReason and does not spawn, or execute() signals the group it just spawned.
      this.pendingGraceMs = graceMs;
      return;
    }
    this.sendToGroup('SIGTERM');
    this.armSigkill(graceMs);
  }

  private armSigkill(graceMs: number): void {
    if (this.killTimer) clearTimeout(this.killTimer);
    this.killDeadline = Date.now() + graceMs;
    this.killTimer = setTimeout(() => this.sendToGroup('SIGKILL'), graceMs);
  }

  private async run(spec: AttemptSpec): Promise<AttemptResult> {
    let wd: WorkDir | null = null;
    try {
      wd = await (this.opts.workDirs ? this.opts.workDirs.take(spec.taskId, spec.number) : createWorkDir(this.opts.workDir, spec.taskId, spec.number));
      let argv: Argv;
      try {
        argv = await resolveArgv(spec, wd);
      } catch (err) {
        return failed(errorMessage(err), 0);
      }
      const cwdProblem = spec.cwd ? await checkCwd(spec.cwd, this.opts.workerId ?? 'this worker') : null;
      if (cwdProblem !== null) return startFailed(cwdProblem, 0);
      if (this.killReason) {
        return { outcome: this.killReason, exitCode: null, signal: null, error: this.killError, durationMs: 0 };
      }
      return await this.execute(spec, wd, argv);
    } finally {
      this.clearTimers();
      if (wd) {
        const dir = wd;
        this.cleanedUp = track(removeWorkDir(dir).catch((err: unknown) => this.log.warn({ err, dir: dir.dir }, 'could not remove work dir')));
      }
    }
  }

  private async execute(spec: AttemptSpec, wd: WorkDir, { argv, shebang }: Argv): Promise<AttemptResult> {
    const env = taskEnv(spec, { workDir: wd.dir, outDir: wd.outDir, outputFile: wd.outputFile }, this.opts.passEnv);
    const startedAt = Date.now();
    const spawner: Spawner = pickSpawner(this.opts.spawner, this.log);
    const cwd = spec.cwd ? spec.cwd : wd.dir;
    let child = await spawner({ file: argv[0]!, args: argv.slice(1), cwd, env });
    // A #! script is executed straight after it was written: a process forked by another start at that
    // moment can briefly hold a copy of the file's write descriptor (until its exec closes it), and the
    // kernel refuses to execute a file open for writing (ETXTBSY). Transient: try again shortly.
    for (let i = 0; shebang !== undefined && 'error' in child && child.code === 'ETXTBSY' && i < 5; i++) {
      await sleep(5 * 2 ** i);
      child = await spawner({ file: argv[0]!, args: argv.slice(1), cwd, env });
    }
    // Not started (ENOENT, EACCES, ENOEXEC, E2BIG, a NUL byte...): nothing runs, no pipe is open.
    if ('error' in child) {
      const message = startFailureMessage({
        file: argv[0]!,
        code: child.code,
        detail: child.error,
        cwd,
        inWorkDir: !spec.cwd,
        path: env.PATH ?? '',
        ...(shebang !== undefined ? { shebang } : {}),
      });
      return startFailed(message, Date.now() - startedAt);
    }
    this.pump.attach(child.stdout, 'stdout');
    this.pump.attach(child.stderr, 'stderr');
    const pid = child.pid;
    this.pidValue = pid;
    // If this agent dies, the next one on this work dir finds the group by the work dir's marker (leftovers.ts).
    // Lets the reaper stop the group if this agent dies outright (reaper.ts).
    this.opts.groups?.add(pid, spec.taskId);
    this.opts.onStarted?.(pid);
    // A kill that came while the spawner was busy (it resolves asynchronously) applies now.
    if (this.killReason) {
      this.sendToGroup('SIGTERM');
      this.armSigkill(this.pendingGraceMs);
    }
    if (spec.timeoutMs !== null && spec.timeoutMs !== undefined) {
      const ms = spec.timeoutMs;
      this.timeoutTimer = setLongTimeout(() => this.kill('timed_out', `timed out after ${ms} ms`), ms);
    }

    const r = await child.exited;
    this.leaderExited = true;
    const durationMs = Date.now() - startedAt;
    this.timeoutTimer?.clear();
    await this.reapGroup(pid, r.groupGone === true);
    this.opts.groups?.remove(pid);
    await this.drainPipes();

    const exit = { exitCode: r.code, signal: r.signal, durationMs };
    if (this.killReason) return { outcome: this.killReason, ...exit, error: this.killError };
    if (r.code !== 0) return { outcome: 'failed', ...exit, error: null };
    // Only a success hands on outputs; a file that breaks the rules fails the attempt (retries apply),
    // keeping the process's own exit code.
    const out = await readOutputFile(wd);
    if (out.kind === 'error') return { outcome: 'failed', ...exit, error: out.message };
    return out.kind === 'outputs' ? { outcome: 'succeeded', ...exit, error: null, outputs: out.outputs } : { outcome: 'succeeded', ...exit, error: null };
  }

  /**
   * Waits until no member of the group remains (see the life cycle above).
   * `goneAtReap`: the native spawner found the group empty when it reaped the
   * leader (ProcessExit.groupGone), which is final: nothing is signalled or
   * polled, since the group's id may by now be a new, unrelated group's.
   * Why: before, every ended group was sent SIGKILL here through
   * process.kill, a little after the reap; for nearly every task the group
   * was already empty, so the call failed with ESRCH, and a group id free
   * again could in principle have been signalled as someone else's.
   * Measured (3,000 /bin/true, one agent with 8 slots and `--prefetch 16`,
   * SQLite, CPU profile of the agent): that call and its ESRCH exception were
   * 4.9 % of the agent's busy time, and are gone from the profile; the
   * throughput did not move beyond the spread (2,000 tasks, nine runs each
   * way in alternating groups of three: 723-786/s before, 736-784/s after;
   * the agent's CPU 0.72-0.86 ms a task before, 0.70-0.86 ms after).
   */
  private async reapGroup(pgid: number, goneAtReap: boolean): Promise<void> {
    if (!goneAtReap) await this.waitGroupEmpty(pgid);
    if (this.killTimer) clearTimeout(this.killTimer);
    this.killTimer = null;
  }

  private async waitGroupEmpty(pgid: number): Promise<void> {
    let deadline: number;
    let gone = false;
    if (this.killReason) {
      // The SIGKILL timer is still armed: members that ignore SIGTERM die when the grace ends.
      deadline = this.killDeadline + (this.opts.reapTimeoutMs ?? 10_000);
    } else {
      // ESRCH: the group is already empty (the usual end of a task that left nothing running); no need to ask again.
      gone = this.sendToGroup('SIGKILL') === 'gone';
      deadline = Date.now() + (this.opts.reapTimeoutMs ?? 10_000);
    }
    // No event tells when a group is empty: poll, briefly at first.
    let delay = 2;
    while (!gone && groupAlive(pgid)) {
      if (Date.now() >= deadline) {
        this.log.warn({ pgid }, 'process group still has members after SIGKILL; giving up waiting');
        break;
      }
      await sleep(delay);
      delay = Math.min(delay * 2, 50);
    }
  }

  private async drainPipes(): Promise<void> {
    const idleMs = this.opts.drainIdleMs ?? 2_000;
    let lastRead = this.pump.stats().bytesRead;
    let unpausedTicks = 0;
    const timer = setInterval(() => {
      const s = this.pump.stats();
      // Waiting for acks is legitimate: the consumer decides how long that takes.
      if (s.paused) return;
      unpausedTicks++;
      if (s.bytesRead === lastRead || unpausedTicks >= 5) {
        this.log.warn({ pid: this.pidValue }, 'output pipes still open after the process group ended; closing them');
        this.pump.abandon();
      }
      lastRead = s.bytesRead;
    }, idleMs);
    try {
      await this.pump.ended;
    } finally {
      clearInterval(timer);
    }
  }

  private sendToGroup(signal: NodeJS.Signals): 'sent' | 'gone' | 'failed' {
    if (this.pidValue === null) return 'failed';
    try {
      return signalGroup(this.pidValue, signal);
    } catch (err) {
      this.log.warn({ err, pgid: this.pidValue, signal }, 'could not signal process group');
      return 'failed';
    }
  }

  private clearTimers(): void {
    this.timeoutTimer?.clear();
    if (this.killTimer) clearTimeout(this.killTimer);
    this.timeoutTimer = null;
    this.killTimer = null;
  }
}

/** Work-dir removals still running, of every attempt of this process. */
const cleanups = new Set<Promise<void>>();

function track(p: Promise<void>): Promise<void> {
  cleanups.add(p);
  void p.finally(() => cleanups.delete(p));
  return p;
}

/** Resolves when every work dir whose removal has started is removed (the agent waits for it before it exits). */
export async function whenCleanedUp(): Promise<void> {
  while (cleanups.size > 0) await Promise.all([...cleanups]);
}

/** Starts an attempt; see the life cycle at the top of this file. */
export function runAttempt(spec: AttemptSpec, opts: RunnerOptions): AttemptRun {
  return new AttemptRun(spec, opts);
}

/** argv to spawn; `shebang` (the script's first line) when the script file itself is executed. */
interface Argv {
  argv: string[];
  shebang?: string;
}

/**
 * `command` + `args`; or the script file appended to the interpreter; or, with
 * no interpreter, the script file itself when it starts with `#!` (else `sh`,
 * as tasks stored before shebang detection expect).
 */
async function resolveArgv(spec: AttemptSpec, wd: WorkDir): Promise<Argv> {
  if (spec.script !== null && spec.script !== undefined) {
    const file = await writeScript(wd, spec.script);
    if (spec.interpreter.length > 0) return { argv: [...spec.interpreter, file] };
    if (spec.script.startsWith('#!')) return { argv: [file], shebang: spec.script.split('\n', 1)[0]!.slice(0, 200) };
    return { argv: ['sh', file] };
  }
  if (spec.command) return { argv: [spec.command, ...spec.args] };
  throw new Error('attempt has neither command nor script');
}

/** Null when `cwd` is a directory the attempt can start in, else the start-failure message. */
async function checkCwd(cwd: string, workerId: string): Promise<string | null> {
  try {
    const st = await stat(cwd);
    return st.isDirectory() ? null : cwdProblemMessage(cwd, workerId, 'not_directory');
  } catch (err) {
    const code = (err as { code?: string }).code;
    return cwdProblemMessage(cwd, workerId, code === 'ENOENT' ? 'missing' : code === 'ENOTDIR' ? 'not_directory' : { code: code ?? errorMessage(err) });
  }
}

function failed(error: string, durationMs: number): AttemptResult {
  return { outcome: 'failed', exitCode: null, signal: null, error, durationMs };
}

function startFailed(error: string, durationMs: number): AttemptResult {
  return { outcome: 'start_failed', exitCode: null, signal: null, error, durationMs };
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
