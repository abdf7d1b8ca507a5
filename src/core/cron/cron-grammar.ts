/**
 * The cron syntax Drover promises (issue 11), checked before croner sees an
 * expression, so that croner's extensions cannot slip in and become something
 * we would have to support forever:
 *   - 5 fields (minute hour day-of-month month day-of-week) or 6 with a
 *     leading seconds field (as croner and Quartz);
 *   - per field: `*`, a value, a range `a-b`, a step on `*` or a range
 *     (`* /n`, `a-b/n`), and comma lists of those;
 *   - month names JAN..DEC in the month field, day names SUN..SAT in the
 *     day-of-week field (case-insensitive); day-of-week 0-7 (0 and 7 are Sunday);
 *   - nicknames @yearly, @annually, @monthly, @weekly, @daily, @hourly.
 * A zone prefix (`TZ=Europe/Paris 0 3 * * *`, `CRON_TZ=...`, as some crons
 * take it) is refused with a reason that points at the schedule's own zone
 * (`tz`, `--tz` in the CLI): the zone is a field of its own here, so that
 * one expression never carries two.
 * Rejected although croner accepts them (not promised by the issue):
 *   the 7th (year) field, `?`, `L`, `W`, `LW`, `#` (nth weekday), the `+`
 *   day-of-week AND modifier, `@midnight`, and anything croner's sloppy mode
 *   would take (`/5`, `5/5`).
 * Returns null when the text is well formed, else the reason. Reasons that
 * only croner knows (a range whose start is above its end...) come from croner.
 */

export interface FieldSpec {
  name: string;
  min: number;
  max: number;
  names?: readonly string[];
  /** Value of names[0]; month names start at 1, day names at 0. */
  namesFrom?: number;
}

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'] as const;
const DAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'] as const;

// 'seconds', not 'second': "second field" would read as the expression's second field (the minute of 6).
const SECOND: FieldSpec = { name: 'seconds', min: 0, max: 59 };
const FIVE_FIELDS: readonly FieldSpec[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day-of-month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: MONTHS, namesFrom: 1 },
  { name: 'day-of-week', min: 0, max: 7, names: DAYS, namesFrom: 0 },
];

export const NICKNAMES: ReadonlySet<string> = new Set(['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@hourly']);

/** `TZ=zone` or `CRON_TZ=zone` as the first word: [, the prefix's name, the zone]. */
const ZONE_PREFIX = /^((?:CRON_)?TZ)=(.*)$/i;

export type GrammarResult = { ok: true; hasSeconds: boolean } | { ok: false; reason: string };

export function checkCronGrammar(expr: string): GrammarResult {
  const text = expr.trim();
  if (text.startsWith('@')) {
    return NICKNAMES.has(text.toLowerCase())
      ? { ok: true, hasSeconds: false }
      : { ok: false, reason: `unknown nickname ${text} (expected one of ${[...NICKNAMES].join(', ')})` };
  }
  const fields = text.split(/\s+/).filter((f) => f !== '');
  const zone = ZONE_PREFIX.exec(fields[0] ?? '');
  if (zone) {
    return { ok: false, reason: `the time zone does not go in the expression: give ${zone[2] ? `"${zone[2]}"` : 'an IANA zone name'} as the tz (--tz on the command line) and the expression without ${zone[1]}=` };
  }
  if (fields.length !== 5 && fields.length !== 6) {
    return { ok: false, reason: `expected 5 fields (minute hour day-of-month month day-of-week) or 6 with a leading seconds field, got ${fields.length}` };
  }
  const specs = fields.length === 6 ? [SECOND, ...FIVE_FIELDS] : FIVE_FIELDS;
  for (let i = 0; i < fields.length; i++) {
    const reason = checkField(fields[i]!, specs[i]!);
    if (reason) return { ok: false, reason };
  }
  return { ok: true, hasSeconds: fields.length === 6 };
}

function checkField(field: string, spec: FieldSpec): string | null {
  for (const item of field.split(',')) {
    const reason = checkItem(item, spec);
    if (reason) return reason;
  }
  return null;
}

const ITEM = /^(\*|[A-Za-z0-9]+(?:-[A-Za-z0-9]+)?)(?:\/([0-9]+))?$/;

function checkItem(item: string, spec: FieldSpec): string | null {
  const m = ITEM.exec(item);
  if (!m) return `${spec.name} field has an unsupported item '${item}' (use *, N, A-B, */N, A-B/N or a list of those)`;
  const [, base, step] = m;
  if (step !== undefined) {
    const n = Number(step);
    if (n < 1 || n > spec.max - spec.min + 1) return `${spec.name} step ${step} is out of range 1-${spec.max - spec.min + 1}`;
    if (!base!.includes('-') && base !== '*') return `${spec.name} step needs * or a range before it ('${item}')`;
  }
  if (base === '*') return null;
  for (const part of base!.split('-')) {
    const reason = checkValue(part, spec);
    if (reason) return reason;
  }
  return null;
}

function checkValue(value: string, spec: FieldSpec): string | null {
  if (/^[0-9]+$/.test(value)) {
    const n = Number(value);
    return n >= spec.min && n <= spec.max ? null : `${spec.name} ${value} is out of range ${spec.min}-${spec.max}`;
  }
  if (spec.names?.includes(value.toUpperCase())) return null;
  return spec.names
    ? `${spec.name} '${value}' is not a number or a name (${spec.names.join(', ')})`
    : `${spec.name} '${value}' is not a number`;
}
