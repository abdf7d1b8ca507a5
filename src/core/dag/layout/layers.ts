/**
 * Step 1 of the DAG drawing (../layout.ts): layers, and the "proper" layered
 * graph the later steps work on.
 *
 * Layers: longest path from the roots (a step with no dependency is in layer
 * 0; any other is one below its deepest dependency), so every edge points
 * down and a chain is drawn as a column. Linear in steps + edges (Kahn's
 * algorithm).
 *
 * Proper graph: an edge that spans k > 1 layers is split by k − 1 dummy
 * nodes, one per layer it crosses, so the ordering step sees it in every
 * layer it passes (and keeps it out of other nodes' way) and the router draws
 * it through a slot of its own. Dummies are capped (`maxDummies`): a graph of
 * many long edges (up to n²/2 of them) would need too many; past the cap no
 * edge gets dummies and long edges are drawn straight from source to target.
 *
 * Input the API never gives (a dependency on a missing step, a cycle) does
 * not throw: unknown names are ignored and the steps of a cycle are placed
 * by their dependencies outside it, the edges inside it left out.
 */

export interface ProperGraph {
  /** Real steps are 0..stepCount-1; dummies follow. */
  readonly stepCount: number;
  /** layer[v] for every node, real or dummy. */
  readonly layer: number[];
  /** Nodes one layer up that v is linked to (its dependency, or the dummy above it). */
  readonly preds: number[][];
  /** Nodes one layer down linked from v. */
  readonly succs: number[][];
  readonly layerCount: number;
  /** Every drawable edge of the steps: from a dependency to its dependent, with the dummies between them in layer order. */
  readonly edges: { from: number; to: number; via: number[] }[];
  /** True when the dummy cap was hit: edges spanning several layers have no dummies. */
  readonly direct: boolean;
}

export interface LayerInput {
  readonly name: string;
  readonly dependsOn: readonly string[];
}

export function buildLayers(steps: readonly LayerInput[], maxDummies: number): ProperGraph {
  const n = steps.length;
  const index = new Map<string, number>();
  steps.forEach((s, i) => {
    if (!index.has(s.name)) index.set(s.name, i);
  });
  const deps: number[][] = steps.map((s) => {
    const seen = new Set<number>();
    for (const d of s.dependsOn) {
      const j = index.get(d);
      if (j !== undefined) seen.add(j);
    }
    return [...seen];
  });
  const layer = longestPathLayers(deps);

  // Only edges pointing down are drawn (all of them, for a valid DAG).
  const downEdges: { from: number; to: number }[] = [];
  let needed = 0;
  deps.forEach((ds, to) => {
    for (const from of ds) {
      if (layer[from]! >= layer[to]!) continue;
      downEdges.push({ from, to });
      needed += layer[to]! - layer[from]! - 1;
    }
  });
  const direct = needed > maxDummies;

  const preds: number[][] = steps.map(() => []);
  const succs: number[][] = steps.map(() => []);
  const edges: ProperGraph['edges'] = [];
  const link = (a: number, b: number) => {
    succs[a]!.push(b);
    preds[b]!.push(a);
  };
  for (const { from, to } of downEdges) {
    const span = layer[to]! - layer[from]!;
    if (span === 1) {
      link(from, to);
      edges.push({ from, to, via: [] });
      continue;
    }
    if (direct) {
      edges.push({ from, to, via: [] });
      continue;
    }
    const via: number[] = [];
    let prev = from;
    for (let l = layer[from]! + 1; l < layer[to]!; l++) {
      const d = layer.length;
      layer.push(l);
      preds.push([]);
      succs.push([]);
      link(prev, d);
      via.push(d);
      prev = d;
    }
    link(prev, to);
    edges.push({ from, to, via });
  }
  let layerCount = 0;
  for (const l of layer) if (l + 1 > layerCount) layerCount = l + 1;
  return { stepCount: n, layer, preds, succs, layerCount, edges, direct };
}

/** Each step's layer (see the header): for lists that follow the drawing's top-to-bottom order, e.g. the run page's timeline. */
export function stepLayers(steps: readonly LayerInput[]): number[] {
  const index = new Map<string, number>();
  steps.forEach((s, i) => {
    if (!index.has(s.name)) index.set(s.name, i);
  });
  return longestPathLayers(steps.map((s) => s.dependsOn.map((d) => index.get(d)).filter((j): j is number => j !== undefined)));
}

/**
 * layer[i] = 0 without dependencies, else 1 + the deepest dependency's layer.
 * Steps left after Kahn's algorithm (a cycle) are placed in index order from
 * the dependencies already placed.
 */
function longestPathLayers(deps: readonly (readonly number[])[]): number[] {
  const n = deps.length;
  const dependents: number[][] = deps.map(() => []);
  const missing = deps.map((d) => d.length);
  deps.forEach((ds, i) => ds.forEach((d) => dependents[d]!.push(i)));
  const layer = new Array<number>(n).fill(-1);
  const queue: number[] = [];
  missing.forEach((m, i) => {
    if (m === 0) queue.push(i);
  });
  for (let head = 0; head < queue.length; head++) {
    const i = queue[head]!;
    let l = 0;
    for (const d of deps[i]!) l = Math.max(l, layer[d]! + 1);
    layer[i] = l;
    for (const j of dependents[i]!) if (--missing[j]! === 0) queue.push(j);
  }
  for (let i = 0; i < n; i++) {
    if (layer[i]! >= 0) continue;
    let l = 0;
    for (const d of deps[i]!) if (layer[d]! >= 0) l = Math.max(l, layer[d]! + 1);
    layer[i] = l;
  }
  return layer;
}
