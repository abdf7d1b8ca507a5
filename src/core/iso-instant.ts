/**
 * An instant written as ISO 8601 WITH a zone (`2026-03-08T00:00:00Z`,
 * `2026-03-08T00:00:00-05:00`), as the API's `runAt`, `GET /v1/cron/next`'s
 * `from` and `drover cron next --from`/`drover submit --at` take it. A time
 * without a zone is refused, not read in some machine's zone: the server's,
 * the CLI's and the schedule's zone may all differ. Returns null for anything
 * else, so each caller can name its own field in the error.
 *
 * Every field must be on the calendar and the clock: Date.parse alone rolls
 * 2027-02-30 over to March 2 and T24:00 over to the next day, which would run
 * a task on a day nobody wrote.
 */
const ISO_WITH_ZONE = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:[Zz]|[+-](\d{2}):?(\d{2}))$/;

export function parseIsoInstant(text: string): number | null {
  const m = ISO_WITH_ZONE.exec(text);
  if (!m) return null;
  const [y, mo, d, h, mi, s, oh, om] = m.slice(1).map((x) => Number(x ?? 0)) as [number, number, number, number, number, number, number, number];
  const daysInMonth = new Date(Date.UTC(y, mo, 0)).getUTCDate();
  if (mo < 1 || mo > 12 || d < 1 || d > daysInMonth || h > 23 || mi > 59 || s > 59 || oh > 23 || om > 59) return null;
  const t = Date.parse(text);
  return Number.isFinite(t) ? t : null;
}
