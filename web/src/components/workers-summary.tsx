/** Workers online and slots in use, linking to the Workers page. */
import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { workersQuery } from '../api/queries';
import { Section } from './section';
import { SlotsMeter } from './slots-meter';
import { ErrorNotice } from './error-notice';
import { RefreshNotice } from './refresh-notice';

export function WorkersSummary() {
  const q = useQuery(workersQuery());
  const ws = q.data?.workers ?? [];
  const online = ws.filter((w) => w.state === 'connected' || w.state === 'draining');
  const lost = ws.filter((w) => w.state === 'lost').length;
  const slots = online.reduce((n, w) => n + w.slots, 0);
  const used = online.reduce((n, w) => n + w.slotsUsed, 0);
  return (
    <Section title="Workers" id="workers-summary" aside={<Link to="/workers">All workers</Link>}>
      {q.data !== undefined && <RefreshNotice query={q} what="the workers" />}
      {q.isError && q.data === undefined ? (
        <ErrorNotice error={q.error} />
      ) : (
        <div className="workers-summary">
          <p className="big-number" data-testid="workers-online">
            {q.data ? online.length : '–'} <span className="big-number-label">online</span>
          </p>
          <SlotsMeter used={used} total={slots} />
          {lost > 0 && <p className="warn-text">{lost} lost (not heard from within the lease)</p>}
        </div>
      )}
    </Section>
  );
}
