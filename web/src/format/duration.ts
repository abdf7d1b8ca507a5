/** Durations for people: "340 ms", "4.2 s", "3 min 05 s", "2 h 10 min". */
export function formatDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms) || ms < 0) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 10_000) return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return s % 60 ? `${m} min ${String(s % 60).padStart(2, '0')} s` : `${m} min`;
  const h = Math.floor(m / 60);
  if (h < 48) return m % 60 ? `${h} h ${String(m % 60).padStart(2, '0')} min` : `${h} h`;
  const d = Math.floor(h / 24);
  return h % 24 ? `${d} d ${h % 24} h` : `${d} d`;
}

/** Elapsed time of something still running, or its recorded duration. */
export function elapsedMs(startedAt: string | null, endedAt: string | null, durationMs: number | null, now: number): number | null {
  if (durationMs !== null) return durationMs;
  if (!startedAt) return null;
  const end = endedAt ? Date.parse(endedAt) : now;
  return Math.max(0, end - Date.parse(startedAt));
}
