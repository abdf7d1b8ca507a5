/**
 * What a DAG step sees in its environment besides its own `env`:
 *   DROVER_DAG_RUN, DROVER_DAG_STEP     which run and step it is;
 *   DROVER_PARAM_<KEY>                  each run parameter (--param K=V);
 *   DROVER_OUT_<STEP>_<KEY>             each output of each step it depends
 *                                       on (the KEY=VALUE lines that step
 *                                       wrote to $DROVER_OUTPUT).
 * <STEP> is the step name in upper case with `.` and `-` as `_`
 * (dag-graph.ts stepEnvPart; validation refuses two steps with the same
 * one), <KEY> the key in upper case (output and parameter keys are
 * [A-Za-z_][A-Za-z0-9_]*, unique regardless of case). Drover's names come
 * after the step's own env, so a step cannot shadow them by accident.
 */
import { stepEnvPart } from './dag-graph.js';

export const PARAM_ENV_PREFIX = 'DROVER_PARAM_';
export const OUTPUT_ENV_PREFIX = 'DROVER_OUT_';

export function paramEnvName(key: string): string {
  return PARAM_ENV_PREFIX + key.toUpperCase();
}

export function outputEnvName(step: string, key: string): string {
  return `${OUTPUT_ENV_PREFIX}${stepEnvPart(step)}_${key.toUpperCase()}`;
}

/** A step's environment at its run's start: its own env, then the run's identity and parameters. */
export function startEnv(env: Readonly<Record<string, string>>, runId: string, step: string, params: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = { ...env, DROVER_DAG_RUN: runId, DROVER_DAG_STEP: step };
  for (const [k, v] of Object.entries(params)) out[paramEnvName(k)] = v;
  return out;
}

/** A step's environment when it is released: as stored, plus the outputs of its dependencies (null: one wrote none). */
export function releaseEnv(env: Readonly<Record<string, string>>, deps: ReadonlyArray<{ step: string; outputs: Readonly<Record<string, string>> | null }>): Record<string, string> {
  const out: Record<string, string> = { ...env };
  for (const d of deps) for (const [k, v] of Object.entries(d.outputs ?? {})) out[outputEnvName(d.step, k)] = v;
  return out;
}
