/**
 * A run's timeline (Gantt): one row per step, in the graph's top-to-bottom
 * order (layer, then definition order: stable while the run goes on), on one
 * time axis from the run's start to its end (or now, ticking, while it runs).
 * Each row shows two bars: released → started (waiting for a worker slot,
 * light) and started → ended (running, in the state's colour). Steps on the
 * critical path are marked by a ◆ before the name, a bold name and an
 * outlined bar (not by colour alone); a step that never ran says why in its
 * row. SVG with attributes only (no style attributes: CSP); the axis stays
 * above the rows, which scroll inside their frame when there are many. It is
 * built once the page has painted (the graph first).
 */
import { memo, useMemo, useRef } from 'react';
import { stepLayers } from '../../../src/core/dag/layout.js';
import type { DagRunDetail, DagRunStep } from '../api/types';
import { formatDuration } from '../format/duration';
import { liveSpan, timeTicks } from '../dag/time-ticks';
import { skipReasonShort, skipReasonText } from '../dag/step-text';
import { useElementWidth } from '../hooks/use-element-width';
import { useNow } from '../hooks/use-now';
import { useAfterPaint } from '../hooks/use-after-paint';

const ROW_H = 22;
const BAR_H = 12;
const AXIS_H = 22;
const CHAR_PX = 7;
const SCROLLBAR_PX = 16;

const at = (iso: string | null) => (iso === null ? null : Date.parse(iso));

/** The time scale: x of a time, shared by the axis and every row. */
interface Scale {
  start: number;
  span: number;
  labelW: number;
  chartW: number;
}

const xOf = (sc: Scale, t: number) => sc.labelW + ((t - sc.start) / sc.span) * sc.chartW;

export function DagGantt({ detail, shapeKey }: { detail: DagRunDetail; shapeKey: string }) {
  const frame = useRef<HTMLDivElement>(null);
  const measured = useElementWidth(frame);
  const width = measured ?? 0;
  // Built after the page's first paint: the graph above comes first (hooks/use-after-paint.ts).
  const ready = useAfterPaint();
  const running = detail.run.state === 'running';
  const now = useNow(running ? 1000 : 60_000);
  const steps = detail.steps;
  // The row order depends on the shape only.
  const order = useMemo(() => {
    const layers = stepLayers(steps);
    return steps.map((_, i) => i).sort((a, b) => layers[a]! - layers[b]! || a - b);
  }, [shapeKey]);

  const start = Date.parse(detail.run.createdAt);
  let end = at(detail.run.endedAt) ?? now;
  for (const s of steps) end = Math.max(end, at(s.endedAt) ?? (s.startedAt && !s.endedAt ? now : start));
  // While the run goes on the axis runs to a round length past now and stays put (rows that ended need not redraw each second).
  const span = running ? liveSpan(end - start) : Math.max(1, end - start);
  const labelW = width < 560 ? 104 : 200;
  // Room on the right for the rows' scrollbar (many rows scroll), so axis and rows share one scale.
  const chartW = Math.max(80, width - labelW - 12 - SCROLLBAR_PX);
  const scale = useMemo<Scale>(() => ({ start, span, labelW, chartW }), [start, span, labelW, chartW]);
  const rowsW = Math.max(0, width - SCROLLBAR_PX);
  const ticks = timeTicks(span, Math.max(2, Math.floor(chartW / 90)));
  const maxChars = Math.floor((labelW - 22) / CHAR_PX);
  const height = steps.length * ROW_H;

  if (measured === null || !ready) return <div className="gantt gantt-pending" ref={frame} aria-busy="true" />;
  return (
    <div className="gantt" ref={frame}>
      <svg className="gantt-axis" width={width} height={AXIS_H} aria-hidden="true">
        {ticks.map((t) => (
          <g key={t} transform={`translate(${xOf(scale, start + t)} 0)`}>
            <line y1={AXIS_H - 6} y2={AXIS_H} className="gantt-tick" />
            <text y={AXIS_H - 9} textAnchor={t === 0 ? 'start' : 'middle'} className="gantt-tick-label">
              {t === 0 ? '0' : `+${formatDuration(t)}`}
            </text>
          </g>
        ))}
      </svg>
      <div className="gantt-scroll" tabIndex={0} role="region" aria-label="Timeline of the steps" data-testid="gantt-scroll">
        <svg className="gantt-rows" width={rowsW} height={height} role="list" aria-label="Steps over time" data-testid="gantt">
          {ticks.map((t) => (
            <line key={t} x1={xOf(scale, start + t)} x2={xOf(scale, start + t)} y1={0} y2={height} className="gantt-grid" aria-hidden="true" />
          ))}
          {order.map((i, row) => {
            const s = steps[i]!;
            // Only a step still going depends on the clock.
            const live = s.endedAt === null && (s.startedAt !== null || s.releasedAt !== null);
            return <GanttRow key={s.name} step={s} y={row * ROW_H} scale={scale} now={live ? now : 0} maxChars={maxChars} />;
          })}
        </svg>
      </div>
    </div>
  );
}

