/**
 * Schedules: name (expands to what each run is in full, the next fire times
 * and recent runs) and, under it, what each run is in a line (a task's
 * command, or a DAG); expression and zone, paused or active, next fire
 * time, the newest run (state, lateness, its task or DAG run), and the
 * actions. The list has no runs, so each row reads its schedule's detail
 * (GET /v1/schedules/:name).
 */
import { Fragment, useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { scheduleDetailQuery } from '../api/queries';
import type { Schedule, ScheduleRunInfo } from '../api/types';
import { dagRunPath } from '../dag/dag-links';
import { formatDuration } from '../format/duration';
import { StateBadge } from './state-badge';
import { TimeText } from './time-text';
import { ScheduleActions } from './schedule-actions';
import { ErrorNotice } from './error-notice';
import { ScheduleTarget } from './schedule-target';

const COLUMNS = 6;

/** `me`: the signed-in user, for links to a DAG schedule's DAG (its owner's). */
export function SchedulesTable({ schedules, showOwner, me }: { schedules: Schedule[]; showOwner: boolean; me: string }) {
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
            <ScheduleRow key={s.id} schedule={s} showOwner={showOwner} me={me} />
          ))}
        </tbody>
      </table>
    </div>
  );
}

function ScheduleRow({ schedule: s, showOwner, me }: { schedule: Schedule; showOwner: boolean; me: string }) {
  const [open, setOpen] = useState(false);
  const q = useQuery(scheduleDetailQuery(s.owner, s.name, s.id));
  const last = q.data?.runs[0];
  const detailId = `schedule-detail-${s.id}`;
  return (
    <Fragment>
      <tr data-schedule={s.name} data-paused={String(s.paused)} data-runs={s.dag ? 'dag' : 'task'}>
        <td data-label="Name" className="schedule-name-cell">
          <button type="button" className="schedule-name" aria-expanded={open} aria-controls={detailId} onClick={() => setOpen(!open)}>
            <span className="schedule-caret" aria-hidden="true">
              {open ? '▾' : '▸'}
            </span>
            {s.name}
          </button>
          {showOwner && <span className="schedule-owner muted">{s.owner}</span>}
          <ScheduleTarget schedule={s} me={me} />
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
                <div className="schedule-detail-target">
                  <h3>Each run</h3>
                  <ScheduleTarget schedule={s} me={me} />
                </div>
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
                    <p className="muted">No slot has fired yet. Runs started with “Run now” are listed on the {s.dag ? 'DAG’s page' : 'tasks page'}.</p>
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

/**
 * One slot's outcome: the state of what it started (a DAG schedule's DAG
 * run, else its task), how late that was created, a link to it; or why it
 * was skipped (dag_missing, dag_params_invalid for a DAG schedule).
 */
function RunSummary({ run }: { run: ScheduleRunInfo }) {
  if (run.outcome === 'skipped') return <span className="muted">skipped{run.reason ? ` (${run.reason})` : ''}</span>;
  const state = run.dagRunId !== null ? run.dagRunState : run.taskState;
  return (
    <span className="schedule-run">
      {state ? <StateBadge state={state} /> : <span className="muted">removed</span>}
      {run.latenessMs !== null && <span className="muted">+{formatDuration(run.latenessMs)}</span>}
      {run.dagRunId !== null ? (
        <Link to={dagRunPath(run.dagRunId)} className="schedule-task-link" data-dag-run-link={run.dagRunId}>
          DAG run
        </Link>
      ) : (
        run.taskId && (
          <Link to={`/tasks/${run.taskId}`} className="schedule-task-link" data-task-link={run.taskId}>
            task
          </Link>
        )
      )}
    </span>
  );
}
