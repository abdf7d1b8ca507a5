/** A titled card on a page. */
import type { ReactNode } from 'react';

export function Section({ title, id, children, aside }: { title: string; id?: string; children: ReactNode; aside?: ReactNode }) {
  const headingId = id ? `${id}-title` : undefined;
  return (
    <section className="card" id={id} aria-labelledby={headingId}>
      <div className="card-head">
        <h2 id={headingId}>{title}</h2>
        {aside}
      </div>
      {children}
    </section>
  );
}
