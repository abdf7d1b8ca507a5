/**
 * The Add schedule form: the schedule (name, expression with its next fire
 * times computed by the server as you type, zone), its overlap and catch-up
 * policies, and what each run is: a task from the template (the submit
 * form's fields) or a run of one of the user's DAGs. Errors from
 * the API appear next to the field they name, focus moving there; a bad
 * expression or zone is shown there while typing too. Nothing is created
 * unless the API answers 201.
 *
 * No Idempotency-Key: POST /v1/schedules has none, and needs none to be
 * safe to repeat: a name is unique per owner, so a second press, or a retry
 * after a lost answer, is a 409 at the name, never a second schedule.
 */
import { useMemo, useState, type FormEvent } from 'react';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Link } from 'react-router';
import { api } from '../api/endpoints';
import { ApiError, errorMessage } from '../api/api-error';
import { qk } from '../api/query-keys';
import type { CatchupPolicy, OverlapPolicy, Schedule, SchedulePage } from '../api/types';
import { browserTimeZone } from '../format/time';
import { useSignedIn } from '../auth/session-context';
import { useFieldErrors } from '../hooks/use-field-errors';
import type { FormValues } from '../submit/form-model';
import {
  EMPTY_SCHEDULE_FORM,
  ScheduleInputError,
  fieldForScheduleError,
  toCreateBody,
  type ScheduleFieldName,
  type ScheduleFormField,
  type ScheduleFormValues,
  type ScheduleRuns,
} from '../schedules/schedule-form-model';
import { useCronNext } from '../schedules/use-cron-next';
import { CronPreview } from './cron-preview';
import { ScheduleDagFields } from './schedule-dag-fields';
import { SelectField } from './select-field';
import { TaskSpecFields, taskFieldId } from './task-spec-fields';
import { TextField } from './text-fields';

const scheduleFieldId = (f: ScheduleFieldName) => `s-${f}`;
/** Errors are kept by element id: the schedule's fields and the template's share one form. */
const idOf = (f: ScheduleFormField) => (f.part === 'schedule' ? scheduleFieldId(f.field) : taskFieldId(f.field));
const TZ_LIST_ID = 'tz-options';

const OVERLAP_OPTIONS: readonly { value: OverlapPolicy; label: string }[] = [
  { value: 'allow', label: 'Allow: start it anyway' },
  { value: 'forbid', label: 'Forbid: skip it' },
  { value: 'replace', label: 'Replace: cancel the old run' },
];
const CATCHUP_OPTIONS: readonly { value: CatchupPolicy; label: string }[] = [
  { value: 'none', label: 'None: skip them' },
  { value: 'latest', label: 'Latest: run the newest once' },
  { value: 'all', label: 'All: run each, up to the max' },
];
const RUNS_OPTIONS: readonly { value: ScheduleRuns; label: string }[] = [
  { value: 'task', label: 'Run a task' },
  { value: 'dag', label: 'Run a DAG' },
];

/** IANA zones this browser knows, UTC first, for the zone field's suggestions (the server judges the value). */
function zoneNames(): string[] {
  const known = typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : [];
  return ['UTC', ...known.filter((z) => z !== 'UTC')];
}

