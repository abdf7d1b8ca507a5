/**
 * A form's errors: one field's (the API's 400 naming it, or the form's own
 * parsing), shown next to that field with focus moved there, or one for the
 * whole form, shown above its buttons. Showing one clears the others, so
 * what is on screen is the answer to the last attempt; changing a field
 * clears its error. Fields are keyed by `F`; `idOf` gives the element to focus.
 */
import { useCallback, useRef, useState } from 'react';

export function useFieldErrors<F extends string>(idOf: (f: F) => string) {
  const [fieldErrors, setFieldErrors] = useState<Partial<Record<F, string>>>({});
  const [formError, setFormError] = useState<string | null>(null);
  const formRef = useRef<HTMLFormElement>(null);

  const showField = useCallback(
    (f: F, message: string) => {
      setFieldErrors({ [f]: message } as Partial<Record<F, string>>);
      setFormError(null);
      requestAnimationFrame(() => formRef.current?.querySelector<HTMLElement>(`#${CSS.escape(idOf(f))}`)?.focus());
    },
    [idOf],
  );
  const showForm = useCallback((message: string) => {
    setFieldErrors({});
    setFormError(message);
  }, []);
  const clearField = useCallback((f: F) => setFieldErrors((e) => (e[f] === undefined ? e : { ...e, [f]: undefined })), []);
  const clearAll = useCallback(() => {
    setFieldErrors({});
    setFormError(null);
  }, []);

  return { fieldErrors, formError, formRef, showField, showForm, clearField, clearAll };
}
