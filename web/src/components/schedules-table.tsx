/**
 * Schedules: name (expands to the next fire times and recent runs),
 * expression and zone, paused or active, next fire time, the newest run
 * (state, lateness, its task), and the actions. The list has no runs, so
 * each row reads its schedule's detail (GET /v1/schedules/:name).
 */
import { Fragment, useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { scheduleDetailQuery } from '../api/queries';
import type { Schedule, ScheduleRunInfo } from '../api/types';
import { formatDuration } from '../format/duration';
import { StateBadge } from './state-badge';
import { TimeText } from './time-text';
import { ScheduleActions } from './schedule-actions';
import { ErrorNotice } from './error-notice';

const COLUMNS = 6;

export function SchedulesTable({ schedules, showOwner }: { schedules: Schedule[]; showOwner: boolean }) {
  return (
    <div className="table-wrap">
      <table className="table schedules-table">
        <caption className="visually-hidden">Schedules</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Schedule</th>
            <th scope="col">State</th>
            <th scope="col">Next fire</th>
            <th scope="col">Last run</th>
            <th scope="col">
              <span className="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {schedules.map((s) => (
            <ScheduleRow key={s.id} schedule={s} showOwner={showOwner} />
          ))}
        </tbody>
      </table>
    </div>
  );
}

function ScheduleRow({ schedule: s, showOwner }: { schedule: Schedule; showOwner: boolean }) {
  const [open, setOpen] = useState(false);
  const q = useQuery(scheduleDetailQuery(s.owner, s.name));
  const last = q.data?.runs[0];
  const detailId = `schedule-detail-${s.id}`;
  return (
    <Fragment>
      <tr data-schedule={s.name} data-paused={String(s.paused)}>
        <td data-label="Name">
          <button type="button" className="schedule-name" aria-expanded={open} aria-controls={detailId} onClick={() => setOpen(!open)}>
            <span className="schedule-caret" aria-hidden="true">
              {open ? '▾' : '▸'}
            </span>
            {s.name}
          </button>
          {showOwner && <span className="schedule-owner muted">{s.owner}</span>}
        </td>
        <td data-label="Schedule">
          <code>{s.schedule}</code> <span className="muted">{s.tz}</span>
        </td>
        <td data-label="State">
          <span className={s.paused ? 'badge badge-paused' : 'badge badge-active'} data-testid="schedule-state">
            <span className="badge-icon" aria-hidden="true" />
            {s.paused ? 'paused' : 'active'}
          </span>
        </td>
        <td data-label="Next fire" data-testid="schedule-next">
          {s.nextFireAt ? <TimeText iso={s.nextFireAt} /> : <span className="muted">{s.paused ? 'paused' : '—'}</span>}
        </td>
        <td data-label="Last run" data-testid="schedule-last-run">
          {last ? <RunSummary run={last} /> : <span className="muted">{q.isPending ? '…' : 'none yet'}</span>}
        </td>
        <td className="col-actions">
          <ScheduleActions schedule={s} />
        </td>
      </tr>
      {open && (
        <tr className="schedule-detail-row" id={detailId}>
          <td colSpan={COLUMNS}>
            {q.isError && <ErrorNotice error={q.error} retry={() => void q.refetch()} title={`Could not load schedule ${s.name}`} />}
            {q.data && (
              <div className="schedule-detail">
                <div>
                  <h3>Next fire times</h3>
                  <ol className="schedule-next-list" data-testid="schedule-next-times">
                    {q.data.next.map((t) => (
                      <li key={t}>
                        <TimeText iso={t} />
                      </li>
                    ))}
                  </ol>
                  {s.paused && <p className="muted">Paused: these are the times it would fire if resumed.</p>}
                </div>
                <div>
                  <h3>Recent runs</h3>
                  {q.data.runs.length === 0 ? (
                    <p className="muted">No slot has fired yet. Runs started with “Run now” are listed on the tasks page.</p>
                  ) : (
                    <ul className="schedule-runs" data-testid="schedule-runs">
                      {q.data.runs.map((r) => (
                        <li key={r.slotAt}>
                          <TimeText iso={r.slotAt} />
                          <RunSummary run={r} />
                        </li>
                      ))}
                    </ul>
                  )}
                </div>
              </div>
            )}
          </td>
        </tr>
      )}
    </Fragment>
  );
}

/** One slot's outcome: the task's state, how late it was created, a link to it; or why it was skipped. */
function RunSummary({ run }: { run: ScheduleRunInfo }) {
  if (run.outcome === 'skipped') return <span className="muted">skipped{run.reason ? ` (${run.reason})` : ''}</span>;
  return (
    <span className="schedule-run">
      {run.taskState ? <StateBadge state={run.taskState} /> : <span className="muted">removed</span>}
      {run.latenessMs !== null && <span className="muted">+{formatDuration(run.latenessMs)}</span>}
      {run.taskId && (
        <Link to={`/tasks/${run.taskId}`} className="schedule-task-link" data-task-link={run.taskId}>
          task
        </Link>
      )}
    </span>
  );
}
