/**
 * Step 3 of the DAG drawing (../layout.ts): coordinates of the boxes and the
 * routes of the edges, top to bottom (a layer is a band; the graph flows down).
 *
 * A layer whose nodes fit in `maxWidth` side by side is one row: each node is
 * put under the mean x of the nodes it hangs from (a chain stays a straight
 * column, a diamond's bottom sits under its middle), then pushed right just
 * enough not to overlap its left neighbour, then pulled left where the row
 * would leave the drawing. Dummies are narrow slots the edge runs through.
 *
 * A layer too wide for that wraps into a grid: as many columns as fit, filled
 * row by row in the layer's order, every slot as wide as a box (a dummy too),
 * centred. So a 998-step fan-out is a block of readable boxes, not a line
 * 190,000 px long. Edges reach the grid's lower rows through the gaps between
 * its columns: an edge into the box in row r > 0, column c comes down the
 * "in lane" just left of c and turns in above the box; an edge out of a box
 * above the grid's last row goes out below it to the "out lane" just right
 * of c and down to the grid's bottom. The lanes are a third of a gap from
 * the boxes on either side, so edges in and edges out never share a line,
 * and no edge crosses a box.
 *
 * Routes are lists of points. Between two layers an edge is one S-curve from
 * the upper layer's bottom line to the lower layer's top line; everything
 * else is straight, axis-parallel segments (edge-path.ts draws them).
 */
import type { ProperGraph } from './layers.js';
import type { LayerOrder } from './order.js';

export interface Point {
  x: number;
  y: number;
}

export interface Geometry {
  nodeWidth: number;
  nodeHeight: number;
  columnGap: number;
  rowGap: number;
  layerGap: number;
  dummyWidth: number;
  margin: number;
  maxWidth: number;
}

export interface Placement {
  /** Box of each node (real and dummy): centre x, top y, width. Height is nodeHeight for all. */
  cx: number[];
  top: number[];
  boxWidth: number[];
  /** Row within its layer (0 unless the layer wrapped) and column (its index in an unwrapped row). */
  row: number[];
  column: number[];
  /** Per layer: top and bottom y, and whether it wrapped into a grid (then `rows` > 1 possibly). */
  layerTop: number[];
  layerBottom: number[];
  layerRows: number[];
  wrapped: boolean[];
  width: number;
  height: number;
  /** Per node in a wrapped layer: x of its in lane and out lane. */
  inLane: number[];
  outLane: number[];
}

