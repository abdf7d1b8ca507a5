/** A choice among a few fixed values in a FormField (label, hint, error): a native <select>, keyboard and screen-reader friendly. */
import type { ReactNode } from 'react';
import { FormField } from './form-field';

interface Props<V extends string> {
  id: string;
  name: string;
  label: string;
  hint?: ReactNode;
  error?: string | null;
  value: V;
  options: readonly { value: V; label: string }[];
  onChange(value: V): void;
}

export function SelectField<V extends string>({ id, name, label, hint, error, value, options, onChange }: Props<V>) {
  return (
    <FormField id={id} label={label} hint={hint} error={error}>
      {(a) => (
        <select {...a} name={name} value={value} onChange={(e) => onChange(e.target.value as V)}>
          {options.map((o) => (
            <option key={o.value} value={o.value}>
              {o.label}
            </option>
          ))}
        </select>
      )}
    </FormField>
  );
}
