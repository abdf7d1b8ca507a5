/** Chart colours from the CSS custom properties of the current theme (styles/base.css), so charts follow light/dark. */
export interface ChartColors {
  text: string;
  grid: string;
  started: string;
  succeeded: string;
  failed: string;
  cancelled: string;
  latency: string;
  latencyMax: string;
}

export function chartColors(el: Element = document.documentElement): ChartColors {
  const cs = getComputedStyle(el);
  const v = (name: string, fallback: string) => cs.getPropertyValue(name).trim() || fallback;
  return {
    text: v('--text-muted', '#666'),
    grid: v('--border', '#ddd'),
    started: v('--c-running', '#2f6fdf'),
    succeeded: v('--c-succeeded', '#1f8a4c'),
    failed: v('--c-failed', '#c62828'),
    cancelled: v('--c-cancelled', '#777'),
    latency: v('--c-retrying', '#b26a00'),
    latencyMax: v('--c-waiting', '#6a5acd'),
  };
}