export function place(g: ProperGraph, order: LayerOrder, geo: Geometry): Placement {
  const total = g.layer.length;
  const isDummy = (v: number) => v >= g.stepCount;
  const slotW = (v: number) => (isDummy(v) ? geo.dummyWidth : geo.nodeWidth);
  const pitch = geo.nodeWidth + geo.columnGap;
  const avail = Math.max(geo.nodeWidth + 2 * geo.columnGap, geo.maxWidth - 2 * geo.margin);

  const cx = new Array<number>(total).fill(0);
  const top = new Array<number>(total).fill(0);
  const boxWidth = g.layer.map((_, v) => slotW(v));
  const row = new Array<number>(total).fill(0);
  const column = new Array<number>(total).fill(0);
  const inLane = new Array<number>(total).fill(0);
  const outLane = new Array<number>(total).fill(0);

  // Widths first: the drawing is as wide as its widest layer (tightly packed).
  const wrapped: boolean[] = [];
  const cols: number[] = [];
  const layerRows: number[] = [];
  const tightWidth: number[] = [];
  for (const layer of order.layers) {
    let w = 0;
    for (const v of layer) w += slotW(v);
    w += Math.max(0, layer.length - 1) * geo.columnGap;
    if (w <= avail || layer.length < 2) {
      wrapped.push(false);
      cols.push(layer.length);
      layerRows.push(1);
      tightWidth.push(w);
      continue;
    }
    // A grid keeps a gap at each side for the outermost lanes.
    const c = Math.max(1, Math.min(layer.length, Math.floor((avail - geo.columnGap) / pitch)));
    wrapped.push(true);
    cols.push(c);
    layerRows.push(Math.ceil(layer.length / c));
    tightWidth.push(geo.columnGap + c * pitch);
  }
  const inner = Math.max(0, ...tightWidth);

  const layerTop: number[] = [];
  const layerBottom: number[] = [];
  let y = geo.margin;
  order.layers.forEach((layer, l) => {
    const rows = layerRows[l]!;
    layerTop.push(y);
    const h = rows * geo.nodeHeight + (rows - 1) * geo.rowGap;
    layerBottom.push(y + h);
    if (wrapped[l]) placeGrid(layer, cols[l]!, y, geo.margin + (inner - tightWidth[l]!) / 2);
    else placeRow(layer, l, y);
    y += h + geo.layerGap;
  });
  const height = order.layers.length === 0 ? 2 * geo.margin : y - geo.layerGap + geo.margin;

  function placeGrid(layer: readonly number[], c: number, y0: number, left: number): void {
    layer.forEach((v, i) => {
      const r = Math.floor(i / c);
      const k = i % c;
      const x = left + geo.columnGap + k * pitch;
      boxWidth[v] = geo.nodeWidth;
      cx[v] = x + geo.nodeWidth / 2;
      top[v] = y0 + r * (geo.nodeHeight + geo.rowGap);
      row[v] = r;
      column[v] = k;
      inLane[v] = x - geo.columnGap / 3;
      outLane[v] = x + geo.nodeWidth + geo.columnGap / 3;
    });
  }

  function placeRow(layer: readonly number[], l: number, y0: number): void {
    const lo = geo.margin;
    const hi = geo.margin + inner;
    // Centred and tightly packed: the fallback for nodes that hang from nothing above.
    let x = lo + (inner - tightWidth[l]!) / 2;
    const want = layer.map((v) => {
      const packed = x + slotW(v) / 2;
      x += slotW(v) + geo.columnGap;
      const ps = l === 0 ? [] : g.preds[v]!;
      if (ps.length === 0) return packed;
      let sum = 0;
      for (const p of ps) sum += cx[p]!;
      return sum / ps.length;
    });
    const at = want.slice();
    const sep = (a: number, b: number) => slotW(a) / 2 + geo.columnGap + slotW(b) / 2;
    for (let i = 0; i < layer.length; i++) {
      const v = layer[i]!;
      const min = i === 0 ? lo + slotW(v) / 2 : at[i - 1]! + sep(layer[i - 1]!, v);
      at[i] = Math.max(at[i]!, min);
    }
    for (let i = layer.length - 1; i >= 0; i--) {
      const v = layer[i]!;
      const max = i === layer.length - 1 ? hi - slotW(v) / 2 : at[i + 1]! - sep(v, layer[i + 1]!);
      at[i] = Math.min(at[i]!, max);
    }
    layer.forEach((v, i) => {
      cx[v] = at[i]!;
      top[v] = y0;
      column[v] = i;
    });
  }

  return { cx, top, boxWidth, row, column, layerTop, layerBottom, layerRows, wrapped, width: inner + 2 * geo.margin, height, inLane, outLane };
}

/** The route of one edge through the dummies `via` (see the header): a list of points, top to bottom. */
export function route(g: ProperGraph, p: Placement, geo: Geometry, from: number, via: readonly number[], to: number): Point[] {
  const pts: Point[] = [];
  const add = (x: number, y: number) => {
    const last = pts[pts.length - 1];
    if (!last || last.x !== x || last.y !== y) pts.push({ x, y });
  };
  const third = geo.rowGap / 3;
  const exit = (v: number) => {
    const l = g.layer[v]!;
    const bottom = p.top[v]! + geo.nodeHeight;
    add(p.cx[v]!, bottom);
    if (p.wrapped[l] && p.row[v]! < p.layerRows[l]! - 1) {
      add(p.cx[v]!, bottom + third);
      add(p.outLane[v]!, bottom + third);
      add(p.outLane[v]!, p.layerBottom[l]!);
    }
  };
  const enter = (v: number) => {
    const l = g.layer[v]!;
    if (p.wrapped[l] && p.row[v]! > 0) {
      add(p.inLane[v]!, p.layerTop[l]!);
      add(p.inLane[v]!, p.top[v]! - third);
      add(p.cx[v]!, p.top[v]! - third);
    }
    add(p.cx[v]!, p.top[v]!);
  };
  exit(from);
  for (const d of via) {
    enter(d);
    exit(d);
  }
  enter(to);
  return pts;
}
