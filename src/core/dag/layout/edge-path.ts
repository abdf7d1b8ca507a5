/**
 * An edge's route (place.ts) as an SVG path: a segment between points that
 * differ in both x and y is the S-curve between two layers (a cubic Bézier
 * whose ends leave and arrive vertically); any other segment is a straight
 * line. Coordinates are rounded to 0.1 px to keep 2,000 paths short.
 */
import type { Point } from './place.js';

const r = (n: number) => Math.round(n * 10) / 10;

export function edgePath(points: readonly Point[]): string {
  const first = points[0];
  if (!first) return '';
  let d = `M${r(first.x)} ${r(first.y)}`;
  for (let i = 1; i < points.length; i++) {
    const a = points[i - 1]!;
    const b = points[i]!;
    if (a.x === b.x || a.y === b.y) {
      d += `L${r(b.x)} ${r(b.y)}`;
      continue;
    }
    const mid = r((a.y + b.y) / 2);
    d += `C${r(a.x)} ${mid} ${r(b.x)} ${mid} ${r(b.x)} ${r(b.y)}`;
  }
  return d;
}
