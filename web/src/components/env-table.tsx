/**
 * The task's environment. Values are masked until their owner reveals them;
 * for anyone else (an admin looking at another user's task) the server sends
 * no values at all (envRedacted), and there is nothing to reveal.
 */
import { useState } from 'react';
import { KvTable } from './kv-table';

export function EnvTable({ env, redacted }: { env: Record<string, string>; redacted: boolean }) {
  const [revealed, setRevealed] = useState(false);
  const entries = Object.entries(env);
  if (entries.length === 0) return <p className="muted">No variables set.</p>;
  const shown = revealed && !redacted;
  return (
    <div className="env">
      <div className="env-bar">
        {redacted ? (
          <p className="muted">Values are hidden: only the task’s owner can see them.</p>
        ) : (
          <button type="button" className="btn btn-small" aria-pressed={revealed} onClick={() => setRevealed((r) => !r)}>
            {revealed ? 'Hide values' : 'Reveal values'}
          </button>
        )}
      </div>
      <KvTable
        entries={entries}
        keyHeading="Variable"
        valueClass="env-value"
        valueTestId="env-value"
        value={(v) => (shown ? <code>{v}</code> : <span className="masked" aria-label="hidden value">••••••••</span>)}
      />
    </div>
  );
}
