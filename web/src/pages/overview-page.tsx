/** Overview: counts by state, activity over the last hour, workers, recent failures. */
import { useQuery } from '@tanstack/react-query';
import { countsQuery } from '../api/queries';
import { PageHeader } from '../components/page-header';
import { CountsGrid } from '../components/counts-grid';
import { ActivityCharts } from '../components/activity-charts';
import { RecentFailures } from '../components/recent-failures';
import { WorkersSummary } from '../components/workers-summary';
import { QueryErrorNotice } from '../components/refresh-notice';
import { useSignedIn } from '../auth/session-context';

export function OverviewPage() {
  const me = useSignedIn();
  const counts = useQuery(countsQuery());
  return (
    <>
      <PageHeader title="Overview" docTitle="Overview" subtitle={me.role === 'admin' ? 'All users' : 'Your tasks'} />
      <QueryErrorNotice query={counts} what="the counts" loadTitle="Could not load counts" />
      <CountsGrid counts={counts.data} />
      <ActivityCharts />
      <div className="overview-bottom">
        <WorkersSummary />
        <RecentFailures />
      </div>
    </>
  );
}
