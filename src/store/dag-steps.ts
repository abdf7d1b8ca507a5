/** The tasks a DAG run's start inserts (both stores). */
import { InvalidInputError } from '../core/errors.js';
import { startEnv } from '../core/dag/step-env.js';
import type { NewTask } from './batch.js';
import type { StartDagRun } from './dags.js';

/** The tasks of a run's start, with each step's env as core/dag/step-env.ts startEnv makes it. */
export function stepTasks(req: StartDagRun): NewTask[] {
  const { dag, runId, params, taskIds } = req;
  const steps = dag.definition.steps;
  if (taskIds.length !== steps.length) throw new InvalidInputError('taskIds', `expected one task id per step (${steps.length}), got ${taskIds.length}`);
  return steps.map((s, i) => ({
    id: taskIds[i]!,
    spec: { ...s.task, env: startEnv(s.task.env, runId, s.name, params) },
    detail: { dag: { run: runId, name: dag.name, version: dag.version, step: s.name } },
  }));
}

