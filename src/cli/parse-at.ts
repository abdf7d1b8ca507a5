/**
 * `drover submit --at TIME`: when to run a task, as the API's `runAt` (an
 * ISO 8601 time with a zone). Kept simple on purpose:
 *   HH:MM or HH:MM:SS          the next such local time: today, or tomorrow if it has passed
 *   2026-12-01T18:00[:SS]      local time (also with a space instead of T)
 *   2026-12-01T18:00:00Z       with a zone (Z or ±HH:MM): that instant
 * Anything else is a usage error naming the flag. Pure: `now` is given.
 */
import { parseIsoInstant } from '../core/iso-instant.js';
import { UsageError } from './usage-error.js';

const CLOCK = /^([01]?\d|2[0-3]):([0-5]\d)(?::([0-5]\d))?$/;
const LOCAL = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2}))?$/;

const HINT = 'expected HH:MM (the next such local time), a local YYYY-MM-DDTHH:MM, or an ISO 8601 time with a zone such as 2026-12-01T18:00:00Z';

/** The runAt to send for `--at raw` (ISO 8601, UTC). */
export function parseAtFlag(raw: string, now: Date = new Date()): string {
  const s = raw.trim();
  let t: number;
  let zoned: number | null;
  const c = CLOCK.exec(s);
  const l = LOCAL.exec(s);
  if (c) {
    const d = new Date(now.getFullYear(), now.getMonth(), now.getDate(), Number(c[1]), Number(c[2]), Number(c[3] ?? 0));
    if (d.getTime() <= now.getTime()) d.setDate(d.getDate() + 1);
    t = d.getTime();
  } else if (l) {
    const [y, mo, da, h, mi, se] = l.slice(1).map((x) => Number(x ?? 0)) as [number, number, number, number, number, number];
    const d = new Date(y, mo - 1, da, h, mi, se);
    // new Date() rolls 2026-02-30 over to March: refuse a date that is not on the calendar.
    if (d.getMonth() !== mo - 1 || d.getDate() !== da || d.getHours() !== h) throw new UsageError(`invalid --at "${raw}": no such local time`);
    t = d.getTime();
  } else if ((zoned = parseIsoInstant(s)) !== null) {
    t = zoned;
  } else if (/^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}.*([Zz]|[+-]\d{2}:?\d{2})$/.test(s)) {
    // Shaped like a zoned time, but a field is off the calendar or the clock (2027-02-30, T24:00).
    throw new UsageError(`invalid --at "${raw}": no such time`);
  } else {
    throw new UsageError(`invalid --at "${raw}": ${HINT}`);
  }
  if (!Number.isFinite(t)) throw new UsageError(`invalid --at "${raw}": ${HINT}`);
  return new Date(t).toISOString();
}
