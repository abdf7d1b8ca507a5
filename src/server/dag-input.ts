/**
 * Turns a validated DAG body (dag-schemas.ts) into a DagDefinition: each
 * step through the task submit rules (task-input.ts toTaskSpec; its name is
 * `<dag>/<step>`), its condition and dependencies, then the graph checks of
 * the core (core/dag/dag-graph.ts: empty, duplicates, missing dependencies,
 * cycles named step by step). Throws InvalidInputError naming the field as
 * the file spells it: `steps[3].depends_on[0]`, `steps[2].command`.
 * Also the definition's hash (sha256 of its canonical JSON): applying an
 * unchanged file stores no new version.
 */
import { createHash } from 'node:crypto';
import { InvalidInputError } from '../core/errors.js';
import type { DagDefinition, DagStepSpec } from '../core/dag/dag-definition.js';
import { parseStepCondition, validateDagGraph } from '../core/dag/dag-graph.js';
import { checkParams } from '../core/dag/params.js';
import type { DagBody } from './dag-schemas.js';
import { canonicalJson, toTaskSpec } from './task-input.js';

export function toDagDefinition(body: DagBody): DagDefinition {
  const steps: DagStepSpec[] = body.steps.map((s, i) => {
    const at = `steps[${i}]`;
    const { name, depends_on: dependsOn, when, retries, ...task } = s;
    if (retries !== undefined && task.retry?.maxRetries !== undefined) throw new InvalidInputError(`${at}.retries`, 'give either "retries" or "retry.maxRetries", not both');
    let spec;
    try {
      spec = toTaskSpec({ ...task, name: `${body.name}/${name}`, retry: retries === undefined ? task.retry : { ...task.retry, maxRetries: retries } });
    } catch (e) {
      if (e instanceof InvalidInputError) throw new InvalidInputError(`${at}.${e.field}`, e.reason);
      throw e;
    }
    return { name, dependsOn: dependsOn ?? [], when: parseStepCondition(when, `${at}.when`), task: spec };
  });
  if (body.description?.includes('\0')) throw new InvalidInputError('description', 'must not contain NUL (\\u0000) characters');
  validateDagGraph(steps);
  return { name: body.name, description: body.description ?? null, params: body.params === undefined ? null : checkParams('params', body.params), steps };
}

export function dagHash(d: DagDefinition): string {
  return createHash('sha256').update(canonicalJson(d), 'utf8').digest('hex');
}
