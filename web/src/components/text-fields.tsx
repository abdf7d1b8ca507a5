/**
 * One-line and multi-line text fields in a FormField (label, hint, error),
 * as the submit and schedule forms use them. The value is text as typed;
 * the form turns it into a request body and the API judges it.
 */
import type { ReactNode } from 'react';
import { FormField } from './form-field';

interface Common {
  id: string;
  name: string;
  label: string;
  hint?: ReactNode;
  error?: string | null;
  value: string;
  placeholder?: string;
  onChange(value: string): void;
}

export function TextField({ inputMode, list, disabled, ...f }: Common & { inputMode?: 'numeric' | 'decimal'; list?: string; disabled?: boolean }) {
  return (
    <FormField id={f.id} label={f.label} hint={f.hint} error={f.error}>
      {(a) => (
        <input
          {...a}
          name={f.name}
          type="text"
          value={f.value}
          placeholder={f.placeholder}
          onChange={(e) => f.onChange(e.target.value)}
          autoComplete="off"
          spellCheck={false}
          inputMode={inputMode}
          list={list}
          disabled={disabled}
        />
      )}
    </FormField>
  );
}

export function AreaField({ rows, ...f }: Common & { rows: number }) {
  return (
    <FormField id={f.id} label={f.label} hint={f.hint} error={f.error} wide>
      {(a) => <textarea {...a} name={f.name} rows={rows} value={f.value} placeholder={f.placeholder} onChange={(e) => f.onChange(e.target.value)} spellCheck={false} />}
    </FormField>
  );
}
