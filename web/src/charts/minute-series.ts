/**
 * The per-minute stats (only minutes with activity) → one point per minute
 * over the whole window, zeros filled in, as uPlot's column arrays (x in
 * seconds).
 */
import type { MinuteStat } from '../api/types';

export interface MinuteSeries {
  x: number[];
  started: number[];
  succeeded: number[];
  failed: number[];
  cancelled: number[];
  latencyAvgS: (number | null)[];
  latencyMaxS: (number | null)[];
}

export function minuteSeries(rows: readonly MinuteStat[], untilMs: number, minutes = 60): MinuteSeries {
  const end = Math.floor(untilMs / 60_000) * 60_000;
  const start = end - (minutes - 1) * 60_000;
  const byMinute = new Map<number, MinuteStat>();
  for (const r of rows) byMinute.set(Math.floor(Date.parse(r.minute) / 60_000) * 60_000, r);
  const s: MinuteSeries = { x: [], started: [], succeeded: [], failed: [], cancelled: [], latencyAvgS: [], latencyMaxS: [] };
  for (let t = start; t <= end; t += 60_000) {
    const r = byMinute.get(t);
    s.x.push(t / 1000);
    s.started.push(r?.started ?? 0);
    s.succeeded.push(r?.succeeded ?? 0);
    s.failed.push(r?.failed ?? 0);
    s.cancelled.push(r?.cancelled ?? 0);
    s.latencyAvgS.push(r && r.latencyCount > 0 && r.latencyAvgMs !== null ? r.latencyAvgMs / 1000 : null);
    s.latencyMaxS.push(r && r.latencyCount > 0 && r.latencyMaxMs !== null ? r.latencyMaxMs / 1000 : null);
  }
  return s;
}
