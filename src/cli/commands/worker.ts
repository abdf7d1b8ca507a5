/**
 * `drover worker`: runs a worker agent in the foreground until SIGINT/SIGTERM,
 * then `drain()`s it (no more work; running attempts finish within
 * --drain-timeout, the rest are stopped and reported lost) and exits 0. A
 * second signal stops the running attempts at once (still reported lost); a
 * third exits 1 at once.
 *
 * Tasks get a clean environment (worker/task-env.ts): PATH=/usr/local/sbin:
 * /usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin, HOME=<the attempt's work
 * dir>, LANG=C.UTF-8, the variables named with --pass-env (when set), the
 * task's env, then DROVER_TASK_ID / DROVER_ATTEMPT / DROVER_OUTPUT_DIR /
 * DROVER_OUTPUT (the file for the task's KEY=VALUE outputs).
 * Nothing else of this process's environment, above all not DROVER_TOKEN.
 *
 * When started by `drover dev` (an IPC channel to the parent exists), the agent
 * also shuts down when that parent goes away, even if it was SIGKILLed, so dev
 * never leaves orphaned workers behind.
 */
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from '../commander.js';
import { selfFencePlan } from '../../core/lease.js';
import { DEFAULT_HEARTBEAT_MS, DEFAULT_LEASE_MS, DEFAULT_MAX_LOG_BYTES, LABEL_LIMITS, MAX_PREFETCH } from '../../core/protocol.js';
import type { GlobalOptions } from '../context.js';
import type { Logger } from '../../worker/logger.js';
import { collect, parseDurationFlag, parseHttpUrl, parseIntFlag, parseKeyValues, parseSizeFlag } from '../parse.js';
import { onShutdown } from '../signals.js';
import { applyHeapFlags, resumeYoungGrowth } from '../heap-flags.js';
import { startMemoryTrim } from '../memory-trim.js';
import { guardProcFiles, hideArgvSecrets } from '../proc-guard.js';
import { UsageError } from '../usage-error.js';
import { isLogLevel, LOG_LEVELS, type LogLevel } from '../human-log.js';
import { plural } from '../plural.js';
import { EXECUTORS, isExecutor, type Executor } from '../../worker/noop-executor.js';
import { passEnvNameProblem, TASK_LANG, TASK_PATH } from '../../worker/task-env.js';
import { AUTO_LONG_MS, AUTO_MAX_STALL_MS, AUTO_SHORT_MS, AUTO_WINDOW, autoPrefetchOptions } from '../../worker/auto-prefetch.js';

/** Same as the agent's DEFAULT_DRAIN_TIMEOUT_MS (not imported: the agent module loads lazily). */
const DEFAULT_DRAIN_TIMEOUT_MS = 30_000;
/** The agent's default SIGTERM → SIGKILL grace. */
const DEFAULT_KILL_GRACE_MS = 5_000;
/** Same as worker/reaper.ts REAPER_MAX_GRACE_MS (not imported: that module is the reaper's entry point). */
const REAPER_MAX_GRACE_MS = 2_000;

interface WorkerFlags {
  server?: string[];
  slots?: string;
  prefetch?: string;
  label?: string[];
  workDir?: string;
  id?: string;
  executor?: string;
  drainTimeout?: string;
  maxLog?: string;
  passEnv?: string[];
  logLevel: string;
  logFormat?: string;
}

/** With the default lease and kill grace: when the agent stops its attempts if no heartbeat is confirmed (for --help). */
const fence = selfFencePlan(0, DEFAULT_LEASE_MS, DEFAULT_KILL_GRACE_MS);

/** Largest --max-log: 64 GiB. */
const MAX_LOG_BYTES = 64 * 1024 ** 3;

/** Longest --drain-timeout: one day. */
const MAX_DRAIN_TIMEOUT_MS = 86_400_000;

export interface WorkerConfig {
  servers: string[];
  token: string;
  slots: number;
  /** Assignments queued beyond the slots (--prefetch; worker/prefetch-queue.ts), or 'auto' (worker/auto-prefetch.ts). */
  prefetch: number | 'auto';
  labels: Record<string, string>;
  workerId: string | undefined;
  workDir: string;
  executor: Executor;
  drainTimeoutMs: number;
  /** Output kept per attempt, in bytes (--max-log). */
  maxLogBytes: number;
  /** Names of variables passed on to tasks (validated, deduplicated, in order). */
  passEnv: string[];
  logLevel: LogLevel;
  /** `human`: HH:MM:SS lines (cli/human-log.ts); `json`: pino's JSON lines (epoch-ms `time`), for log collectors. */
  logFormat: 'human' | 'json';
}