interface RowProps {
  step: DagRunStep;
  y: number;
  scale: Scale;
  now: number;
  maxChars: number;
}

/** Equal when what a row draws is: a refetch brings new step objects for every step, most of them unchanged. */
function sameRow(a: RowProps, b: RowProps): boolean {
  const s = a.step;
  const t = b.step;
  return (
    a.y === b.y &&
    a.scale === b.scale &&
    a.now === b.now &&
    a.maxChars === b.maxChars &&
    s.name === t.name &&
    s.state === t.state &&
    s.releasedAt === t.releasedAt &&
    s.startedAt === t.startedAt &&
    s.endedAt === t.endedAt &&
    s.critical === t.critical &&
    s.skipReason === t.skipReason
  );
}

const GanttRow = memo(function GanttRow({ step: s, y, scale, now, maxChars }: RowProps) {
  const x = (t: number) => xOf(scale, t);
  const labelW = scale.labelW;
  const released = at(s.releasedAt);
  const started = at(s.startedAt);
  const endedAt = at(s.endedAt);
  // `now` is 0 for a row that has ended (see DagGantt): its bars end at its own times.
  const ended = endedAt ?? (started !== null ? now : null);
  const waitEnd = started ?? endedAt ?? (now || null);
  const mark = s.critical ? '◆ ' : '';
  const name = s.name.length + mark.length > maxChars ? `${mark}${s.name.slice(0, Math.max(1, maxChars - mark.length - 1))}…` : `${mark}${s.name}`;
  const ran = started !== null && ended !== null ? ended - started : null;
  const waited = released !== null && waitEnd !== null ? waitEnd - released : null;
  const words = [
    `${s.name}: ${s.state}`,
    ran !== null ? `ran ${formatDuration(ran)}${s.endedAt === null ? ' so far' : ''}` : s.state === 'skipped' ? `skipped: ${skipReasonText(s.skipReason)}` : 'not started',
    waited !== null && waited > 0 ? `waited ${formatDuration(waited)} for a worker` : null,
    s.critical ? 'on the critical path' : null,
  ].filter(Boolean);
  const barY = (ROW_H - BAR_H) / 2;
  return (
    <g transform={`translate(0 ${y})`} className={`gantt-row gantt-${s.state}${s.critical ? ' gantt-critical' : ''}`} role="listitem" aria-label={words.join(', ')} data-step={s.name} data-critical={String(s.critical)}>
      <title>{words.join('\n')}</title>
      <text x={4} y={ROW_H / 2 + 4} className="gantt-label">
        {name}
      </text>
      {released !== null && waitEnd !== null && waitEnd > released && (
        <rect x={x(released)} y={barY + 2} width={Math.max(1, x(waitEnd) - x(released))} height={BAR_H - 4} className="gantt-wait" data-kind="wait" />
      )}
      {started !== null && ended !== null && (
        <rect x={x(started)} y={barY} width={Math.max(2, x(ended) - x(started))} height={BAR_H} rx={2} className="gantt-run" data-kind="run" />
      )}
      {started === null && s.state !== 'waiting' && s.state !== 'ready' && (
        <text x={labelW + 4} y={ROW_H / 2 + 4} className="gantt-note">
          {s.state === 'skipped' ? skipReasonShort(s.skipReason) : s.state}
        </text>
      )}
    </g>
  );
}, sameRow);
