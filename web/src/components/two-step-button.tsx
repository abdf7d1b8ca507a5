/**
 * A button for an action that is hard to undo: the first press arms it for
 * 5 s (it turns red and says what a second press does); the second press
 * acts. A stray click or Enter does nothing on its own. It is one element
 * throughout, so focus stays on it between the two presses.
 */
import { useEffect, useState } from 'react';

const ARMED_MS = 5000;

interface Props {
  /** Visible text: at rest, armed, and while the action runs. */
  label: string;
  confirmLabel: string;
  pendingLabel: string;
  /** Accessible names at rest and armed (the visible text plus what it acts on). */
  name: string;
  confirmName: string;
  pending: boolean;
  onConfirm(): void;
}

export function TwoStepButton({ label, confirmLabel, pendingLabel, name, confirmName, pending, onConfirm }: Props) {
  const [armed, setArmed] = useState(false);
  useEffect(() => {
    if (!armed) return;
    const t = setTimeout(() => setArmed(false), ARMED_MS);
    return () => clearTimeout(t);
  }, [armed]);
  const press = () => {
    if (!armed) return setArmed(true);
    setArmed(false);
    onConfirm();
  };
  return (
    <button type="button" className={armed ? 'btn btn-small btn-danger' : 'btn btn-small'} disabled={pending} onClick={press} aria-label={armed ? confirmName : name}>
      {pending ? pendingLabel : armed ? confirmLabel : label}
    </button>
  );
}
