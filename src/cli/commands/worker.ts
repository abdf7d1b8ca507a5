/**
 * `drover worker`: runs a worker agent in the foreground until SIGINT/SIGTERM,
 * then `close()`s it (its running attempts are stopped and reported) and exits 0.
 *
 * When started by `drover dev` (an IPC channel to the parent exists), the agent
 * also shuts down when that parent goes away, even if it was SIGKILLed, so dev
 * never leaves orphaned workers behind.
 */
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { DEFAULT_HEARTBEAT_MS, DEFAULT_LEASE_MS } from '../../core/protocol.js';
import type { GlobalOptions } from '../context.js';
import { collect, parseHttpUrl, parseIntFlag, parseKeyValues } from '../parse.js';
import { onShutdown } from '../signals.js';
import { UsageError } from '../usage-error.js';
import { EXECUTORS, isExecutor, type Executor } from '../../worker/noop-executor.js';

interface WorkerFlags {
  server?: string[];
  slots?: string;
  label?: string[];
  workDir?: string;
  id?: string;
  executor?: string;
  logLevel: string;
}

export interface WorkerConfig {
  servers: string[];
  token: string;
  slots: number;
  labels: Record<string, string>;
  workerId: string | undefined;
  workDir: string;
  executor: Executor;
}

/** Validates the flags (and env fallbacks) into the agent's options, or throws UsageError. */
export function buildWorkerConfig(flags: WorkerFlags, globalToken: string | undefined, env: Record<string, string | undefined>): WorkerConfig {
  const rawServers = flags.server?.length ? flags.server : env.DROVER_URL ? [env.DROVER_URL] : [];
  if (!rawServers.length) throw new UsageError('missing --server URL: the Drover server to connect to, e.g. --server http://127.0.0.1:7070');
  const servers = rawServers.map((s) => parseHttpUrl('--server', s));
  const token = globalToken || env.DROVER_TOKEN;
  if (!token) throw new UsageError('missing --token: pass --token T or set DROVER_TOKEN to a worker token (drover token create --name NAME --role worker)');
  const slots = flags.slots !== undefined ? parseIntFlag('--slots', flags.slots, 1, 1024) : availableParallelism();
  const labels = parseKeyValues('--label', flags.label);
  if (flags.id !== undefined && !/^[A-Za-z0-9._-]{1,100}$/.test(flags.id)) {
    throw new UsageError(`invalid --id "${flags.id}": expected 1..100 characters from A-Z a-z 0-9 . _ -`);
  }
  if (flags.workDir !== undefined && !flags.workDir.trim()) throw new UsageError('invalid --work-dir "": expected a directory');
  const workDir = flags.workDir ?? join(tmpdir(), `drover-worker-${flags.id ?? process.pid}`);
  const executor = flags.executor ?? 'process';
  if (!isExecutor(executor)) throw new UsageError(`invalid --executor "${executor}": expected one of ${EXECUTORS.join(', ')}`);
  return { servers, token, slots, labels, workerId: flags.id, workDir, executor };
}

export function workerCommand(): Command {
  return new Command('worker')
    .description('run a worker agent: connects to the server(s), receives attempts, runs them, streams their logs')
    .option('--server <url>', 'a Drover server; repeat for several (default: env DROVER_URL)', collect)
    .option('--token <token>', 'a worker token (default: env DROVER_TOKEN)')
    .option('--slots <n>', 'attempts run at once, 1..1024 (default: number of CPUs)')
    .option('--label <K=V>', 'label the scheduler can match on (repeatable)', collect)
    .option('--work-dir <dir>', 'parent of the attempts\' work directories (default: <tmpdir>/drover-worker-<id or pid>)')
    .option('--id <id>', 'stable worker id (default: chosen by the agent)')
    .option('--executor <kind>', 'what runs attempts: process (the task\'s command) or noop (nothing; each attempt succeeds at once, for benchmarks and tests)', 'process')
    .option('--log-level <level>', 'agent log level on stderr (error, warn, info, debug)', 'info')
    .addHelpText(
      'after',
      `\nLiveness: the agent heartbeats every ${DEFAULT_HEARTBEAT_MS / 1000} s; a worker not heard from for ${DEFAULT_LEASE_MS / 1000} s\n` +
        `is lost: the server requeues its attempts (without using a retry), and an agent\n` +
        `that cannot reach its server for ${DEFAULT_LEASE_MS / 1000} s stops its own attempts.\n` +
        `SIGINT/SIGTERM stops the running attempts, reports them, and exits 0.\n`,
    )
    .action(async (flags: WorkerFlags, cmd: Command) => {
      // `--token` is also a global option; commander gives it to the program, so read both.
      const cfg = buildWorkerConfig(flags, cmd.optsWithGlobals<GlobalOptions>().token, process.env);
      const { default: pino } = await import('pino');
      const logger = pino({ level: flags.logLevel, base: { svc: 'drover-worker' } }, pino.destination(2));
      const { startAgent } = await import('../../worker/agent.js');
      const agent = await startAgent({
        servers: cfg.servers,
        token: cfg.token,
        slots: cfg.slots,
        labels: cfg.labels,
        workDir: cfg.workDir,
        executor: cfg.executor,
        logger,
        ...(cfg.workerId !== undefined ? { workerId: cfg.workerId } : {}),
      });
      const stop = async () => {
        await agent.close();
        logger.flush?.();
      };
      onShutdown(stop);
      if (process.channel) {
        // Started by `drover dev`: the channel closes when the parent exits, however it exits.
        process.on('disconnect', () => process.kill(process.pid, 'SIGTERM'));
      }
      const runs = cfg.executor === 'noop' ? 'noop executor (attempts run nothing and succeed at once)' : `work dir ${cfg.workDir}`;
      process.stderr.write(`drover worker ${agent.workerId}: ${cfg.slots} slots, servers ${cfg.servers.join(', ')}, ${runs}\n`);
    });
}
