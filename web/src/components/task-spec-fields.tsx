/**
 * The fields of a task's spec: what to run (command and arguments, or a
 * script), environment and placement, limits and retries. The submit form
 * shows them for one task, the schedule form for the template each run is
 * made from. The form that holds them keeps the values (text as typed,
 * submit/form-model.ts) and their errors; ids are `taskFieldId(field)`.
 */
import type { FieldName, FormValues } from '../submit/form-model';
import { AreaField, TextField } from './text-fields';

export const taskFieldId = (f: FieldName) => `f-${f}`;

interface Props {
  values: FormValues;
  /** The error shown next to a field (the API's, or the form's own), if any. */
  errorOf(f: FieldName): string | undefined;
  onChange<K extends keyof FormValues>(k: K, value: FormValues[K]): void;
  /** The Name field's label (default "Name") and hint (what the name defaults to). */
  nameLabel?: string;
  nameHint: string;
}

export function TaskSpecFields({ values: v, errorOf, onChange, nameLabel = 'Name', nameHint }: Props) {
  const common = (f: FieldName) => ({ id: taskFieldId(f), name: f, error: errorOf(f), value: v[f], onChange: (value: string) => onChange(f, value) });
  return (
    <>
      <fieldset className="form-section">
        <legend>What to run</legend>
        <div className="mode-switch" role="radiogroup" aria-label="Run a command or a script">
          <label>
            <input type="radio" name="mode" value="command" checked={v.mode === 'command'} onChange={() => onChange('mode', 'command')} /> Run a command
          </label>
          <label>
            <input type="radio" name="mode" value="script" checked={v.mode === 'script'} onChange={() => onChange('mode', 'script')} /> Run a script
          </label>
        </div>
        {v.mode === 'command' ? (
          <>
            <TextField {...common('command')} label="Command" hint="An executable, run without a shell (e.g. /usr/bin/backup or sh)." placeholder="sh" />
            <AreaField {...common('args')} label="Arguments" hint="One argument per line, exactly as given (no quoting needed)." rows={3} placeholder={'-c\necho hello'} />
          </>
        ) : (
          <>
            <AreaField {...common('script')} label="Script" hint="Written to a file in the attempt’s work directory and run by the interpreter." rows={8} placeholder={'#!/bin/sh\necho hello'} />
            <TextField {...common('interpreter')} label="Interpreter" hint="Words separated by spaces; the script’s path is appended. Default: sh." placeholder="sh" />
          </>
        )}
        <TextField {...common('name')} label={nameLabel} hint={nameHint} />
      </fieldset>
      <fieldset className="form-section">
        <legend>Environment and placement</legend>
        <AreaField
          {...common('env')}
          label="Environment"
          hint="KEY=VALUE, one per line. Only the task sees them; the worker’s own environment is never passed on."
          rows={3}
          placeholder="GREETING=hello"
        />
        <AreaField {...common('labels')} label="Labels" hint="KEY=VALUE, one per line." rows={2} />
        <AreaField {...common('requires')} label="Requires worker labels" hint="KEY=VALUE, one per line: runs only on a worker with every one of these labels." rows={2} />
      </fieldset>
      <fieldset className="form-section form-grid">
        <legend>Limits and retries</legend>
        <TextField {...common('timeout')} label="Timeout per attempt" hint="e.g. 30 (seconds), 30s, 5m, 1h30m; empty: none." placeholder="none" />
        <TextField {...common('maxRetries')} label="Retries" hint="0..100; default 3." placeholder="3" inputMode="numeric" />
        <TextField {...common('baseDelay')} label="First retry delay" hint="A bare number is seconds. Default 1s." placeholder="1s" />
        <TextField {...common('factor')} label="Backoff factor" hint="1..10; default 2." placeholder="2" inputMode="decimal" />
        <TextField {...common('maxDelay')} label="Longest delay" hint="A bare number is seconds. Default 1h." placeholder="1h" />
        <TextField {...common('priority')} label="Priority" hint="−1000..1000, higher first; default 0." placeholder="0" inputMode="numeric" />
      </fieldset>
    </>
  );
}
