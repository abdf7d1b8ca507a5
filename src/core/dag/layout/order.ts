/**
 * Step 2 of the DAG drawing (../layout.ts): the order of the nodes within
 * each layer, chosen to reduce edge crossings.
 *
 * Start: real steps in definition order, then dummies in the order their
 * edges were made. Then `sweeps` passes of the barycenter heuristic,
 * alternately down (each layer sorted by the mean position of its nodes'
 * neighbours in the layer above) and up (the layer below). Positions are
 * normalized to 0..1 per layer, so layers of very different widths (a
 * 998-step fan-out under one start step) compare fairly; a node with no
 * neighbour on that side keeps its own position; ties keep the current order
 * (the sort is stable), so the result depends only on the input.
 *
 * After every pass the crossings are counted (per pair of adjacent layers:
 * the inversions among the edges sorted by their upper end, counted with a
 * Fenwick tree, O(E log V)) and the best order seen is the answer: a pass can
 * make things worse, and the initial order may already be the best one.
 */
import type { ProperGraph } from './layers.js';

export interface LayerOrder {
  /** layers[l]: the nodes of layer l, left to right. */
  readonly layers: number[][];
  /** pos[v]: v's index in its layer. */
  readonly pos: number[];
  readonly crossings: number;
}

export function orderLayers(g: ProperGraph, sweeps: number): LayerOrder {
  const layers: number[][] = Array.from({ length: g.layerCount }, () => []);
  for (let v = 0; v < g.layer.length; v++) layers[g.layer[v]!]!.push(v);
  const pos = new Array<number>(g.layer.length).fill(0);
  const setPositions = (ls: number[][]) => ls.forEach((l) => l.forEach((v, i) => (pos[v] = i)));
  setPositions(layers);

  const key = new Float64Array(g.layer.length);
  let best = layers.map((l) => l.slice());
  let bestCrossings = countCrossings(g, layers, pos);
  for (let s = 0; s < sweeps && bestCrossings > 0; s++) {
    const down = s % 2 === 0;
    if (down) for (let l = 1; l < layers.length; l++) sortLayer(layers[l]!, g.preds, layers[l - 1]!.length, pos, key);
    else for (let l = layers.length - 2; l >= 0; l--) sortLayer(layers[l]!, g.succs, layers[l + 1]!.length, pos, key);
    const c = countCrossings(g, layers, pos);
    if (c < bestCrossings) {
      bestCrossings = c;
      best = layers.map((l) => l.slice());
    }
  }
  setPositions(best);
  return { layers: best, pos, crossings: bestCrossings };
}

/**
 * Sorts one layer by the barycenter of each node's neighbours in the adjacent
 * layer (`nbrs`: preds when sweeping down, succs when sweeping up; that layer
 * has `otherSize` nodes), and updates pos. `key` is scratch space indexed by node.
 */
function sortLayer(layer: number[], nbrs: readonly (readonly number[])[], otherSize: number, pos: number[], key: Float64Array): void {
  const size = layer.length;
  if (size < 2) return;
  for (const v of layer) {
    const ns = nbrs[v]!;
    if (ns.length === 0) {
      key[v] = (pos[v]! + 0.5) / size;
      continue;
    }
    let sum = 0;
    for (const u of ns) sum += pos[u]! + 0.5;
    key[v] = sum / ns.length / otherSize;
  }
  layer.sort((a, b) => key[a]! - key[b]! || pos[a]! - pos[b]!);
  layer.forEach((v, i) => (pos[v] = i));
}

/**
 * Edge crossings between every pair of adjacent layers (in a proper graph
 * every edge joins adjacent layers). Each edge is one number, upper position
 * × (lower layer size) + lower position, so a typed-array sort orders them by
 * upper end then lower end without a comparator.
 */
export function countCrossings(g: ProperGraph, layers: readonly (readonly number[])[], pos: readonly number[]): number {
  let total = 0;
  for (let l = 0; l + 1 < layers.length; l++) {
    const lower = layers[l + 1]!.length;
    let m = 0;
    for (const u of layers[l]!) m += g.succs[u]!.length;
    const pairs = new Float64Array(m);
    let k = 0;
    for (const u of layers[l]!) for (const v of g.succs[u]!) pairs[k++] = pos[u]! * lower + pos[v]!;
    pairs.sort();
    total += inversions(pairs, lower);
  }
  return total;
}

/** Pairs i < j whose lower ends cross (lower[i] > lower[j]), for lower positions in 0..size-1 (a Fenwick tree of counts). */
function inversions(pairs: Float64Array, size: number): number {
  const tree = new Int32Array(size + 1);
  let inv = 0;
  for (let k = 0; k < pairs.length; k++) {
    const v = pairs[k]! % size;
    // Seen so far and ≤ v: the prefix sum up to v (1-based index v + 1).
    let le = 0;
    for (let i = v + 1; i > 0; i -= i & -i) le += tree[i]!;
    inv += k - le;
    for (let i = v + 1; i <= size; i += i & -i) tree[i]!++;
  }
  return inv;
}
