/** A two-column definition list (term: value); values are React nodes, user data as text. */
import type { ReactNode } from 'react';

export function KvList({ items }: { items: ReadonlyArray<readonly [string, ReactNode]> }) {
  return (
    <dl className="kv">
      {items.map(([k, v]) => (
        <div className="kv-row" key={k}>
          <dt>{k}</dt>
          <dd>{v}</dd>
        </div>
      ))}
    </dl>
  );
}