export function ScheduleForm({ onCreated }: { onCreated(schedule: Schedule): void }) {
  const qc = useQueryClient();
  const me = useSignedIn();
  const [v, setV] = useState<ScheduleFormValues>(EMPTY_SCHEDULE_FORM);
  const errors = useFieldErrors<string>((id) => id);
  const preview = useCronNext(v.schedule, v.tz);
  const zones = useMemo(zoneNames, []);
  const localZone = browserTimeZone();

  const showError = (f: ScheduleFormField, message: string) => errors.showField(idOf(f), message);

  const create = useMutation({
    mutationFn: api.createSchedule,
    onSuccess: ({ schedule }) => {
      qc.setQueryData(qk.scheduleList, (cur: SchedulePage | undefined) => (cur ? { ...cur, schedules: [...cur.schedules, schedule] } : cur));
      void qc.invalidateQueries({ queryKey: qk.schedules });
      onCreated(schedule);
    },
    onError: (err) => {
      const target = err instanceof ApiError ? fieldForScheduleError(err) : null;
      if (target && err instanceof ApiError) showError(target, err.status === 409 ? `name: ${err.message}` : err.reason ? `${err.field}: ${err.reason}` : err.message);
      else errors.showForm(errorMessage(err));
    },
  });

  const set = <K extends ScheduleFieldName>(k: K, value: ScheduleFormValues[K]) => {
    setV((cur) => ({ ...cur, [k]: value }));
    errors.clearField(scheduleFieldId(k));
  };
  const setTask = <K extends keyof FormValues>(k: K, value: FormValues[K]) => {
    setV((cur) => ({ ...cur, task: { ...cur.task, [k]: value } }));
    if (k !== 'mode') errors.clearField(taskFieldId(k as Exclude<keyof FormValues, 'mode'>));
  };

  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    errors.clearAll();
    let body;
    try {
      body = toCreateBody(v);
    } catch (err) {
      if (err instanceof ScheduleInputError) return showError(err.target, err.message);
      throw err;
    }
    create.mutate(body);
  };

  /** A field's error: the last submit's, else (expression and zone) what the server says of the values being typed. */
  const errorOf = (f: ScheduleFieldName) => errors.fieldErrors[scheduleFieldId(f)] ?? (preview.fieldError?.field === f ? preview.fieldError.message : undefined);
  const own = (f: ScheduleFieldName & ('name' | 'schedule' | 'tz' | 'maxCatchup' | 'dag' | 'dagParams')) => ({
    id: scheduleFieldId(f),
    name: f,
    error: errorOf(f),
    value: v[f],
    onChange: (value: string) => set(f, value),
  });

  return (
    <form ref={errors.formRef} className="submit-form schedule-form" onSubmit={onSubmit} noValidate>
      <fieldset className="form-section">
        <legend>Schedule</legend>
        <TextField {...own('name')} label="Name" hint="1..100 of A-Z a-z 0-9 . _ - (not . or .. alone); unique among your schedules. Runs are named after it unless the task has a name." placeholder="nightly-backup" />
        <TextField
          {...own('schedule')}
          label="Cron expression"
          hint={
            <>
              5 fields (minute hour day-of-month month day-of-week), or 6 with a leading seconds field; <code>@hourly</code>, <code>@daily</code>, <code>@weekly</code>,{' '}
              <code>@monthly</code>. Ranges, steps, lists, month and day names.
            </>
          }
          placeholder="*/15 * * * *"
        />
        <TextField {...own('tz')} label="Time zone" hint={`The IANA zone the expression is read in, e.g. Europe/Berlin. Default UTC. This browser’s zone: ${localZone}.`} placeholder="UTC" list={TZ_LIST_ID} />
        <datalist id={TZ_LIST_ID}>
          {zones.map((z) => (
            <option key={z} value={z} />
          ))}
        </datalist>
        <CronPreview state={preview} id="s-preview" />
      </fieldset>
      <fieldset className="form-section form-grid">
        <legend>Overlap and missed times</legend>
        <SelectField
          id={scheduleFieldId('overlap')}
          name="overlap"
          label="Overlap"
          hint="When a fire time comes while the previous run is still going: start the new run anyway, skip it, or cancel the old run and start the new one."
          error={errorOf('overlap')}
          value={v.overlap}
          options={OVERLAP_OPTIONS}
          onChange={(x) => set('overlap', x)}
        />
        <SelectField
          id={scheduleFieldId('catchup')}
          name="catchup"
          label="Catch-up"
          hint="Fire times missed while no server ran or while the schedule was paused: skip them, run the newest once, or run each of them."
          error={errorOf('catchup')}
          value={v.catchup}
          options={CATCHUP_OPTIONS}
          onChange={(x) => set('catchup', x)}
        />
        <TextField
          {...own('maxCatchup')}
          label="Max catch-up"
          hint="With catch-up All: run at most this many missed times, 1..1000; default 10."
          placeholder="10"
          inputMode="numeric"
          disabled={v.catchup !== 'all'}
        />
      </fieldset>
      <fieldset className="form-section">
        <legend>Each run</legend>
        <div className="mode-switch" role="radiogroup" aria-label="Each run: a task or a DAG" aria-describedby="s-runs-hint">
          {RUNS_OPTIONS.map((o) => (
            <label key={o.value}>
              <input type="radio" name="runs" value={o.value} checked={v.runs === o.value} onChange={() => set('runs', o.value)} /> {o.label}
            </label>
          ))}
        </div>
        <p id="s-runs-hint" className="field-hint">
          A task made from the template below, or one run of a DAG you applied with <code>drover dag apply</code>.
        </p>
      </fieldset>
      {v.runs === 'task' ? (
        <TaskSpecFields values={v.task} errorOf={(f) => errors.fieldErrors[taskFieldId(f)]} onChange={setTask} nameLabel="Task name" nameHint="Each run’s task name; default: the schedule’s name." />
      ) : (
        <ScheduleDagFields user={me.user} dag={own('dag')} params={own('dagParams')} />
      )}
      {errors.formError && (
        <p className="notice notice-error" role="alert">
          {errors.formError}
        </p>
      )}
      <div className="form-buttons">
        <button type="submit" className="btn btn-primary" disabled={create.isPending}>
          {create.isPending ? 'Adding…' : 'Add schedule'}
        </button>
        <Link to="/schedules" className="btn">
          Cancel
        </Link>
      </div>
    </form>
  );
}
