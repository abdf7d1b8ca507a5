/** Submit: an empty form, or (?from=<task id>) one filled from an existing task ("Submit again"). */
import { useQuery } from '@tanstack/react-query';
import { useNavigate, useSearchParams } from 'react-router';
import { taskDetailQuery } from '../api/queries';
import { PageHeader } from '../components/page-header';
import { SubmitForm } from '../components/submit-form';
import { ErrorNotice } from '../components/error-notice';
import { fromTask } from '../submit/form-model';

const TASK_ID = /^[0-9A-HJKMNP-TV-Z]{26}$/;

export function SubmitPage() {
  const [params] = useSearchParams();
  const navigate = useNavigate();
  const from = params.get('from');
  const fromId = from && TASK_ID.test(from) ? from : null;
  const src = useQuery({ ...taskDetailQuery(fromId ?? ''), enabled: fromId !== null });
  const onSubmitted = (t: { id: string }) => navigate(`/tasks/${t.id}`);
  return (
    <>
      <PageHeader title={fromId ? 'Submit again' : 'Submit a task'} docTitle="Submit" subtitle="Runs on the first free worker whose labels match." />
      {fromId === null ? (
        <SubmitForm onSubmitted={onSubmitted} />
      ) : src.isError ? (
        <ErrorNotice error={src.error} title="Could not load the task to copy" />
      ) : !src.data ? (
        <div className="card skeleton-card" aria-busy="true" />
      ) : (
        <SubmitForm
          key={fromId}
          initial={fromTask(src.data.task)}
          note={
            src.data.task.envRedacted && Object.keys(src.data.task.env).length > 0
              ? `Copied from ${src.data.task.name}. Its environment values are hidden from you and were not copied.`
              : `Copied from ${src.data.task.name} (${src.data.task.id}).`
          }
          onSubmitted={onSubmitted}
        />
      )}
    </>
  );
}
