/**
 * A DAG definition as Drover stores it (issue 12): a name, the run
 * parameters it declares (with defaults), and its steps, each a task spec
 * (what to run, with the retries, timeout, env and labels of any task) plus
 * its dependencies and its condition. The server builds it from a file or a
 * request (server/dag-input.ts) and validates its shape with
 * dag-graph.ts validateDagGraph; it is immutable once stored: applying a
 * changed file stores a new version.
 */
import type { TaskSpec } from '../task.js';
import type { StepShape } from './dag-graph.js';

/** DAG names, as schedule names: they appear in URLs and CLI arguments. */
/** `.` and `..` alone are refused: they would be path segments that URL normalisation removes (/v1/dags/..). */
export const DAG_NAME_PATTERN = '^(?!\\.{1,2}$)[A-Za-z0-9._-]{1,100}$';

export interface DagStepSpec extends StepShape {
  task: TaskSpec;
}

export interface DagDefinition {
  name: string;
  description: string | null;
  /**
   * The run parameters the DAG declares, each with its default; null: it
   * declares none, and a run may pass any (params.ts resolveParams).
   */
  params: Record<string, string> | null;
  steps: DagStepSpec[];
}
