/**
 * A DAG drawn as a graph (issue 12): steps as boxes in layers, top to bottom,
 * dependencies as edges (core/dag/layout.ts). Used for a definition (plain
 * boxes) and for a run (boxes coloured and marked by state, each a link to
 * its task; the critical path's edges drawn heavier).
 *
 * Size: the drawing is laid out for the width of its frame at the current
 * zoom, so wide layers wrap into rows instead of running off the side; a
 * tall drawing scrolls inside its frame (at most about 70 % of the window).
 * On a phone-wide frame the boxes are narrower (two fit side by side).
 * Zoom changes the SVG's width/height attributes (never a style attribute:
 * the CSP allows none) and relays the graph for the new width. One element
 * per box (with its rect and texts) and one path per kind of edge: at 1,000
 * steps about 4,000 elements.
 *
 * Edges into a step with a condition other than `success` are dashed, and
 * the step says its condition.
 */
import { useMemo, useRef, useState, type MouseEvent } from 'react';
import { useNavigate } from 'react-router';
import { edgePath, layoutDag } from '../../../src/core/dag/layout.js';
import { useElementWidth } from '../hooks/use-element-width';
import { DagGraphNode } from './dag-graph-node';

export interface GraphStep {
  name: string;
  dependsOn: readonly string[];
  when: string;
  state?: string;
  taskId?: string;
  critical?: boolean;
}

interface Props {
  steps: readonly GraphStep[];
  /**
   * Identifies the graph's shape (e.g. the DAG's id and version): the layout
   * is recomputed only when it or the width changes, not on every live update
   * of the steps' states.
   */
  shapeKey: string;
  /** The accessible name of the scrolling frame. */
  label: string;
  /** Step names on the critical path, first to last (a run). */
  criticalPath?: readonly string[];
}

const ZOOMS = [0.5, 0.75, 1, 1.25, 1.5] as const;
const DEFAULT_ZOOM = 2;
/** Below this frame width (a phone) boxes are narrower, so two fit side by side and small layers need not wrap. */
const COMPACT_BELOW_PX = 520;

/** A downward arrowhead whose tip is at (x, y): the end of an edge, at the top of the step it leads to. */
function arrowHead(x: number, y: number, half: number): string {
  const r = (n: number) => Math.round(n * 10) / 10;
  return `M${r(x - half)} ${r(y - half * 1.6)}L${r(x + half)} ${r(y - half * 1.6)}L${r(x)} ${r(y)}Z`;
}
const COMPACT = { nodeWidth: 120, columnGap: 16, layerGap: 44 } as const;
/** The frame's two 1 px borders and a scrollbar (about 15 px where scrollbars take room). */
const FRAME_ALLOWANCE_PX = 18;

