/**
 * A uPlot time-series chart in a box of fixed height (no layout shift when
 * data arrives), resized with its container and rebuilt when the colour
 * scheme changes. uPlot draws on a canvas and styles through the CSSOM, which
 * the CSP (style-src 'self') allows.
 */
import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import { chartColors, type ChartColors } from './theme-colors';
import { useColorScheme } from '../hooks/use-color-scheme';
import { formatClock, formatDay } from '../format/time';

export interface ChartSeries {
  label: string;
  color: (c: ChartColors) => string;
  values: (number | null)[];
}

/** Points only where something happened (a value above 0): the zero baseline stays a plain line. */
function activeIndexes(u: uPlot, seriesIdx: number): number[] {
  const ys = u.data[seriesIdx] ?? [];
  const out: number[] = [];
  for (let i = 0; i < ys.length; i++) {
    const y = ys[i];
    if (y !== null && y !== undefined && y > 0) out.push(i);
  }
  return out;
}

const COUNT_INCRS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 20_000, 50_000, 100_000, 1_000_000];

interface Props {
  x: number[];
  series: ChartSeries[];
  height?: number;
  label: string;
  yUnit?: string;
}

export function TimeChart({ x, series, height = 180, label, yUnit = '' }: Props) {
  const host = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const scheme = useColorScheme();
  const shape = series.map((s) => s.label).join('|');

  useEffect(() => {
    const el = host.current;
    if (!el) return;
    const c = chartColors(el);
    const fmt = (v: number) => (yUnit === 's' ? (v < 1 ? `${Math.round(v * 1000)} ms` : `${+v.toFixed(1)} s`) : String(Math.round(v)));
    const opts: uPlot.Options = {
      width: Math.max(200, el.clientWidth),
      height,
      legend: { show: true, live: true },
      cursor: { points: { size: 6 }, drag: { x: false, y: false } },
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(yUnit === 's' ? 0.01 : 1, max * 1.1)] } },
      axes: [
        {
          stroke: c.text,
          grid: { stroke: c.grid, width: 1 },
          ticks: { stroke: c.grid },
          // 24-hour, as every other time on the dashboard (uPlot's default is 12-hour with am/pm); the day under
          // the first tick and wherever it changes. uPlot's time scale is in seconds.
          values: (_u, vals) =>
            vals.map((v, i) => {
              const ms = v * 1000;
              const newDay = i === 0 || new Date(vals[i - 1]! * 1000).getDate() !== new Date(ms).getDate();
              return newDay ? `${formatClock(ms)}\n${formatDay(ms)}` : formatClock(ms);
            }),
        },
        {
          stroke: c.text,
          grid: { stroke: c.grid, width: 1 },
          ticks: { stroke: c.grid },
          size: 64,
          // Counts are whole numbers: no 0.5 ticks.
          ...(yUnit === 's' ? {} : { incrs: COUNT_INCRS }),
          values: (_u, vals) => vals.map(fmt),
        },
      ],
      series: [
        { value: (_u: uPlot, v: number | null) => (v === null ? '—' : formatClock(v * 1000)) },
        ...series.map((s) => ({
          label: s.label,
          stroke: s.color(c),
          width: 2,
          // Points too: a minute with activity between empty ones (or latency, null without
          // starts) is a single point that a line alone would not show.
          points: { show: true, size: 5, fill: s.color(c), filter: activeIndexes },
          spanGaps: false,
          value: (_u: uPlot, v: number | null) => (v === null ? '—' : fmt(v)),
        })),
      ],
    };
    const u = new uPlot(opts, [x, ...series.map((s) => s.values)] as uPlot.AlignedData, el);
    plot.current = u;
    const ro = new ResizeObserver(() => u.setSize({ width: Math.max(200, el.clientWidth), height }));
    ro.observe(el);
    return () => {
      ro.disconnect();
      u.destroy();
      plot.current = null;
    };
    // Data updates go through setData below; only the shape, theme or height rebuild the chart.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [shape, scheme, height, yUnit]);

  useEffect(() => {
    plot.current?.setData([x, ...series.map((s) => s.values)] as uPlot.AlignedData);
  }, [x, series]);

  return <div className="chart" ref={host} role="img" aria-label={label} style={{ minHeight: height + 40 }} />;
}
