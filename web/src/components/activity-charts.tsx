/** The last hour per minute: attempts started and tasks finished; submit-to-start latency (average and max). */
import { useMemo } from 'react';
import { useQuery } from '@tanstack/react-query';
import { minutesQuery } from '../api/queries';
import { minuteSeries } from '../charts/minute-series';
import { TimeChart, type ChartSeries } from '../charts/time-chart';
import { Section } from './section';
import { ErrorNotice } from './error-notice';
import { RefreshNotice } from './refresh-notice';

export function ActivityCharts() {
  const q = useQuery(minutesQuery());
  const s = useMemo(() => minuteSeries(q.data?.minutes ?? [], q.data?.until ?? Date.now()), [q.data]);
  const throughput: ChartSeries[] = useMemo(
    () => [
      { label: 'started', color: (c) => c.started, values: s.started },
      { label: 'succeeded', color: (c) => c.succeeded, values: s.succeeded },
      { label: 'failed', color: (c) => c.failed, values: s.failed },
      { label: 'cancelled', color: (c) => c.cancelled, values: s.cancelled },
    ],
    [s],
  );
  const latency: ChartSeries[] = useMemo(
    () => [
      { label: 'average', color: (c) => c.latency, values: s.latencyAvgS },
      { label: 'max', color: (c) => c.latencyMax, values: s.latencyMaxS },
    ],
    [s],
  );
  const totals = useMemo(() => {
    const sum = (a: number[]) => a.reduce((n, x) => n + x, 0);
    return { started: sum(s.started), finished: sum(s.succeeded) + sum(s.failed) + sum(s.cancelled) };
  }, [s]);
  // Only charts that never loaded give their place to the error; a failed refresh keeps the last ones, with the error above.
  const never = q.isError && q.data === undefined;
  return (
    <div className="charts">
      {q.data !== undefined && <RefreshNotice query={q} what="the activity charts" />}
      <Section title="Tasks per minute" id="throughput" aside={<span className="muted">last hour · {totals.started} started, {totals.finished} finished</span>}>
        {never ? <ErrorNotice error={q.error} /> : <TimeChart x={s.x} series={throughput} label="Attempts started and tasks finished per minute, last hour" />}
      </Section>
      <Section title="Submit to start" id="latency" aside={<span className="muted">first attempts, per minute</span>}>
        {never ? <ErrorNotice error={q.error} /> : <TimeChart x={s.x} series={latency} yUnit="s" label="Time from submit to first start, average and maximum per minute, last hour" />}
      </Section>
    </div>
  );
}