/** `--log-format` when none is given: human lines on a terminal, JSON otherwise (a file, a pipe, a log collector). */
export function defaultLogFormat(stderrIsTty: boolean): 'human' | 'json' {
  return stderrIsTty ? 'human' : 'json';
}

/** `--prefetch N`: an integer 0..MAX_PREFETCH (`auto` is handled by the caller), or UsageError naming `auto` too. */
function parsePrefetch(raw: string): number {
  const s = raw.trim();
  const n = /^[+-]?\d+$/.test(s) ? Number(s) : NaN;
  if (!Number.isSafeInteger(n) || n < 0 || n > MAX_PREFETCH) throw new UsageError(`invalid --prefetch "${raw.slice(0, 40)}": expected auto or an integer 0..${MAX_PREFETCH}`);
  return n;
}

/** Validates the flags (and env fallbacks) into the agent's options, or throws UsageError. */
export function buildWorkerConfig(flags: WorkerFlags, globalToken: string | undefined, env: Record<string, string | undefined>): WorkerConfig {
  const rawServers = flags.server?.length ? flags.server : env.DROVER_URL ? [env.DROVER_URL] : [];
  if (!rawServers.length) throw new UsageError('missing --server URL: the Drover server to connect to, e.g. --server http://127.0.0.1:7070');
  const servers = rawServers.map((s) => parseHttpUrl('--server', s));
  const token = globalToken || env.DROVER_TOKEN;
  if (!token) throw new UsageError('missing --token: pass --token T or set DROVER_TOKEN to a worker token (drover token create --name NAME --role worker)');
  const slots = flags.slots !== undefined ? parseIntFlag('--slots', flags.slots, 1, 1024) : availableParallelism();
  // `auto` (the default): offered only while the tasks are short (worker/auto-prefetch.ts).
  const prefetch: number | 'auto' = flags.prefetch === undefined || flags.prefetch === 'auto' ? 'auto' : parsePrefetch(flags.prefetch);
  const labels = parseKeyValues('--label', flags.label);
  if (Object.keys(labels).length > LABEL_LIMITS.count) throw new UsageError(`too many --label flags: at most ${LABEL_LIMITS.count}`);
  for (const [k, v] of Object.entries(labels)) {
    if (k.length > LABEL_LIMITS.keyLength) throw new UsageError(`invalid --label "${k.slice(0, 40)}...": the key is over ${LABEL_LIMITS.keyLength} characters`);
    if (v.length > LABEL_LIMITS.valueLength) throw new UsageError(`invalid --label "${k}=...": the value is over ${LABEL_LIMITS.valueLength} characters`);
  }
  if (flags.id !== undefined && !/^[A-Za-z0-9._-]{1,100}$/.test(flags.id)) {
    throw new UsageError(`invalid --id "${flags.id}": expected 1..100 characters from A-Z a-z 0-9 . _ -`);
  }
  if (flags.workDir !== undefined && !flags.workDir.trim()) throw new UsageError('invalid --work-dir "": expected a directory');
  const workDir = flags.workDir ?? join(tmpdir(), `drover-worker-${flags.id ?? process.pid}`);
  const executor = flags.executor ?? 'process';
  if (!isExecutor(executor)) throw new UsageError(`invalid --executor "${executor}": expected one of ${EXECUTORS.join(', ')}`);
  // Read by the process runner (worker/native-spawn.ts); a typo would otherwise silently mean "auto".
  if (env.DROVER_SPAWNER !== undefined && env.DROVER_SPAWNER !== 'native' && env.DROVER_SPAWNER !== 'node') {
    throw new UsageError(`invalid DROVER_SPAWNER "${env.DROVER_SPAWNER.slice(0, 40)}": expected native or node (unset: the native spawner if it is built, else child_process)`);
  }
  const drainTimeoutMs = flags.drainTimeout !== undefined ? parseDurationFlag('--drain-timeout', flags.drainTimeout, MAX_DRAIN_TIMEOUT_MS) : DEFAULT_DRAIN_TIMEOUT_MS;
  const maxLogBytes = flags.maxLog !== undefined ? parseSizeFlag('--max-log', flags.maxLog, 1024, MAX_LOG_BYTES) : DEFAULT_MAX_LOG_BYTES;
  const passEnv: string[] = [];
  for (const name of flags.passEnv ?? []) {
    const problem = passEnvNameProblem(name);
    if (problem) throw new UsageError(`invalid --pass-env "${name}": ${problem}`);
    if (!passEnv.includes(name)) passEnv.push(name);
  }
  if (!isLogLevel(flags.logLevel)) throw new UsageError(`invalid --log-level "${flags.logLevel.slice(0, 40)}": expected one of ${LOG_LEVELS.join(', ')}`);
  const logFormat = flags.logFormat ?? defaultLogFormat(Boolean(process.stderr.isTTY));
  if (logFormat !== 'human' && logFormat !== 'json') throw new UsageError(`invalid --log-format "${logFormat.slice(0, 40)}": expected human or json`);
  return { servers, token, slots, prefetch, labels, workerId: flags.id, workDir, executor, drainTimeoutMs, maxLogBytes, passEnv, logLevel: flags.logLevel, logFormat };
}

