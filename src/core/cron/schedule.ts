/**
 * A schedule as Drover stores it: the cron text, its IANA zone, and whether
 * it has a seconds field. Made only by `parseSchedule`, which rejects
 * anything the next-fire computation (next-fire.ts) could not honour, so a
 * stored Schedule always yields fire times.
 */
import { InvalidInputError } from '../errors.js';
import { checkCronGrammar } from './cron-grammar.js';
import { compile, firstFireAfter } from './next-fire.js';
import { DEFAULT_TZ, timeZoneProblem, zoneNameCase } from './time-zone.js';

export interface Schedule {
  readonly expr: string;
  readonly tz: string;
  /** True for a 6-field expression (leading seconds); nicknames and 5 fields fire at second 0. */
  readonly hasSeconds: boolean;
}

export interface ScheduleInput {
  expr: string;
  tz?: string | null;
}

/**
 * Validates and freezes a schedule. Errors name the field: `schedule` for the
 * expression (reason quoted with the expression, e.g.
 * `"61 * * * *": minute 61 is out of range 0-59`), `tz` for the zone.
 * The expression is kept trimmed, with single spaces between fields.
 */
export function parseSchedule(input: ScheduleInput): Schedule {
  if (typeof input.expr !== 'string' || input.expr.trim() === '') throw new InvalidInputError('schedule', 'a cron expression is required');
  const expr = input.expr.trim().split(/\s+/).join(' ');
  const given = input.tz ?? DEFAULT_TZ;
  if (typeof given !== 'string') throw new InvalidInputError('tz', 'expected an IANA time zone name');
  const tzProblem = timeZoneProblem(given);
  if (tzProblem) throw new InvalidInputError('tz', tzProblem);
  const tz = zoneNameCase(given);

  const grammar = checkCronGrammar(expr);
  if (!grammar.ok) throw new InvalidInputError('schedule', `"${expr}": ${grammar.reason}`);
  const schedule: Schedule = Object.freeze({ expr, tz, hasSeconds: grammar.hasSeconds });
  try {
    compile(schedule);
  } catch (e) {
    const msg = e instanceof Error ? e.message.replace(/^CronPattern:\s*/, '') : String(e);
    throw new InvalidInputError('schedule', `"${expr}": ${msg}`);
  }
  // Every promised expression without a year repeats within 28 years, so one
  // that has no time after the epoch never fires (e.g. `0 0 30 2 *`).
  if (firstFireAfter(schedule, 0) === null) throw new InvalidInputError('schedule', `"${expr}": never fires (no such date)`);
  return schedule;
}
