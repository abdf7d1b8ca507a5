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
import { useFieldErrors } from '../hooks/use-field-errors';
import { EMPTY_FORM, FormInputError, fieldForApiError, toBody, type FieldName, type FormValues } from '../submit/form-model';
import { newIdempotencyKey } from '../submit/idempotency-key';
import type { Task } from '../api/types';
import { TaskSpecFields, taskFieldId } from './task-spec-fields';

interface Props {
  initial?: FormValues;
  note?: string;
  onSubmitted(task: Task): void;
}

export function SubmitForm({ initial = EMPTY_FORM, note, onSubmitted }: Props) {
  const [v, setV] = useState<FormValues>(initial);
  const errors = useFieldErrors<FieldName>(taskFieldId);
  const key = useRef(newIdempotencyKey());

  const submit = useMutation({
    mutationFn: (body: ReturnType<typeof toBody>) => api.submitTask(body, key.current),
    onSuccess: (res) => {
      key.current = newIdempotencyKey();
      onSubmitted(res.task);
    },
    onError: (err) => {
      const field = err instanceof ApiError ? fieldForApiError(err.field) : null;
      if (field && err instanceof ApiError) errors.showField(field, err.reason ? `${err.field}: ${err.reason}` : err.message);
      else errors.showForm(errorMessage(err));
    },
  });

  const set = <K extends keyof FormValues>(k: K, value: FormValues[K]) => {
    setV((cur) => ({ ...cur, [k]: value }));
    key.current = newIdempotencyKey();
    if (k !== 'mode') errors.clearField(k as FieldName);
  };

  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    errors.clearAll();
    let body;
    try {
      body = toBody(v);
    } catch (err) {
      if (err instanceof FormInputError) return errors.showField(err.field, `${err.field}: ${err.reason}`);
      throw err;
    }
    submit.mutate(body);
  };

  return (
    <form ref={errors.formRef} className="submit-form" onSubmit={onSubmit} noValidate aria-describedby={note ? 'submit-note' : undefined}>
      {note && (
        <p id="submit-note" className="notice">
          {note}
        </p>
      )}
      <TaskSpecFields values={v} errorOf={(f) => errors.fieldErrors[f]} onChange={set} nameHint='Shown in lists; defaults to the command (or "script").' />
      {errors.formError && (
        <p className="notice notice-error" role="alert">
          {errors.formError}
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
