/**
 * The DAG drawing (src/core/dag/layout.ts): layers, crossing reduction,
 * coordinates, wrapped layers and edge routes, checked as properties of the
 * answer (no box overlaps another, every edge runs from its dependency's
 * bottom to its dependent's top, downwards, never through a box, curving
 * only between layers), on small graphs with known answers, on seeded random
 * graphs, and at the size: a 1,000-step fan-out lays out in well
 * under 100 ms.
 */
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { describe, it } from 'node:test';
import { edgePath, layoutDag, stepLayers, LAYOUT_DEFAULTS, type DagLayout, type LayoutOptions, type NodeBox } from '../../src/core/dag/layout.js';

type Step = { name: string; dependsOn: string[] };
const s = (name: string, ...dependsOn: string[]): Step => ({ name, dependsOn });

function fanOut(width: number): Step[] {
  const mid = Array.from({ length: width }, (_, i) => s(`m${String(i).padStart(4, '0')}`, 'start'));
  return [s('start'), ...mid, s('end', ...mid.map((m) => m.name))];
}

/** A seeded random DAG: each step depends on up to `maxDeps` earlier ones. */
function randomDag(n: number, maxDeps: number, seed: number): Step[] {
  let x = seed >>> 0 || 1;
  const rnd = () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
  const steps: Step[] = [];
  for (let i = 0; i < n; i++) {
    const deps = new Set<string>();
    const k = i === 0 ? 0 : Math.floor(rnd() * (maxDeps + 1));
    for (let j = 0; j < k; j++) deps.add(`s${Math.floor(rnd() * i)}`);
    steps.push(s(`s${i}`, ...deps));
  }
  return steps;
}

const byName = (l: DagLayout) => new Map(l.nodes.map((n) => [n.name, n]));
const cx = (n: NodeBox) => n.x + n.width / 2;

/** Every property a drawing must have, whatever the graph. */
function checkDrawing(steps: Step[], l: DagLayout, opts: LayoutOptions = {}): void {
  const eps = 1e-6;
  assert.equal(l.nodes.length, steps.length);
  const boxes = l.nodes;
  // Inside the drawing, and within maxWidth when one was given.
  for (const b of boxes) {
    assert.ok(b.x >= 0 && b.y >= 0 && b.x + b.width <= l.width + eps && b.y + b.height <= l.height + eps, `${b.name} outside the drawing`);
  }
  if (opts.maxWidth !== undefined) assert.ok(l.width <= opts.maxWidth + eps, `drawing ${l.width} px wide, max ${opts.maxWidth}`);
  // No two boxes overlap (sorted by y, compare only boxes whose rows can meet).
  const sorted = [...boxes].sort((a, b) => a.y - b.y || a.x - b.x);
  for (let i = 0; i < sorted.length; i++) {
    const a = sorted[i]!;
    for (let j = i + 1; j < sorted.length && sorted[j]!.y < a.y + a.height; j++) {
      const b = sorted[j]!;
      const apart = a.x + a.width <= b.x + eps || b.x + b.width <= a.x + eps;
      assert.ok(apart, `${a.name} and ${b.name} overlap`);
    }
  }
  // Every dependency is an edge (inputs here are valid DAGs).
  const edgeCount = steps.reduce((n, st) => n + st.dependsOn.length, 0);
  assert.equal(l.edges.length, edgeCount);
  for (const e of l.edges) {
    const from = boxes[e.from]!;
    const to = boxes[e.to]!;
    assert.ok(steps[e.to]!.dependsOn.includes(from.name), `edge ${from.name} → ${to.name} is a dependency`);
    const pts = e.points;
    assert.ok(pts.length >= 2);
    // Past the dummy cap a long edge is one straight curve, drawn over whatever lies between.
    const drawnOver = l.direct && to.layer - from.layer > 1;
    assert.deepEqual(pts[0], { x: cx(from), y: from.y + from.height }, `${from.name} → ${to.name} starts at the bottom centre`);
    assert.deepEqual(pts[pts.length - 1], { x: cx(to), y: to.y }, `${from.name} → ${to.name} ends at the top centre`);
    for (let k = 1; k < pts.length; k++) {
      const a = pts[k - 1]!;
      const b = pts[k]!;
      assert.ok(b.y >= a.y, `${from.name} → ${to.name} goes down`);
      if (drawnOver) continue;
      const straight = a.x === b.x || a.y === b.y;
      for (const box of boxesNear(sorted, a.y, b.y)) {
        const yIn = Math.min(b.y, box.y + box.height) - Math.max(a.y, box.y) > eps;
        if (!straight) {
          // A curve only crosses the gap between two layers: no box's band is between its ends.
          assert.ok(!yIn, `${from.name} → ${to.name} curves through the band of ${box.name}`);
          continue;
        }
        if (box === from || box === to) continue;
        const xIn = a.x === b.x ? a.x > box.x + eps && a.x < box.x + box.width - eps : Math.min(Math.max(a.x, b.x), box.x + box.width) - Math.max(Math.min(a.x, b.x), box.x) > eps;
        const yInside = a.y === b.y ? a.y > box.y + eps && a.y < box.y + box.height - eps : yIn;
        assert.ok(!(xIn && yInside), `${from.name} → ${to.name} runs through ${box.name}`);
      }
    }
  }
}

