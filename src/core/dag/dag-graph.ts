/**
 * A DAG's shape (issue 12): its steps, what each depends on and under which
 * condition it runs, checked and indexed once. Pure: no store, no clock.
 *
 * validateDagGraph refuses, naming the field and the reason:
 *   - an empty DAG, or more than MAX_DAG_STEPS steps;
 *   - a step name that is not STEP_NAME_PATTERN, or given twice;
 *   - two names that map to the same environment name (outputs reach
 *     dependents as DROVER_OUT_<STEP>_<KEY>, step-env.ts), e.g. "a-b" and "a_b";
 *   - a dependency on a step that does not exist, or listed twice;
 *   - `when: failure` on a step without dependencies (it could never run);
 *   - a cycle, named step by step: "a → b → c → a" (a depends on b, b on c,
 *     c on a). A step depending on itself is a cycle of one.
 * The answer indexes the steps (dependencies and dependents by index) and
 * holds one topological order, which the release and retry plans walk.
 *
 * Measured (test/core/dag-graph.test.ts): a 1,000-step fan-out (start → 998
 * → end) validates in well under the issue's 100 ms: the work is linear in
 * steps + edges (Kahn's algorithm, then a walk only if a cycle is left).
 */
import { InvalidInputError } from '../errors.js';

export const STEP_CONDITIONS = ['success', 'failure', 'always'] as const;
/**
 * When a step runs, given its dependencies' ends (release.ts decideStep):
 *   success  all of them succeeded (the default);
 *   failure  all ended and at least one failed (a cleanup or alert step);
 *   always   all ended, whatever the outcome.
 */
export type StepCondition = (typeof STEP_CONDITIONS)[number];

/** The most steps one DAG may have: ample for the issue's 1,000-step graphs, and a bound on one run's transaction. */
export const MAX_DAG_STEPS = 2000;
/** Step names: they name tasks and environment variables, so letters, digits, `_`, `.` and `-`. */
export const STEP_NAME_PATTERN = '^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$';
const STEP_NAME_RE = new RegExp(STEP_NAME_PATTERN);

export interface StepShape {
  name: string;
  dependsOn: readonly string[];
  when: StepCondition;
}

export interface DagGraph {
  /** The steps, in the order the definition gives them. */
  readonly steps: readonly StepShape[];
  /** Step name → index into `steps`. */
  readonly index: ReadonlyMap<string, number>;
  /** deps[i]: the indexes of the steps step i depends on, in its depends_on order. */
  readonly deps: readonly (readonly number[])[];
  /** dependents[i]: the indexes of the steps that depend on step i, ascending. */
  readonly dependents: readonly (readonly number[])[];
  /** Every step index once, each after all its dependencies. */
  readonly order: readonly number[];
}

/** The part of an environment variable's name a step contributes: upper case, `.` and `-` as `_`. */
export function stepEnvPart(step: string): string {
  return step.toUpperCase().replace(/[^A-Z0-9_]/g, '_');
}

export function parseStepCondition(value: unknown, field: string): StepCondition {
  if (value === undefined) return 'success';
  if (typeof value === 'string' && (STEP_CONDITIONS as readonly string[]).includes(value)) return value as StepCondition;
  throw new InvalidInputError(field, `expected one of ${STEP_CONDITIONS.join(', ')} (got ${JSON.stringify(value)})`);
}

/** Checks the shape (see the header) and indexes it; throws InvalidInputError naming `steps[i].<field>`. */
export function validateDagGraph(steps: readonly StepShape[]): DagGraph {
  if (steps.length === 0) throw new InvalidInputError('steps', 'a DAG needs at least one step');
  if (steps.length > MAX_DAG_STEPS) throw new InvalidInputError('steps', `at most ${MAX_DAG_STEPS} steps (got ${steps.length})`);
  const index = new Map<string, number>();
  const envNames = new Map<string, number>();
  steps.forEach((s, i) => {
    if (typeof s.name !== 'string' || !STEP_NAME_RE.test(s.name)) {
      throw new InvalidInputError(`steps[${i}].name`, `${JSON.stringify(s.name)} is not a step name: 1-64 letters, digits, "_", "." or "-", not starting with "." or "-"`);
    }
    const taken = index.get(s.name);
    if (taken !== undefined) throw new InvalidInputError(`steps[${i}].name`, `"${s.name}" is already the name of steps[${taken}]; step names must be unique`);
    const env = stepEnvPart(s.name);
    const clash = envNames.get(env);
    if (clash !== undefined) {
      throw new InvalidInputError(`steps[${i}].name`, `"${s.name}" and "${steps[clash]!.name}" (steps[${clash}]) give the same environment name ${env}; rename one`);
    }
    index.set(s.name, i);
    envNames.set(env, i);
  });
  const deps: number[][] = [];
  const dependents: number[][] = steps.map(() => []);
  steps.forEach((s, i) => {
    const mine: number[] = [];
    const seen = new Set<string>();
    s.dependsOn.forEach((d, k) => {
      const j = index.get(d);
      if (j === undefined) throw new InvalidInputError(`steps[${i}].depends_on[${k}]`, `step "${s.name}" depends on "${d}", which is not a step of this DAG`);
      if (seen.has(d)) throw new InvalidInputError(`steps[${i}].depends_on[${k}]`, `step "${s.name}" lists "${d}" twice`);
      seen.add(d);
      mine.push(j);
      dependents[j]!.push(i);
    });
    if (s.when === 'failure' && mine.length === 0) {
      throw new InvalidInputError(`steps[${i}].when`, `step "${s.name}" runs on failure of its dependencies but has none (add depends_on, or drop "when")`);
    }
    deps.push(mine);
  });
  const order = topologicalOrder(deps, dependents);
  if (order.length < steps.length) {
    const cycle = findCycle(deps, new Set(order));
    const names = cycle.map((i) => steps[i]!.name);
    throw new InvalidInputError(
      `steps[${cycle[0]}].depends_on`,
      `cycle: ${[...names, names[0]].join(' → ')} (${names.map((n, k) => `${n} depends on ${names[(k + 1) % names.length]}`).join(', ')})`,
    );
  }
  return { steps, index, deps, dependents, order };
}

/** Kahn's algorithm, lowest index first among the ready ones (a stable order for the same definition). */
function topologicalOrder(deps: readonly (readonly number[])[], dependents: readonly (readonly number[])[]): number[] {
  const missing = deps.map((d) => d.length);
  const ready: number[] = [];
  missing.forEach((m, i) => m === 0 && ready.push(i));
  const order: number[] = [];
  // `ready` only grows at its end and is read from `head`: a queue without shifts.
  for (let head = 0; head < ready.length; head++) {
    const i = ready[head]!;
    order.push(i);
    for (const j of dependents[i]!) if (--missing[j]! === 0) ready.push(j);
  }
  return order;
}

/**
 * A cycle among the steps Kahn's algorithm could not order (each of them
 * depends, directly or not, on a cycle): follow unordered dependencies from
 * the first such step until a step repeats; the steps from its first visit
 * on are the cycle, in depends-on order.
 */
function findCycle(deps: readonly (readonly number[])[], ordered: ReadonlySet<number>): number[] {
  let at = deps.findIndex((_, i) => !ordered.has(i));
  const path: number[] = [];
  const onPath = new Map<number, number>();
  while (!onPath.has(at)) {
    onPath.set(at, path.length);
    path.push(at);
    // Every unordered step has an unordered dependency, else Kahn's algorithm would have ordered it.
    at = deps[at]!.find((j) => !ordered.has(j))!;
  }
  return path.slice(onPath.get(at)!);
}
