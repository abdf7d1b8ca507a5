/**
 * Human durations on the CLI and in the API: "500ms", "30s", "5m", "1h30m", "2d".
 * A bare integer is milliseconds. Units go from the largest to the smallest,
 * each at most once ("1h1h" and "30s1m" are refused: a typo, not a sum).
 * Returns null for anything else, so each caller can name its own field in the error.
 */
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const WHOLE = /^(?:\d+(?:\.\d+)?(?:ms|s|m|h|d))+$/;
const PART = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/g;

export function parseDuration(input: string | number): number | null {
  if (typeof input === 'number') return Number.isFinite(input) && input >= 0 ? Math.round(input) : null;
  const s = input.trim();
  if (/^\d+$/.test(s)) return Number(s);
  if (!WHOLE.test(s)) return null;
  let total = 0;
  let previous = Infinity;
  for (const m of s.matchAll(PART)) {
    const unit = UNIT_MS[m[2]!]!;
    if (unit >= previous) return null;
    previous = unit;
    total += Number(m[1]) * unit;
  }
  return Number.isFinite(total) ? Math.round(total) : null;
}

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  if (ms < 60_000) return `${+(ms / 1000).toFixed(2)}s`;
  // Round to the smaller unit first, so rounding up carries (119.6 s is 2m0s, not 1m60s).
  const s = Math.round(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)}m${s % 60}s`;
  const m = Math.round(ms / 60_000);
  return `${Math.floor(m / 60)}h${m % 60}m`;
}
