/**
 * The Add schedule form's values (text as typed, the task template as the
 * submit form's values) ↔ the POST /v1/schedules body, and which field an
 * API error belongs to. Each run is a task (the template) or a run of one
 * of the caller's DAGs (its name and KEY=VALUE parameters). As in the
 * submit form, the API judges the values; the form only builds a body (its
 * KEY=VALUE lines, and that a DAG was chosen, are its own to check).
 */
import type { ApiError } from '../api/api-error';
import type { CatchupPolicy, CreateScheduleRequest, OverlapPolicy } from '../api/types';
import { EMPTY_FORM, FormInputError, fieldForApiError, parsePairs, toBody, type FieldName, type FormValues } from '../submit/form-model';

/** What each run of the schedule is. */
export type ScheduleRuns = 'task' | 'dag';

export interface ScheduleFormValues {
  name: string;
  /** The cron expression. */
  schedule: string;
  tz: string;
  overlap: OverlapPolicy;
  catchup: CatchupPolicy;
  maxCatchup: string;
  runs: ScheduleRuns;
  /** With runs `dag`: the DAG's name ('' until one is chosen). */
  dag: string;
  /** With runs `dag`: KEY=VALUE per line. */
  dagParams: string;
  /** With runs `task`: the template. */
  task: FormValues;
}

export type ScheduleFieldName = Exclude<keyof ScheduleFormValues, 'task'>;

/** A field of the form: one of the schedule's own, or one of its task template's. */
export type ScheduleFormField = { part: 'schedule'; field: ScheduleFieldName } | { part: 'task'; field: FieldName };

/** The API's defaults, shown selected (docs/api.md: tz UTC, overlap allow, catchup latest); each run a task, as before DAG schedules. */
export const EMPTY_SCHEDULE_FORM: ScheduleFormValues = {
  name: '',
  schedule: '',
  tz: 'UTC',
  overlap: 'allow',
  catchup: 'latest',
  maxCatchup: '',
  runs: 'task',
  dag: '',
  dagParams: '',
  task: EMPTY_FORM,
};

/** A value the form cannot build a body from, with the field to show it at; the message names the request's field, as the API's do. */
export class ScheduleInputError extends Error {
  constructor(
    readonly target: ScheduleFormField,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The create body: `task` or `dag`, never both (the other part's fields
 * keep what was typed, unsent). `maxCatchup` is sent only with catch-up
 * `all` (the only policy it limits). Throws ScheduleInputError for a bad
 * KEY=VALUE line (naming the line) or a DAG schedule without a DAG.
 */
export function toCreateBody(v: ScheduleFormValues): CreateScheduleRequest {
  const base = { name: v.name.trim(), schedule: v.schedule, overlap: v.overlap, catchup: v.catchup };
  const body: CreateScheduleRequest = v.runs === 'dag' ? { ...base, dag: dagTarget(v) } : { ...base, task: taskTemplate(v.task) };
  if (v.tz.trim()) body.tz = v.tz.trim();
  const max = v.maxCatchup.trim();
  // Text that is no number is NaN, sent as null, which the API refuses naming maxCatchup.
  if (v.catchup === 'all' && max) body.maxCatchup = Number(max);
  return body;
}

function taskTemplate(task: FormValues) {
  try {
    return toBody(task);
  } catch (err) {
    if (err instanceof FormInputError) throw new ScheduleInputError({ part: 'task', field: err.field }, `task.${err.field}: ${err.reason}`);
    throw err;
  }
}

/** Parameters are sent even when none are typed (`{}`): the API's answer is the same, and the body says what the form showed. */
function dagTarget(v: ScheduleFormValues): { name: string; params: Record<string, string> } {
  if (v.dag === '') throw new ScheduleInputError({ part: 'schedule', field: 'dag' }, 'dag.name: choose the DAG each run starts');
  try {
    // The submit form's KEY=VALUE parser; it names a field of that form, so only its reason ("line 2: expected KEY=VALUE") is kept.
    return { name: v.dag, params: parsePairs('env', v.dagParams) ?? {} };
  } catch (err) {
    if (err instanceof FormInputError) throw new ScheduleInputError({ part: 'schedule', field: 'dagParams' }, `dag.params: ${err.reason}`);
    throw err;
  }
}

const OWN_FIELDS: readonly string[] = ['name', 'schedule', 'tz', 'overlap', 'catchup', 'maxCatchup'] satisfies readonly ScheduleFieldName[];

/**
 * Where an answer of POST /v1/schedules (or GET /v1/cron/next) belongs:
 * `task.X` is the template's field X (as the submit form maps it),
 * `dag.params` and `dag.params.KEY` the parameters, `dag` and `dag.name`
 * (no such DAG) the DAG's choice, a schedule field is itself, and a 409 is
 * the name (the only conflict a create has: the caller already has a
 * schedule of that name). Anything else (`task` alone: neither was sent)
 * belongs to the form as a whole.
 */
export function fieldForScheduleError(err: ApiError): ScheduleFormField | null {
  if (err.status === 409) return { part: 'schedule', field: 'name' };
  const f = err.field;
  if (!f) return null;
  if (f.startsWith('task.')) {
    const field = fieldForApiError(f.slice('task.'.length));
    return field ? { part: 'task', field } : null;
  }
  if (f === 'dag.params' || f.startsWith('dag.params.')) return { part: 'schedule', field: 'dagParams' };
  if (f === 'dag' || f === 'dag.name') return { part: 'schedule', field: 'dag' };
  return OWN_FIELDS.includes(f) ? { part: 'schedule', field: f as ScheduleFieldName } : null;
}
