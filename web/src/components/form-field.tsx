/**
 * A labelled form control with its hint and its error (from the API or the
 * form), linked for assistive tech through aria-describedby / aria-invalid.
 */
import type { ReactNode } from 'react';

interface Props {
  id: string;
  label: string;
  hint?: ReactNode;
  error?: string | null;
  children: (a11y: { id: string; 'aria-invalid': true | undefined; 'aria-describedby': string | undefined }) => ReactNode;
  wide?: boolean;
}

export function FormField({ id, label, hint, error, children, wide = false }: Props) {
  const hintId = hint ? `${id}-hint` : undefined;
  const errId = error ? `${id}-error` : undefined;
  const describedBy = [errId, hintId].filter(Boolean).join(' ') || undefined;
  return (
    <div className={wide ? 'field field-wide' : 'field'} data-field={id}>
      <label htmlFor={id}>{label}</label>
      {children({ id, 'aria-invalid': error ? true : undefined, 'aria-describedby': describedBy })}
      {error && (
        <p id={errId} className="field-error" data-testid={`error-${id}`}>
          {error}
        </p>
      )}
      {hint && (
        <p id={hintId} className="field-hint">
          {hint}
        </p>
      )}
    </div>
  );
}
