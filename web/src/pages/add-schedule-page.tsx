/** Add schedule (/schedules/new): the form; once the API has created it, back to the Schedules page, where it is listed. */
import { useNavigate } from 'react-router';
import { PageHeader } from '../components/page-header';
import { ScheduleForm } from '../components/schedule-form';

export function AddSchedulePage() {
  const navigate = useNavigate();
  return (
    <>
      <PageHeader title="Add a schedule" docTitle="Add schedule" subtitle="Each fire time of the expression runs one task made from a template, or one run of one of your DAGs." />
      <ScheduleForm onCreated={() => navigate('/schedules')} />
    </>
  );
}
