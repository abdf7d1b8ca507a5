/**
 * Ticks for the run timeline's axis: a step from a fixed ladder of round
 * durations (10 ms … 1 day), the smallest that gives at most `maxTicks`
 * ticks over the span, so labels never crowd whatever the run's length.
 */
const LADDER = [
  10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 15_000, 30_000, 60_000, 120_000, 300_000, 600_000, 900_000, 1_800_000, 3_600_000,
  7_200_000, 10_800_000, 21_600_000, 43_200_000, 86_400_000,
];

/**
 * The axis length for a run still going: a round value from the ladder (or
 * whole days) at least 10 % past `elapsedMs`, so the scale holds still for a
 * while as time passes (only running bars grow) instead of moving every second.
 */
export function liveSpan(elapsedMs: number): number {
  const want = Math.max(1, elapsedMs * 1.1);
  return LADDER.find((s) => s >= want) ?? Math.ceil(want / 86_400_000) * 86_400_000;
}

/** Offsets from the start, in ms: 0, step, 2·step, … ≤ spanMs. */
export function timeTicks(spanMs: number, maxTicks: number): number[] {
  if (!(spanMs > 0) || maxTicks < 1) return [0];
  const step = LADDER.find((s) => spanMs / s <= maxTicks) ?? Math.ceil(spanMs / maxTicks / 86_400_000) * 86_400_000;
  const out: number[] = [];
  for (let t = 0; t <= spanMs + 1e-9; t += step) out.push(t);
  return out;
}
