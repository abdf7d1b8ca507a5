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
import type { CreateScheduleRequest } from '../../client/schedule-types.js';
import { safeText } from '../output.js';
import { parseIntFlag } from '../parse.js';
import { UsageError } from '../usage-error.js';
import { parseScheduleName } from '../schedule-name.js';
import { buildSubmitRequest, type SubmitFlags } from './submit.js';

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
  json?: boolean;
}

/** The POST /v1/schedules body, or a UsageError naming the flag. The task's fields go through `drover submit`'s rules. */
export function buildCreateScheduleRequest(name: string, argv: readonly string[], f: CronAddFlags, readScript?: (file: string) => string): CreateScheduleRequest {
  const schedule = parseScheduleFlags(f.schedule, f.tz);
  const req: CreateScheduleRequest = { name: parseScheduleName(name), schedule: schedule.expr, task: {} };
  if (f.tz !== undefined) req.tz = schedule.tz;
  if (f.overlap !== undefined) req.overlap = policy<OverlapPolicy>('--overlap', f.overlap, parseOverlapPolicy);
  if (f.catchup !== undefined) req.catchup = policy<CatchupPolicy>('--catchup', f.catchup, parseCatchupPolicy);
  if (f.maxCatchup !== undefined) req.maxCatchup = parseIntFlag('--max-catchup', f.maxCatchup, 1, MAX_CATCHUP_CAP);
  if (argv.length === 0 && f.script === undefined) throw new UsageError(`missing command: drover cron add ${safeText(name)} --schedule EXPR -- CMD [ARGS...] (or --script FILE)`);
  const { name: fileName, ...task } = buildSubmitRequest(argv, { ...f, name: f.taskName }, readScript);
  // Without --task-name the server names each run after the schedule (not after a --script file).
  req.task = f.taskName !== undefined ? { ...task, name: fileName } : task;
  return req;
}

/** `--from`: an ISO 8601 time with a zone (a local time would be read in this machine's zone, not --tz). */
const ISO_WITH_ZONE = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?([Zz]|[+-]\d{2}:?\d{2})$/;

export function parseFromFlag(raw: string | undefined, now: number): number {
  if (raw === undefined) return now;
  const t = ISO_WITH_ZONE.test(raw.trim()) ? Date.parse(raw.trim()) : NaN;
  if (!Number.isFinite(t)) throw new UsageError(`invalid --from "${safeText(raw)}": expected an ISO 8601 time with a zone, e.g. 2026-03-08T00:00:00Z or 2026-03-08T00:00:00-05:00`);
  return t;
}

export function parseCountFlag(raw: string | undefined): number {
  return raw === undefined ? 5 : parseIntFlag('--count', raw, 1, MAX_NEXT_COUNT);
}
