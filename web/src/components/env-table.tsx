/**
 * The task's environment. Values are masked until their owner reveals them;
 * for anyone else (an admin looking at another user's task) the server sends
 * no values at all (envRedacted), and there is nothing to reveal.
 */
import { useState } from 'react';

export function EnvTable({ env, redacted }: { env: Record<string, string>; redacted: boolean }) {
  const [revealed, setRevealed] = useState(false);
  const entries = Object.entries(env);
  if (entries.length === 0) return <p className="muted">No variables set.</p>;
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
      <table className="table kv-table">
        <thead>
          <tr>
            <th scope="col">Variable</th>
            <th scope="col">Value</th>
          </tr>
        </thead>
        <tbody>
          {entries.map(([k, v]) => (
            <tr key={k}>
              <td>
                <code>{k}</code>
              </td>
              <td className="env-value" data-testid="env-value">
                {revealed && !redacted ? <code>{v}</code> : <span className="masked" aria-label="hidden value">••••••••</span>}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