export function DagGraph({ steps, shapeKey, label, criticalPath }: Props) {
  const frame = useRef<HTMLDivElement>(null);
  const measured = useElementWidth(frame);
  const navigate = useNavigate();
  const [zoomAt, setZoomAt] = useState(DEFAULT_ZOOM);
  const zoom = ZOOMS[zoomAt]!;
  // Room for the frame's borders and a vertical scrollbar, which a tall graph brings; rounded so a few pixels of resize do not relayout.
  const maxWidth = Math.max(240, Math.floor(((measured ?? 0) - FRAME_ALLOWANCE_PX) / zoom / 16) * 16);
  const compact = (measured ?? 0) < COMPACT_BELOW_PX;
  // Keyed by shape, not by `steps`: states change often, the shape never within a version.
  const layout = useMemo(
    () => (measured === null ? null : layoutDag(steps, compact ? { ...COMPACT, maxWidth } : { maxWidth })),
    [shapeKey, maxWidth, compact, measured === null],
  );
  const pathKey = (criticalPath ?? []).join('\u0000');

  // Edges depend on the shape and the critical path only: a live update of states leaves them alone. They are drawn as one path
  // per kind (plain, into a step with a condition, on the critical path), each edge a subpath ending in an arrowhead subpath
  // of the heads' path: a handful of elements instead of one or two per edge (2,000 at 1,000 steps), which is most of what the
  // browser would otherwise lay out and paint.
  const edges = useMemo(() => {
    if (!layout) return null;
    const path = pathKey === '' ? [] : pathKey.split('\u0000');
    const critical = new Set<string>();
    for (let i = 1; i < path.length; i++) critical.add(`${path[i - 1]}\u0000${path[i]}`);
    const kinds = new Map<string, { lines: string[]; heads: string[] }>();
    for (const e of layout.edges) {
      const from = steps[e.from]!;
      const to = steps[e.to]!;
      const kind = `${to.when !== 'success' ? ' dag-edge-cond' : ''}${critical.has(`${from.name}\u0000${to.name}`) ? ' dag-edge-critical' : ''}`;
      let k = kinds.get(kind);
      if (!k) kinds.set(kind, (k = { lines: [], heads: [] }));
      k.lines.push(edgePath(e.points));
      const tip = e.points[e.points.length - 1]!;
      k.heads.push(arrowHead(tip.x, tip.y, kind.includes('critical') ? 5 : 4));
    }
    // Plain edges first, so the critical path is drawn over them.
    return [...kinds.entries()]
      .sort(([a], [b]) => a.length - b.length)
      .map(([kind, k]) => (
        <g key={kind} className={`dag-edge-group${kind}`} data-edges={k.lines.length}>
          <path d={k.lines.join('')} className={`dag-edge${kind}`} />
          <path d={k.heads.join('')} className="dag-arrow" />
        </g>
      ));
  }, [layout, pathKey]);

  // One handler for every node's link (cheaper than a router Link per node at 1,000 steps): a plain click navigates in the app;
  // a click with a modifier (new tab, new window) is left to the browser.
  const onClick = (e: MouseEvent<SVGSVGElement>) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    const href = (e.target as Element).closest('a[data-task-id]')?.getAttribute('href');
    if (!href) return;
    e.preventDefault();
    void navigate(href);
  };

  return (
    <div className="dag-graph">
      <div className="dag-graph-tools">
        <span className="muted">
          {steps.length} step{steps.length === 1 ? '' : 's'}
          {layout?.wrapped ? ', wide layers wrapped into rows' : ''}
        </span>
        <span className="dag-zoom" role="group" aria-label="Zoom">
          <button type="button" className="btn btn-small" aria-label="Zoom out" disabled={zoomAt === 0} onClick={() => setZoomAt(zoomAt - 1)}>
            −
          </button>
          <button type="button" className="btn btn-small dag-zoom-level" aria-label="Actual size" onClick={() => setZoomAt(DEFAULT_ZOOM)}>
            {Math.round(zoom * 100)} %
          </button>
          <button type="button" className="btn btn-small" aria-label="Zoom in" disabled={zoomAt === ZOOMS.length - 1} onClick={() => setZoomAt(zoomAt + 1)}>
            +
          </button>
        </span>
      </div>
      <div ref={frame} className="dag-graph-scroll" tabIndex={0} role="region" aria-label={label} data-testid="dag-graph-scroll">
        {layout && (
          <svg
            className="dag-svg"
            width={Math.ceil(layout.width) * zoom}
            height={Math.ceil(layout.height) * zoom}
            viewBox={`0 0 ${Math.ceil(layout.width)} ${Math.ceil(layout.height)}`}
            data-testid="dag-graph"
            role="group"
            aria-label="Steps"
            onClick={onClick}
          >
            <g className="dag-edges" aria-hidden="true">
              {edges}
            </g>
            {layout.nodes.map((n) => {
              const s = steps[n.index]!;
              return (
                <DagGraphNode
                  key={s.name}
                  name={s.name}
                  x={n.x}
                  y={n.y}
                  width={n.width}
                  height={n.height}
                  when={s.when}
                  state={s.state}
                  taskId={s.taskId}
                  critical={s.critical}
                />
              );
            })}
          </svg>
        )}
      </div>
    </div>
  );
}
