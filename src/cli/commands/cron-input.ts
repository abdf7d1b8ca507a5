/**
 * Flag validation of `drover cron` (commands/cron.ts): pure functions that
 * return what the request needs or throw UsageError naming the flag, so bad
 * input never reaches the server. The expression and zone are checked with
 * the server's own parser (core/cron/schedule.ts), so what passes here is
 * what the server accepts.
 */
import { InvalidInputError } from '../../core/errors.js';
import { MAX_NEXT_COUNT } from '../../core/cron/next-fire.js';
import { parseOverlapPolicy, type OverlapPolicy } from '../../core/cron/overlap.js';
import { MAX_CATCHUP_CAP, parseCatchupPolicy, type CatchupPolicy } from '../../core/cron/plan-due.js';
import { parseSchedule, type Schedule } from '../../core/cron/schedule.js';
import { parseIsoInstant } from '../../core/iso-instant.js';
import type { CreateScheduleRequest } from '../../client/schedule-types.js';
import { safeText } from '../output.js';
import { parseIntFlag } from '../parse.js';
import { UsageError } from '../usage-error.js';
import { parseScheduleName } from '../schedule-name.js';
import { buildSubmitRequest, type SubmitFlags } from './submit.js';
import { parseDagName, parseParams } from './dag-input.js';

/** The expression and zone, parsed as the server parses them; errors name --schedule (or the operand) and --tz. */
export function parseScheduleFlags(expr: string, tz: string | undefined, exprFlag = '--schedule'): Schedule {
  try {
    return parseSchedule({ expr, tz });
  } catch (e) {
    if (e instanceof InvalidInputError) throw new UsageError(`invalid ${e.field === 'tz' ? '--tz' : exprFlag}: ${e.reason}`);
    throw e;
  }
}

function policy<T>(flag: string, raw: string, parse: (v: unknown) => T): T {
  try {
    return parse(raw);
  } catch (e) {
    if (e instanceof InvalidInputError) throw new UsageError(`invalid ${flag} "${safeText(raw)}": ${e.reason}`);
    throw e;
  }
}

export interface CronAddFlags extends Pick<SubmitFlags, 'retries' | 'retryBase' | 'retryFactor' | 'retryCap' | 'timeout' | 'priority' | 'env' | 'label' | 'require' | 'script' | 'interpreter' | 'cwd'> {
  schedule: string;
  tz?: string;
  overlap?: string;
  catchup?: string;
  maxCatchup?: string;
  taskName?: string;
  /** A DAG schedule: each run is a run of this DAG (no command, no task flags). */
  dag?: string;
  param?: string[];
  json?: boolean;
}

/** The task flags a DAG schedule refuses: its steps' own settings are in the DAG file. */
const TASK_ONLY_FLAGS: ReadonlyArray<[keyof CronAddFlags, string]> = [
  ['taskName', '--task-name'],
  ['retries', '--retries'],
  ['retryBase', '--retry-base'],
  ['retryFactor', '--retry-factor'],
  ['retryCap', '--retry-cap'],
  ['timeout', '--timeout'],
  ['priority', '--priority'],
  ['env', '--env'],
  ['label', '--label'],
  ['require', '--require'],
  ['script', '--script'],
  ['interpreter', '--interpreter'],
  ['cwd', '--cwd'],
];

/** The POST /v1/schedules body, or a UsageError naming the flag. The task's fields go through `drover submit`'s rules. */
export function buildCreateScheduleRequest(name: string, argv: readonly string[], f: CronAddFlags, readScript?: (file: string) => string): CreateScheduleRequest {
  const schedule = parseScheduleFlags(f.schedule, f.tz);
  const req: CreateScheduleRequest = { name: parseScheduleName(name), schedule: schedule.expr, task: {} };
  if (f.tz !== undefined) req.tz = schedule.tz;
  if (f.overlap !== undefined) req.overlap = policy<OverlapPolicy>('--overlap', f.overlap, parseOverlapPolicy);
  if (f.catchup !== undefined) req.catchup = policy<CatchupPolicy>('--catchup', f.catchup, parseCatchupPolicy);
  if (f.maxCatchup !== undefined) {
    req.maxCatchup = parseIntFlag('--max-catchup', f.maxCatchup, 1, MAX_CATCHUP_CAP);
    // It caps what catch-up all runs; with none or latest it would be stored and do nothing.
    if (req.catchup !== 'all') throw new UsageError('--max-catchup caps --catchup all; give --catchup all with it');
  }
  if (f.dag !== undefined) {
    const dagName = parseDagName(f.dag, '--dag');
    if (argv.length > 0) throw new UsageError(`--dag ${safeText(dagName)} runs the DAG's steps; remove the command after -- (${safeText(argv[0]!)})`);
    const taskFlag = TASK_ONLY_FLAGS.find(([k]) => f[k] !== undefined);
    if (taskFlag) throw new UsageError(`${taskFlag[1]} is a task setting; with --dag each step's settings are in the DAG file (drover dag apply)`);
    delete req.task;
    req.dag = { name: dagName, params: parseParams(f.param) };
    return req;
  }
  if (f.param !== undefined) throw new UsageError('--param is a DAG run parameter; use it with --dag NAME');
  if (argv.length === 0 && f.script === undefined) throw new UsageError(`missing command: drover cron add ${safeText(name)} --schedule EXPR -- CMD [ARGS...] (or --script FILE, or --dag NAME)`);
  if (f.taskName !== undefined && (f.taskName.length < 1 || f.taskName.length > 200)) throw new UsageError(`invalid --task-name "${safeText(f.taskName)}": expected 1..200 characters`);
  const { name: fileName, ...task } = buildSubmitRequest(argv, { ...f, name: f.taskName }, readScript);
  // Without --task-name the server names each run after the schedule (not after a --script file).
  req.task = f.taskName !== undefined ? { ...task, name: fileName } : task;
  return req;
}

/** `--from`: an ISO 8601 time with a zone (a local time would be read in this machine's zone, not --tz). */
export function parseFromFlag(raw: string | undefined, now: number): number {
  if (raw === undefined) return now;
  const t = parseIsoInstant(raw.trim());
  if (t === null) throw new UsageError(`invalid --from "${safeText(raw)}": expected an ISO 8601 time with a zone, e.g. 2026-03-08T00:00:00Z or 2026-03-08T00:00:00-05:00`);
  return t;
}

export function parseCountFlag(raw: string | undefined): number {
  return raw === undefined ? 5 : parseIntFlag('--count', raw, 1, MAX_NEXT_COUNT);
}
