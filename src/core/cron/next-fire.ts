/**
 * Next fire times of a schedule, as pure functions of (schedule, instant).
 *
 * Library: croner 11, USED AS IS for the computation, with one option chosen
 * (`fixedTimeRule: 'no-wildcard'`) and its answers checked (whole seconds,
 * strictly after, ascending). It passes the DST cases of issue 11 in
 * America/New_York and Europe/Berlin (test/core/cron-dst.test.ts); with its
 * default rule ('single-value') it did not: `30 2,14 * * *` and `0,30 2 * * *`
 * silently skipped 02:30 on a spring-forward day.
 *
 * Daylight-saving rule (the one croner implements with that option):
 *   - A schedule is FIXED-TIME when its second, minute and hour fields hold
 *     no `*` and no step (`30 2 * * *`, `30 2,14 * * *`, `0 1-3 * * *`): it
 *     names wall-clock times.
 *       skipped hour (spring forward): a time inside the gap (02:30) fires
 *         once, at the first instant that exists after it (03:00 local); two
 *         times in the same gap (02:00 and 02:30) fire once together there.
 *       repeated hour (fall back): a time inside it (01:30) fires once, at
 *         its FIRST occurrence (daylight time), never at the second.
 *   - Every other schedule (`0 * * * *`, `* /15 * * * *`, `* 2 * * *`) is
 *     ELAPSED-TIME: it fires at every instant whose local wall-clock reading
 *     matches, so it follows real time: in the gap it skips the nonexistent
 *     readings, in the repeated hour it fires in both passes. Hence hourly
 *     fires 23 times on a spring-forward day and 25 on a fall-back day, each
 *     exactly 3600 s after the previous (no hour skipped, none doubled), and
 *     `* /15` fires every 15 real minutes through both passes of 01:00-01:59.
 * Day-of-month and day-of-week, when both are restricted, match on either
 * (classic Vixie cron OR; croner's default).
 *
 * Fire times depend only on the schedule and the instant passed in, never
 * on when a run started or finished, so long runs cause no drift.
 */
import { Cron } from 'croner';
import { InvalidInputError } from '../errors.js';
import type { Schedule } from './schedule.js';

/** Compiled croner patterns, per Schedule value (a Schedule is immutable). */
const compiled = new WeakMap<Schedule, Cron>();

/** Builds (or reuses) the croner instance; throws croner's error for a bad pattern. No timer is started. */
export function compile(schedule: Schedule): Cron {
  let c = compiled.get(schedule);
  if (!c) {
    c = new Cron(schedule.expr, {
      timezone: schedule.tz,
      mode: '5-or-6-parts',
      fixedTimeRule: 'no-wildcard',
      domAndDow: false,
      sloppyRanges: false,
      alternativeWeekdays: false,
    });
    compiled.set(schedule, c);
  }
  return c;
}

/**
 * Answers already computed, per Schedule value: spans [from, to) such that
 * the first fire time after any instant in the span is `to`. That holds for
 * every instant x with from <= x < to once firstFireAfter(from) = to: `to`
 * is a fire time after x, and one between x and `to` would also lie between
 * `from` and `to`. A span grows down to the earliest instant asked about with
 * the same answer.
 *
 * Why: croner takes 45-60 µs per nextRun with a time zone (measured on the
 * shared 2-core machine, `* * * * *` in UTC and Asia/Shanghai; 9 µs without
 * one), and planDue asks 4-5 times per schedule, so planning 10,000
 * schedules due at the same second cost 2.5 s of CPU before any of them was
 * written. Schedules due together mostly share an expression and zone (the
 * firing loop keeps one Schedule per pair), and their questions fall in the
 * same spans: the pass then asks croner a few times per distinct pair.
 */
const spans = new WeakMap<Schedule, Array<{ from: number; to: number }>>();
/** Spans kept per Schedule (the most recently added); a plan's questions fall in a few. */
const MAX_SPANS = 8;

/** The first fire time strictly after `afterMs`, or null if there is none (before year 10000). */
export function firstFireAfter(schedule: Schedule, afterMs: number): number | null {
  let known = spans.get(schedule);
  if (known) {
    for (const s of known) if (s.from <= afterMs && afterMs < s.to) return s.to;
  }
  const d = compile(schedule).nextRun(new Date(afterMs));
  if (d === null) return null;
  const t = d.getTime();
  // Contract checks on the library's answer: a violation is a croner bug that
  // would double or lose runs, so fail loudly instead of firing on it.
  if (!(t > afterMs) || t % 1000 !== 0) throw new Error(`croner returned ${d.toISOString()} for "${schedule.expr}" after ${new Date(afterMs).toISOString()}`);
  if (!known) spans.set(schedule, (known = []));
  const same = known.find((s) => s.to === t);
  if (same) same.from = Math.min(same.from, afterMs);
  else {
    if (known.length >= MAX_SPANS) known.shift();
    known.push({ from: afterMs, to: t });
  }
  return t;
}

/** Upper bound for one `nextFireTimes` call (what `drover cron next --count` may ask for). */
export const MAX_NEXT_COUNT = 1000;

/** The next `count` fire times strictly after `afterMs`, ascending (fewer only if the schedule ends). */
export function nextFireTimes(schedule: Schedule, afterMs: number, count: number): number[] {
  if (!Number.isFinite(afterMs)) throw new InvalidInputError('from', 'expected a time');
  if (!Number.isInteger(count) || count < 1 || count > MAX_NEXT_COUNT) throw new InvalidInputError('count', `expected an integer 1-${MAX_NEXT_COUNT}`);
  const out: number[] = [];
  let t: number | null = afterMs;
  while (out.length < count && (t = firstFireAfter(schedule, t)) !== null) out.push(t);
  return out;
}

/**
 * The latest fire time s with floorMs < s < beforeMs, or null. Bounded work
 * however far apart the two are (a per-second schedule over years): gallops
 * back from `beforeMs` by doubling spans, then alternates a forward step with
 * a bisection, each probe one forward computation, so about 2 log2(gap) probes
 * at worst and 2-3 for a regular schedule. It relies on firstFireAfter being
 * monotone (the set of fire times is fixed), which the DST tests check by
 * comparing chained and independent computations.
 */
export function latestFireBefore(schedule: Schedule, beforeMs: number, floorMs: number): number | null {
  const after = (t: number): number | null => {
    const s = firstFireAfter(schedule, t);
    return s !== null && s < beforeMs ? s : null;
  };
  if (!(floorMs < beforeMs)) return null;
  let cand = after(floorMs);
  if (cand === null) return null;
  // Invariant: cand is a fire time < beforeMs; no fire time lies in (bad, beforeMs).
  let bad = beforeMs - 1;
  for (let span = 1000; ; span *= 2) {
    const probe = beforeMs - 1 - span;
    if (probe <= cand) break;
    const s = after(probe);
    if (s !== null) {
      cand = s;
      break;
    }
    bad = probe;
  }
  for (;;) {
    const s = after(cand);
    if (s === null) return cand;
    cand = s;
    if (bad - cand <= 1) continue;
    const mid = cand + Math.floor((bad - cand) / 2);
    const m = after(mid);
    if (m !== null) cand = m;
    else bad = mid;
  }
}
