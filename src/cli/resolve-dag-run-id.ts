/**
 * DAG run ids as a person types them, like task ids (resolve-task-id.ts):
 * the full 26-character id, or a unique prefix of at least MIN_PREFIX
 * characters, in any case.
 *
 * A prefix is looked up with `GET /v1/dag-runs?id=PREFIX`, the list API's
 * run-id range, on the server: it sees every run the caller may see (not
 * only the recent ones a client-side search would fetch), reads only the
 * matching ids (one primary-key range), and cannot confuse a run with its
 * steps' tasks, whose ids share the run's first characters (a run and its
 * steps are made in the same millisecond).
 */
import type { DagRun } from '../client/dag-types.js';
import { MAX_LISTED, MIN_PREFIX, parseTaskIdArg } from './resolve-task-id.js';
import { UsageError } from './usage-error.js';

export { MIN_PREFIX };

/** A prefix matched more than one run: the user must type more of it (exit 2). */
export class AmbiguousRunIdError extends UsageError {
  constructor(
    readonly prefix: string,
    readonly matches: readonly Pick<DagRun, 'id' | 'dag' | 'state'>[],
    more: boolean,
  ) {
    const list = matches.map((r) => `${r.id} (${r.dag}, ${r.state})`).join('; ');
    super(`ambiguous run id "${prefix}": it matches ${more ? `more than ${matches.length}` : matches.length} DAG runs: ${list}${more ? '; ...' : ''} (type more of the id)`);
  }
}

/** No run the caller can see has an id with this prefix (exit 1, as for tasks). */
export class RunIdNotFoundError extends Error {
  override readonly name = 'RunIdNotFoundError';
  constructor(readonly prefix: string) {
    super(`DAG run not found: no run id starts with ${prefix}`);
  }
}

/** What resolveDagRunId needs of the client (DroverClient has it). */
export interface RunLister {
  listDagRuns(q: { id: string; limit: number }): Promise<{ runs: Pick<DagRun, 'id' | 'dag' | 'state'>[] }>;
}

/** Checks the shape only (UsageError naming "run id"); for flag validation before any request. */
export function parseRunIdArg(raw: string): { id: string } | { prefix: string } {
  return parseTaskIdArg(raw, 'run id');
}

/** The full run id that `raw` names (see the header). */
export async function resolveDagRunId(client: RunLister, raw: string): Promise<string> {
  const parsed = parseRunIdArg(raw);
  if ('id' in parsed) return parsed.id;
  const { runs } = await client.listDagRuns({ id: parsed.prefix, limit: MAX_LISTED + 1 });
  if (runs.length === 1) return runs[0]!.id;
  if (runs.length === 0) throw new RunIdNotFoundError(parsed.prefix);
  throw new AmbiguousRunIdError(parsed.prefix, runs.slice(0, MAX_LISTED), runs.length > MAX_LISTED);
}