export function workerCommand(): Command {
  return new Command('worker')
    .description('run a worker agent: connects to the server(s), receives attempts, runs them, streams their logs')
    .option('--server <url>', 'a Drover server; repeat for several (default: env DROVER_URL)', collect)
    .option('--token <token>', 'a worker token (default: env DROVER_TOKEN)')
    .option('--slots <n>', 'attempts run at once, 1..1024 (default: number of CPUs)')
    .option('--prefetch <n|auto>', `assignments taken beyond --slots and queued until a slot frees, 0..${MAX_PREFETCH}, so short tasks start without waiting for the server's refill. A queued task waits behind this worker's running ones unless another worker of the same server has a slot free, which takes it back. auto: twice the slots, offered only after ${AUTO_WINDOW} tasks in a row ran ${AUTO_SHORT_MS} ms or less, and handed back to the shared queue once no queued task started for ${AUTO_MAX_STALL_MS} ms or a task ran over ${AUTO_LONG_MS / 1000} s; 0: none (default: auto)`)
    .option('--label <K=V>', 'a label of this worker (repeatable); tasks submitted with --require K=V run only on workers with that label', collect)
    .option('--work-dir <dir>', 'parent of the attempts\' work directories (default: <tmpdir>/drover-worker-<id or pid>)')
    .option('--id <id>', 'stable worker id (default: chosen by the agent)')
    .option('--executor <kind>', 'what runs attempts: process (the task\'s command) or noop (nothing; each attempt succeeds at once, for benchmarks and tests)', 'process')
    .option('--drain-timeout <duration>', 'on SIGTERM/SIGINT (or a server\'s drain), how long running attempts may finish before they are stopped and reported lost, e.g. 30s, 2m; a bare number is seconds (default: 30s)')
    .option('--max-log <size>', `output kept of each attempt, e.g. 100MiB, 1GiB; past it the rest is dropped after a marker line (default: ${DEFAULT_MAX_LOG_BYTES / 1024 ** 2}MiB)`)
    .option('--pass-env <name>', 'pass this variable of the worker\'s environment on to tasks, when set (repeatable; never DROVER_TOKEN)', collect)
    .option('--log-level <level>', 'the least severe agent log lines written to stderr: error, warn, info (connections, drains) or debug (every attempt); silent for none', 'info')
    .option('--log-format <format>', 'human (HH:MM:SS lines) or json (one pino object a line, epoch-ms times); default human on a terminal, json otherwise')
    .addHelpText(
      'after',
      `\nLiveness: the agent heartbeats every ${DEFAULT_HEARTBEAT_MS / 1000} s; a worker not heard from for ${DEFAULT_LEASE_MS / 1000} s\n` +
        `is lost: the server requeues its attempts (without using a retry). An agent whose\n` +
        `heartbeats no server confirms stops its own attempts before that lease can end\n` +
        `(SIGTERM ${fence.stopAt / 1000} s after the last confirmed heartbeat was sent, SIGKILL at ${(fence.stopAt + fence.graceMs) / 1000} s), so a\n` +
        `replacement never runs alongside them. If the agent is killed outright (kill -9),\n` +
        `a small reaper process it started stops its attempts' process groups (SIGTERM,\n` +
        `then SIGKILL ${REAPER_MAX_GRACE_MS / 1000} s later).\n` +
        `\nTask environment: tasks do not see the worker's environment (nor its token).\n` +
        `They get PATH=${TASK_PATH},\n` +
        `HOME=<the attempt's work dir>, LANG=${TASK_LANG}, the --pass-env variables,\n` +
        `the task's env, then DROVER_TASK_ID, DROVER_ATTEMPT, DROVER_OUTPUT_DIR and\n` +
        `DROVER_OUTPUT (a file for KEY=VALUE outputs, read after a success).\n` +
        `\nDrain: SIGTERM/SIGINT drains the worker: it accepts no more work, lets running\n` +
        `attempts finish for up to --drain-timeout (default ${DEFAULT_DRAIN_TIMEOUT_MS / 1000} s), then stops the rest and\n` +
        `reports them lost (they run again elsewhere without using a retry), and exits 0.\n` +
        `A second signal stops the running attempts at once (still reported lost); a third\n` +
        `exits at once. A drain by the server does the same, but the agent stays connected, idle.\n`,
    )
    .action(async (flags: WorkerFlags, cmd: Command) => {
      // `--token` is also a global option; commander gives it to the program, so read both.
      const cfg = buildWorkerConfig(flags, cmd.optsWithGlobals<GlobalOptions>().token, process.env);
      // Before any task runs: its token out of ps and out of the tasks' reach through /proc (proc-guard.ts).
      hideArgvSecrets();
      const unguarded = guardProcFiles();
      applyHeapFlags();
      startMemoryTrim();
      const logger = cfg.logFormat === 'human' ? await humanAgentLogger(cfg.logLevel) : await jsonAgentLogger(cfg.logLevel);
      if (unguarded) logger.warn({ reason: unguarded }, 'this agent\'s /proc files stay readable by its tasks (they run as the same user and could read DROVER_TOKEN from /proc/<pid>/environ)');
      const { startAgent } = await import('../../worker/agent.js');
      const agent = await startAgent({
        servers: cfg.servers,
        token: cfg.token,
        slots: cfg.slots,
        prefetch: cfg.prefetch,
        labels: cfg.labels,
        workDir: cfg.workDir,
        executor: cfg.executor,
        drainTimeoutMs: cfg.drainTimeoutMs,
        maxLogBytes: cfg.maxLogBytes,
        passEnv: cfg.passEnv,
        logger,
        ...(cfg.workerId !== undefined ? { workerId: cfg.workerId } : {}),
      });
      resumeYoungGrowth();
      const stop = async () => {
        await agent.drain();
        logger.flush();
      };
      onShutdown(stop, {
        onRepeat: (signal) => {
          process.stderr.write(`drover worker: ${signal} again: stopping the running attempts now (reported lost); once more exits at once\n`);
          void agent.drain({ now: true });
        },
      });
      if (process.channel) {
        // Started by `drover dev`: the channel closes when the parent exits, however it exits.
        process.on('disconnect', () => process.kill(process.pid, 'SIGTERM'));
      }
      const runs = cfg.executor === 'noop' ? 'noop executor (attempts run nothing and succeed at once)' : `work dir ${cfg.workDir}`;
      // Printed at every level: it says the agent is up, with its signal handlers in place (tests wait for it).
      const queue = cfg.prefetch !== 'auto' && cfg.prefetch > 0 ? ` (+${cfg.prefetch} prefetched)` : '';
      const auto = cfg.prefetch === 'auto' ? `, prefetch auto (up to ${autoPrefetchOptions(cfg.slots, MAX_PREFETCH).cap} queued while tasks are short)` : '';
      process.stderr.write(`drover worker ${agent.workerId}: ${plural(cfg.slots, 'slot')}${queue}, ${cfg.servers.length === 1 ? 'server' : 'servers'} ${cfg.servers.join(', ')}, ${runs}${auto}\n`);
    });
}

