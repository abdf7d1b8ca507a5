/**
 * An instant written as ISO 8601 WITH a zone (`2026-03-08T00:00:00Z`,
 * `2026-03-08T00:00:00-05:00`), as the API's `runAt`, `GET /v1/cron/next`'s
 * `from` and `drover cron next --from` take it. A time without a zone is
 * refused, not read in some machine's zone: the server's, the CLI's and the
 * schedule's zone may all differ. Returns null for anything else, so each
 * caller can name its own field in the error.
 */
const ISO_WITH_ZONE = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?([Zz]|[+-]\d{2}:?\d{2})$/;

export function parseIsoInstant(text: string): number | null {
  const t = ISO_WITH_ZONE.test(text) ? Date.parse(text) : NaN;
  return Number.isFinite(t) ? t : null;
}
