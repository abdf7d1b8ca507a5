/**
 * Time zones are IANA names (`Europe/Berlin`, `UTC`), checked against the
 * zone data of the running Node (Intl), which is also what croner computes
 * with, so a zone that passes here is one the next-fire computation knows.
 * The name is kept as the user wrote it (Intl would turn `EST` into
 * `America/Panama`, which reads as a different zone). Offsets such as
 * `+05:00` are not zones and are rejected: an offset has no DST rules, and
 * the issue promises IANA zones.
 */
export const DEFAULT_TZ = 'UTC';

const ZONE_NAME = /^[A-Za-z][A-Za-z0-9_+\-]*(?:\/[A-Za-z0-9_+\-]+)*$/;

/** Null when `tz` is a zone Node knows, else the reason. */
export function timeZoneProblem(tz: string): string | null {
  if (!ZONE_NAME.test(tz)) return `'${tz}' is not an IANA time zone name (e.g. UTC, Europe/Berlin)`;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return null;
  } catch {
    return `unknown time zone '${tz}' (expected an IANA name, e.g. UTC, Europe/Berlin)`;
  }
}