/** The Logger plus flush(): what the action needs from either format. */
type AgentLogger = Logger & { flush(): void };

async function humanAgentLogger(level: LogLevel): Promise<AgentLogger> {
  const { humanLogger } = await import('../human-log.js');
  // process.stderr is synchronous on a terminal, file or pipe (Linux): nothing to flush.
  return { ...humanLogger(level, (line) => process.stderr.write(line)), flush: () => {} };
}

async function jsonAgentLogger(level: LogLevel): Promise<AgentLogger> {
  const { default: pino } = await import('pino');
  // Asynchronous stderr: measured (issue 9, a 5,000-task drain on a noop agent), the synchronous
  // destination's write(2) per line was the agent's largest cost (~50 µs per task for its two info
  // lines). Lines still go out at once when the pipe is free; what is buffered is flushed on exit.
  const dest = pino.destination({ dest: 2, sync: false, maxLength: 16 * 1024 * 1024 });
  process.on('exit', () => {
    try {
      dest.flushSync();
    } catch {
      // Nothing more can be done for log lines at exit.
    }
  });
  const l = pino({ level, base: { svc: 'drover-worker' } }, dest);
  return { debug: l.debug.bind(l), info: l.info.bind(l), warn: l.warn.bind(l), error: l.error.bind(l), flush: () => l.flush() };
}
