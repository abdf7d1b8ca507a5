/**
 * Where to draw a DAG's steps and edges (the dashboard's DAG and run pages,
 * issue 12). Pure: steps in, boxes and routes out; no DOM, no clock. The web
 * app imports it by a relative path (like src/client/types.ts) and the unit
 * tests run it under node (test/core/dag-layout.test.ts).
 *
 * A layered drawing (Sugiyama's scheme, kept small), top to bottom:
 *   1. layers by longest path from the roots; edges spanning several layers
 *      split by dummy nodes (layout/layers.ts);
 *   2. order within layers by barycenter sweeps, keeping the order with the
 *      fewest crossings (layout/order.ts);
 *   3. coordinates: rows under their parents' mean, and layers too wide for
 *      `maxWidth` wrapped into a grid whose gaps carry the edges
 *      (layout/place.ts); edges as S-curves between layers and straight
 *      segments elsewhere (layout/edge-path.ts).
 *
 * Why no library: @dagrejs/dagre (maintained; about 50 kB plus graphlib)
 * lays every layer out as one row, so a 998-step fan-out would be a line
 * about 190,000 px wide, and its edge routes would be wrong once we wrapped
 * that row ourselves; elkjs is a 1.6 MB bundle of transpiled Java. What the pages
 * need (layers, a few sweeps, wrapped grids with routed gaps) is a few
 * hundred lines, tested here without a browser.
 *
 * Cost: linear in steps + edges + dummies per sweep (crossing counts are
 * O(E log V)). Measured by test/core/dag-layout.test.ts on the shared 2-core
 * machine (load average 9-15): a 1,000-step fan-out (start → 998 → end),
 * wrapped, in 1.3-6.6 ms of CPU at best, 6-30 ms cold (the first call) and
 * 17-35 ms median under that load (bound: 100 ms); 1,000 random steps with
 * 1,484 edges (3,348 dummies) in 30-150 ms.
 */
import { buildLayers, type LayerInput } from './layout/layers.js';
import { orderLayers } from './layout/order.js';
import { place, route, type Geometry, type Point } from './layout/place.js';

export { edgePath } from './layout/edge-path.js';
export { stepLayers } from './layout/layers.js';
export type { Point } from './layout/place.js';

export interface LayoutOptions {
  /** Box size and gaps, in px. */
  nodeWidth?: number;
  nodeHeight?: number;
  /** Between boxes side by side, between the rows of a wrapped layer, and between layers. */
  columnGap?: number;
  rowGap?: number;
  layerGap?: number;
  /** The slot a long edge runs through in a layer it crosses. */
  dummyWidth?: number;
  /** Around the drawing. */
  margin?: number;
  /** The widest the drawing may be: a layer that does not fit side by side wraps into rows. Default: never wrap. */
  maxWidth?: number;
  /** Barycenter passes (down, up, down, …). */
  sweeps?: number;
  /** Past this many dummy nodes, edges spanning several layers are drawn straight (layout/layers.ts). */
  maxDummies?: number;
}

export const LAYOUT_DEFAULTS: Required<LayoutOptions> = {
  nodeWidth: 168,
  nodeHeight: 44,
  columnGap: 24,
  rowGap: 24,
  layerGap: 56,
  dummyWidth: 12,
  margin: 12,
  maxWidth: Infinity,
  sweeps: 8,
  maxDummies: 20_000,
};

export interface NodeBox {
  /** The step's index in the input. */
  index: number;
  name: string;
  /** Top-left corner and size, in px. */
  x: number;
  y: number;
  width: number;
  height: number;
  layer: number;
  /** Row within its layer: 0 unless the layer wrapped. */
  row: number;
}

export interface EdgeRoute {
  /** Indexes of the dependency and the dependent step. */
  from: number;
  to: number;
  /** From the dependency's bottom centre to the dependent's top centre; draw with edgePath(). */
  points: Point[];
}

export interface DagLayout {
  width: number;
  height: number;
  /** One per input step, in input order. */
  nodes: NodeBox[];
  /** One per dependency (an unknown step name or a cycle's edge is left out). */
  edges: EdgeRoute[];
  layerCount: number;
  /** Edge crossings left between adjacent layers (counted through dummies). */
  crossings: number;
  /** Whether some layer was wrapped into rows. */
  wrapped: boolean;
  /** Whether the dummy cap was hit (long edges drawn straight). */
  direct: boolean;
}

export function layoutDag(steps: readonly LayerInput[], options: LayoutOptions = {}): DagLayout {
  const o = { ...LAYOUT_DEFAULTS, ...options };
  const geo: Geometry = {
    nodeWidth: o.nodeWidth,
    nodeHeight: o.nodeHeight,
    columnGap: o.columnGap,
    rowGap: o.rowGap,
    layerGap: o.layerGap,
    dummyWidth: o.dummyWidth,
    margin: o.margin,
    maxWidth: o.maxWidth,
  };
  const g = buildLayers(steps, o.maxDummies);
  const order = orderLayers(g, o.sweeps);
  const p = place(g, order, geo);
  const nodes: NodeBox[] = steps.map((s, i) => ({
    index: i,
    name: s.name,
    x: p.cx[i]! - p.boxWidth[i]! / 2,
    y: p.top[i]!,
    width: p.boxWidth[i]!,
    height: o.nodeHeight,
    layer: g.layer[i]!,
    row: p.row[i]!,
  }));
  const edges = g.edges.map((e) => ({ from: e.from, to: e.to, points: route(g, p, geo, e.from, e.via, e.to) }));
  return { width: p.width, height: p.height, nodes, edges, layerCount: g.layerCount, crossings: order.crossings, wrapped: p.wrapped.some(Boolean), direct: g.direct };
}
