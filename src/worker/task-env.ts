/**
 * The environment a task runs with: never the agent's own.
 *
 * An attempt's environment is built from, in order (later wins):
 *   1. a fixed minimal base: PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin,
 *      HOME=<the attempt's work dir>, LANG=C.UTF-8;
 *   2. the variables the operator passed on explicitly (`drover worker
 *      --pass-env NAME`, AgentOptions.passEnv), copied from the agent's
 *      environment when set there;
 *   3. the task's `env`;
 *   4. DROVER_TASK_ID, DROVER_ATTEMPT, DROVER_OUTPUT_DIR, DROVER_OUTPUT (the
 *      file for KEY=VALUE outputs, core/task-outputs.ts) (so a task's env
 *      cannot misreport who it is or redirect what the agent reads).
 * Nothing else of the agent's environment reaches a task: above all not
 * DROVER_TOKEN, the worker token, which would let any task act as the fleet.
 * That name cannot be passed on at all.
 */
import type { AttemptSpec } from './process-runner.js';

export const TASK_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
export const TASK_LANG = 'C.UTF-8';

/** A portable environment variable name. */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Why `name` cannot be passed on to tasks, or null when it can. */
export function passEnvNameProblem(name: string): string | null {
  if (!ENV_NAME.test(name)) return `expected an environment variable name (letters, digits and _, not starting with a digit)`;
  if (name === 'DROVER_TOKEN') return 'DROVER_TOKEN is the worker token and is never passed to tasks';
  return null;
}

/**
 * The values of the `names` set in `from` (the agent's environment), read
 * once at start. Throws RangeError naming `passEnv` for a bad name.
 */
export function passedEnv(names: readonly string[], from: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of names) {
    const problem = passEnvNameProblem(name);
    if (problem) throw new RangeError(`invalid passEnv name "${name}": ${problem}`);
    const v = from[name];
    if (v !== undefined) out[name] = v;
  }
  return out;
}

/** The whole environment of one attempt (see the order at the top). */
export function taskEnv(
  spec: Pick<AttemptSpec, 'taskId' | 'number' | 'env'>,
  dirs: { workDir: string; outDir: string; outputFile: string },
  passed: Readonly<Record<string, string>> = {},
): Record<string, string> {
  return {
    PATH: TASK_PATH,
    HOME: dirs.workDir,
    LANG: TASK_LANG,
    ...passed,
    ...spec.env,
    DROVER_TASK_ID: spec.taskId,
    DROVER_ATTEMPT: String(spec.number),
    DROVER_OUTPUT_DIR: dirs.outDir,
    DROVER_OUTPUT: dirs.outputFile,
  };
}
