/**
 * Time zones are IANA names (`Europe/Berlin`, `UTC`), checked against the
 * zone data of the running Node (Intl), which is also what croner computes
 * with, so a zone that passes here is one the next-fire computation knows.
 * The name is kept as the user wrote it (Intl would turn `EST` into
 * `America/Panama`, which reads as a different zone), except for its case:
 * `america/new_york` is stored as `America/New_York` (zoneNameCase), so one
 * zone is not shown, compared and grouped under several spellings. Offsets such as
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

let zoneNames: Map<string, string> | null = null;

/**
 * `tz` in the zone database's case when only its case differs from a name
 * Intl knows (its list of zones, then its name for this zone), else `tz` as given.
 */
export function zoneNameCase(tz: string): string {
  zoneNames ??= new Map(Intl.supportedValuesOf('timeZone').map((n) => [n.toLowerCase(), n]));
  const listed = zoneNames.get(tz.toLowerCase());
  if (listed !== undefined) return listed;
  try {
    const resolved = new Intl.DateTimeFormat('en-US', { timeZone: tz }).resolvedOptions().timeZone;
    return resolved.toLowerCase() === tz.toLowerCase() ? resolved : tz;
  } catch {
    return tz;
  }
}