/** The boxes (sorted by y; all of one height) whose vertical extent meets [y1, y2]. */
function boxesNear(sorted: readonly NodeBox[], y1: number, y2: number): NodeBox[] {
  const h = sorted[0]?.height ?? 0;
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid]!.y + h < y1) lo = mid + 1;
    else hi = mid;
  }
  const out: NodeBox[] = [];
  for (let i = lo; i < sorted.length && sorted[i]!.y <= y2; i++) out.push(sorted[i]!);
  return out;
}

function timed<T>(fn: () => T): { value: T; ms: number; cpuMs: number } {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const value = fn();
  const ms = performance.now() - t0;
  const c = process.cpuUsage(c0);
  return { value, ms, cpuMs: (c.user + c.system) / 1000 };
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const list = (xs: number[]) => xs.map((x) => x.toFixed(1)).join(', ');

describe('layoutDag', () => {
  it('draws a diamond: a on top, b and c side by side, d under their middle', () => {
    const steps = [s('a'), s('b', 'a'), s('c', 'a'), s('d', 'b', 'c')];
    const l = layoutDag(steps);
    checkDrawing(steps, l);
    const n = byName(l);
    assert.deepEqual(['a', 'b', 'c', 'd'].map((k) => n.get(k)!.layer), [0, 1, 1, 2]);
    assert.equal(n.get('b')!.y, n.get('c')!.y);
    assert.ok(n.get('a')!.y < n.get('b')!.y && n.get('b')!.y < n.get('d')!.y);
    assert.ok(cx(n.get('b')!) < cx(n.get('c')!), 'definition order kept when nothing crosses');
    assert.equal(cx(n.get('a')!), cx(n.get('d')!), 'a and d on the axis');
    assert.equal((cx(n.get('b')!) + cx(n.get('c')!)) / 2, cx(n.get('a')!));
    assert.equal(l.crossings, 0);
    assert.equal(l.layerCount, 3);
    assert.equal(l.wrapped, false);
    // Between adjacent layers an edge is one curve: two points.
    for (const e of l.edges) assert.equal(e.points.length, 2);
  });

  it('layers by the longest path from the roots, whatever the definition order', () => {
    const steps = [s('d', 'c', 'a'), s('c', 'b'), s('b', 'a'), s('a'), s('lone')];
    const l = layoutDag(steps);
    checkDrawing(steps, l);
    const n = byName(l);
    assert.deepEqual(['a', 'b', 'c', 'd', 'lone'].map((k) => n.get(k)!.layer), [0, 1, 2, 3, 0]);
  });

  it('keeps a chain in one column', () => {
    const steps = Array.from({ length: 6 }, (_, i) => (i === 0 ? s('s0') : s(`s${i}`, `s${i - 1}`)));
    const l = layoutDag(steps);
    checkDrawing(steps, l);
    assert.equal(new Set(l.nodes.map(cx)).size, 1);
  });

  it('routes an edge that skips a layer through a slot of its own, around the step in between', () => {
    const steps = [s('a'), s('b', 'a'), s('c', 'b', 'a')];
    const l = layoutDag(steps);
    checkDrawing(steps, l);
    const skip = l.edges.find((e) => l.nodes[e.from]!.name === 'a' && l.nodes[e.to]!.name === 'c')!;
    assert.ok(skip.points.length >= 4, 'down into the dummy slot, straight through it, down to c');
    const b = byName(l).get('b')!;
    const through = skip.points.filter((p) => p.y >= b.y && p.y <= b.y + b.height);
    assert.ok(through.length >= 2 && through.every((p) => p.x < b.x || p.x > b.x + b.width), 'beside b, not through it');
    assert.equal(l.direct, false);
  });

  it('reorders a layer to remove a crossing the definition order makes', () => {
    const steps = [s('a'), s('b'), s('c', 'b'), s('d', 'a')];
    const l = layoutDag(steps);
    checkDrawing(steps, l);
    const n = byName(l);
    assert.equal(l.crossings, 0);
    assert.ok(cx(n.get('d')!) < cx(n.get('c')!), 'd under a, c under b');
  });

  it('reports the crossings it cannot remove', () => {
    const steps = [s('a'), s('b'), s('c', 'a', 'b'), s('d', 'a', 'b')];
    const l = layoutDag(steps);
    checkDrawing(steps, l);
    assert.equal(l.crossings, 1);
  });

  it('wraps a layer wider than maxWidth into rows whose gaps carry the edges', () => {
    const steps = fanOut(20);
    const opts = { maxWidth: 800 };
    const l = layoutDag(steps, opts);
    checkDrawing(steps, l, opts);
    assert.equal(l.wrapped, true);
    const mid = l.nodes.filter((b) => b.layer === 1);
    const perRow = mid.filter((b) => b.row === 0).length;
    assert.ok(perRow >= 3 && perRow < 20, `${perRow} per row`);
    assert.equal(Math.max(...mid.map((b) => b.row)) + 1, Math.ceil(20 / perRow));
    assert.ok(mid.every((b) => b.width === LAYOUT_DEFAULTS.nodeWidth), 'boxes keep their size');
    // An edge into a lower row comes down a lane (a vertical run beside the boxes), not a curve through the rows.
    const deep = l.edges.find((e) => l.nodes[e.to]!.row === 2)!;
    assert.ok(deep.points.length > 2);
  });

  it('never wraps without maxWidth, and a layer of one box never wraps', () => {
    assert.equal(layoutDag(fanOut(30)).wrapped, false);
    const l = layoutDag([s('only')], { maxWidth: 10 });
    assert.equal(l.wrapped, false);
    assert.equal(l.nodes[0]!.row, 0);
  });

  it('keeps its invariants on random graphs, wrapped or not', () => {
    for (const seed of [1, 7, 42, 99, 2024]) {
      const steps = randomDag(150, 3, seed);
      checkDrawing(steps, layoutDag(steps));
      const opts = { maxWidth: 900 };
      checkDrawing(steps, layoutDag(steps, opts), opts);
      const narrow = { maxWidth: 300 };
      checkDrawing(steps, layoutDag(steps, narrow), narrow);
    }
  });

  it('is deterministic', () => {
    const steps = randomDag(200, 3, 5);
    assert.deepEqual(layoutDag(steps, { maxWidth: 1000 }), layoutDag(steps, { maxWidth: 1000 }));
  });

  it('fewer crossings after the sweeps than in definition order', () => {
    const steps = randomDag(120, 2, 3);
    const before = layoutDag(steps, { sweeps: 0 }).crossings;
    const after = layoutDag(steps).crossings;
    assert.ok(after < before, `${before} crossings before, ${after} after`);
  });

  it('past the dummy cap, draws long edges straight', () => {
    const steps = [s('a'), s('b', 'a'), s('c', 'b'), s('d', 'c', 'a')];
    const l = layoutDag(steps, { maxDummies: 1 });
    assert.equal(l.direct, true);
    const long = l.edges.find((e) => l.nodes[e.to]!.name === 'd' && l.nodes[e.from]!.name === 'a')!;
    assert.equal(long.points.length, 2);
    checkDrawing(steps, l);
  });

  it('does not throw on input the API never gives: unknown dependencies, a cycle', () => {
    const l = layoutDag([s('a', 'ghost'), s('b', 'c'), s('c', 'b'), s('d', 'a')]);
    assert.equal(l.nodes.length, 4);
    assert.ok(l.edges.every((e) => l.nodes[e.to]!.layer > l.nodes[e.from]!.layer));
    assert.deepEqual(layoutDag([]), { width: 2 * LAYOUT_DEFAULTS.margin, height: 2 * LAYOUT_DEFAULTS.margin, nodes: [], edges: [], layerCount: 0, crossings: 0, wrapped: false, direct: false });
  });

  it('lays out a 1,000-step fan-out (start → 998 → end) in well under 100 ms, wrapped to stay readable', () => {
    const steps = fanOut(998);
    const opts = { maxWidth: 1100 };
    // The first run is what a page's first render pays (cold JIT); the next ones what a re-render pays.
    const runs = Array.from({ length: 7 }, () => timed(() => layoutDag(steps, opts)));
    const l = runs[0]!.value;
    checkDrawing(steps, l, opts);
    assert.equal(l.wrapped, true);
    const perRow = l.nodes.filter((b) => b.layer === 1 && b.row === 0).length;
    assert.ok(perRow >= 4, `${perRow} boxes per row`);
    assert.ok(l.width <= 1100 && l.height < 20_000, `${l.width} × ${l.height} px`);
    const cpu = runs.map((r) => r.cpuMs);
    const wall = runs.map((r) => r.ms);
    console.log(`# dag-layout: 1,000-step fan-out, cpu ms ${list(cpu)}; wall ms ${list(wall)}`);
    // The fastest run is the work itself (noise only adds); the median bounds what a page waits on a busy machine. (The first,
    // cold run is printed above: on a machine at load 10-15 it took 6-30 ms of CPU.)
    assert.ok(Math.min(...cpu) < 20, `fastest ${Math.min(...cpu).toFixed(1)} ms of CPU (${list(cpu)})`);
    assert.ok(median(cpu) < 100, `median ${median(cpu).toFixed(1)} ms of CPU (${list(cpu)})`);
  });

  it('lays out 1,000 random steps with long edges (some 3,000 dummies) within a few times that', () => {
    const steps = randomDag(1000, 3, 11);
    const opts = { maxWidth: 1100 };
    const runs = Array.from({ length: 5 }, () => timed(() => layoutDag(steps, opts)));
    const l = runs[0]!.value;
    checkDrawing(steps, l, opts);
    const cpu = runs.map((r) => r.cpuMs);
    console.log(`# dag-layout: 1,000 random steps (${l.edges.length} edges, ${l.layerCount} layers, ${l.crossings} crossings), cpu ms ${list(cpu)}; wall ms ${list(runs.map((r) => r.ms))}`);
    assert.ok(median(cpu) < 250, `median ${median(cpu).toFixed(1)} ms of CPU (${list(cpu)})`);
  });
});

describe('stepLayers', () => {
  it('gives the layers the drawing uses, without laying anything out', () => {
    const steps = [s('d', 'c', 'a'), s('c', 'b'), s('b', 'a'), s('a'), s('lone'), s('x', 'ghost')];
    assert.deepEqual(stepLayers(steps), [3, 2, 1, 0, 0, 0]);
    const l = layoutDag(steps);
    assert.deepEqual(stepLayers(steps), l.nodes.map((n) => n.layer));
  });
});

describe('edgePath', () => {
  it('draws straight runs as lines and layer gaps as vertical S-curves', () => {
    assert.equal(edgePath([]), '');
    assert.equal(edgePath([{ x: 10, y: 0 }, { x: 10, y: 50 }]), 'M10 0L10 50');
    assert.equal(edgePath([{ x: 0, y: 0 }, { x: 100, y: 60 }]), 'M0 0C0 30 100 30 100 60');
    assert.equal(edgePath([{ x: 0.04, y: 1 }, { x: 0.04, y: 5 }, { x: 7.26, y: 5 }]), 'M0 1L0 5L7.3 5');
  });
});
