/**
 * The submit form. One Idempotency-Key per set of values: pressing Submit
 * twice, or again after a lost answer, cannot create a second task; changing
 * any field starts a new key. Errors from the API appear next to the field
 * they name (and focus moves there); others above the buttons.
 */
import { useRef, useState, type FormEvent } from 'react';
import { useMutation } from '@tanstack/react-query';
import { api } from '../api/endpoints';
import { ApiError, errorMessage } from '../api/api-error';
import { FormField } from './form-field';
import { EMPTY_FORM, FormInputError, fieldForApiError, toBody, type FieldName, type FormValues } from '../submit/form-model';
import { newIdempotencyKey } from '../submit/idempotency-key';
import type { Task } from '../api/types';

interface Props {
  initial?: FormValues;
  note?: string;
  onSubmitted(task: Task): void;
}

const fid = (f: FieldName) => `f-${f}`;

export function SubmitForm({ initial = EMPTY_FORM, note, onSubmitted }: Props) {
  const [v, setV] = useState<FormValues>(initial);
  const [fieldErrors, setFieldErrors] = useState<Partial<Record<FieldName, string>>>({});
  const [formError, setFormError] = useState<string | null>(null);
  const key = useRef(newIdempotencyKey());
  const formRef = useRef<HTMLFormElement>(null);

  const submit = useMutation({
    mutationFn: (body: ReturnType<typeof toBody>) => api.submitTask(body, key.current),
    onSuccess: (res) => {
      key.current = newIdempotencyKey();
      onSubmitted(res.task);
    },
    onError: (err) => {
      const field = err instanceof ApiError ? fieldForApiError(err.field) : null;
      if (field && err instanceof ApiError) showFieldError(field, err.reason ? `${err.field}: ${err.reason}` : err.message);
      else setFormError(errorMessage(err));
    },
  });

  const showFieldError = (field: FieldName, msg: string) => {
    setFieldErrors({ [field]: msg });
    setFormError(null);
    requestAnimationFrame(() => formRef.current?.querySelector<HTMLElement>(`#${fid(field)}`)?.focus());
  };

  const set = <K extends keyof FormValues>(k: K, value: FormValues[K]) => {
    setV((cur) => ({ ...cur, [k]: value }));
    key.current = newIdempotencyKey();
    if (k !== 'mode' && fieldErrors[k as FieldName]) setFieldErrors((e) => ({ ...e, [k]: undefined }));
  };

  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    setFieldErrors({});
    setFormError(null);
    let body;
    try {
      body = toBody(v);
    } catch (err) {
      if (err instanceof FormInputError) return showFieldError(err.field, `${err.field}: ${err.reason}`);
      throw err;
    }
    submit.mutate(body);
  };

  const text = (f: FieldName, label: string, hint?: string, placeholder?: string, extra: { inputMode?: 'numeric' | 'decimal' } = {}) => (
    <FormField id={fid(f)} label={label} hint={hint} error={fieldErrors[f]}>
      {(a) => <input {...a} name={f} type="text" value={v[f]} placeholder={placeholder} onChange={(e) => set(f, e.target.value)} autoComplete="off" spellCheck={false} {...extra} />}
    </FormField>
  );
  const area = (f: FieldName, label: string, hint: string, rows: number, placeholder?: string) => (
    <FormField id={fid(f)} label={label} hint={hint} error={fieldErrors[f]} wide>
      {(a) => <textarea {...a} name={f} rows={rows} value={v[f]} placeholder={placeholder} onChange={(e) => set(f, e.target.value)} spellCheck={false} />}
    </FormField>
  );

  return (
    <form ref={formRef} className="submit-form" onSubmit={onSubmit} noValidate aria-describedby={note ? 'submit-note' : undefined}>
      {note && (
        <p id="submit-note" className="notice">
          {note}
        </p>
      )}
      <fieldset className="form-section">
        <legend>What to run</legend>
        <div className="mode-switch" role="radiogroup" aria-label="Run a command or a script">
          <label>
            <input type="radio" name="mode" value="command" checked={v.mode === 'command'} onChange={() => set('mode', 'command')} /> Run a command
          </label>
          <label>
            <input type="radio" name="mode" value="script" checked={v.mode === 'script'} onChange={() => set('mode', 'script')} /> Run a script
          </label>
        </div>
        {v.mode === 'command' ? (
          <>
            {text('command', 'Command', 'An executable, run without a shell (e.g. /usr/bin/backup or sh).', 'sh')}
            {area('args', 'Arguments', 'One argument per line, exactly as given (no quoting needed).', 3, '-c\necho hello')}
          </>
        ) : (
          <>
            {area('script', 'Script', 'Written to a file in the attempt’s work directory and run by the interpreter.', 8, '#!/bin/sh\necho hello')}
            {text('interpreter', 'Interpreter', 'Words separated by spaces; the script’s path is appended. Default: sh.', 'sh')}
          </>
        )}
        {text('name', 'Name', 'Shown in lists; defaults to the command (or "script").')}
      </fieldset>
      <fieldset className="form-section">
        <legend>Environment and placement</legend>
        {area('env', 'Environment', 'KEY=VALUE, one per line. Only the task sees them; the worker’s own environment is never passed on.', 3, 'GREETING=hello')}
        {area('labels', 'Labels', 'KEY=VALUE, one per line.', 2)}
        {area('requires', 'Requires worker labels', 'KEY=VALUE, one per line: runs only on a worker with every one of these labels.', 2)}
      </fieldset>
      <fieldset className="form-section form-grid">
        <legend>Limits and retries</legend>
        {text('timeout', 'Timeout per attempt', 'e.g. 30s, 5m, 1h30m; empty: none.', 'none')}
        {text('maxRetries', 'Retries', '0..100; default 3.', '3', { inputMode: 'numeric' })}
        {text('baseDelay', 'First retry delay', 'Default 1s.', '1s')}
        {text('factor', 'Backoff factor', '1..10; default 2.', '2', { inputMode: 'decimal' })}
        {text('maxDelay', 'Longest delay', 'Default 1h.', '1h')}
        {text('priority', 'Priority', '−1000..1000, higher first; default 0.', '0', { inputMode: 'numeric' })}
      </fieldset>
      {formError && (
        <p className="notice notice-error" role="alert">
          {formError}
        </p>
      )}
      <div className="form-buttons">
        <button type="submit" className="btn btn-primary" disabled={submit.isPending}>
          {submit.isPending ? 'Submitting…' : 'Submit task'}
        </button>
      </div>
    </form>
  );
}
