/** What `drover cron` prints: tables and field lists of schedules, escaped (values are user data). */
import type { Schedule, ScheduleDetail, ScheduleRunInfo } from '../../client/schedule-types.js';
import { formatMs, formatTable, formatTime, safeText } from '../output.js';

/** "2026-03-08 03:00:00 EDT": a fire time as read on the wall clock of `tz`. */
export function wallClock(ms: number, tz: string): string {
  const parts = new Intl.DateTimeFormat('en-CA', {
    timeZone: tz, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23', timeZoneName: 'short',
  }).formatToParts(new Date(ms));
  const v = (t: string) => parts.find((p) => p.type === t)?.value ?? '';
  return `${v('year')}-${v('month')}-${v('day')} ${v('hour')}:${v('minute')}:${v('second')} ${v('timeZoneName')}`;
}

/** One line per fire time: UTC, then the schedule's wall clock. */
export function formatFireTimes(times: readonly number[], tz: string): string {
  return times.map((t) => `${formatTime(new Date(t).toISOString())}  ${wallClock(t, tz)}`).join('\n') + (times.length ? '\n' : '');
}

export function formatScheduleTable(list: readonly Schedule[]): string {
  return formatTable(
    ['NAME', 'OWNER', 'SCHEDULE', 'TZ', 'RUNS', 'NEXT', 'LAST SLOT', 'OVERLAP', 'CATCHUP', 'STATE'],
    list.map((s) =>
      [
        s.name,
        s.owner,
        s.schedule,
        s.tz,
        s.dag ? `dag ${s.dag.name}` : (s.task?.command ?? 'script'),
        formatTime(s.nextFireAt),
        formatTime(s.lastSlotAt),
        s.overlap,
        s.catchup === 'all' ? `all (max ${s.maxCatchup})` : s.catchup,
        s.paused ? 'paused' : 'active',
      ].map(safeText),
    ),
  );
}

export function formatScheduleDetail(d: ScheduleDetail): string {
  const s = d.schedule;
  const fields: Array<[string, string]> = [
    ['name', s.name],
    ['id', s.id],
    ['owner', s.owner],
    ['schedule', `${s.schedule} (${s.tz})`],
    ['state', s.paused ? 'paused' : 'active'],
    ['overlap', s.overlap],
    ['catchup', s.catchup === 'all' ? `all, at most ${s.maxCatchup}` : s.catchup],
    ['next fire', formatTime(s.nextFireAt)],
    ['last slot', formatTime(s.lastSlotAt)],
    ...whatRuns(s),
    ['created', formatTime(s.createdAt)],
  ];
  const width = Math.max(...fields.map(([k]) => k.length));
  let out = fields.map(([k, v]) => `${(k + ':').padEnd(width + 1)} ${safeText(v)}`).join('\n') + '\n';
  const missed = catchupLines(d.runs);
  if (missed.length) out += '\n' + missed.map((l) => safeText(l)).join('\n') + '\n';
  out += `\nNEXT${s.paused ? ' (if resumed)' : ''}\n`;
  out += d.next.length ? formatFireTimes(d.next.map((x) => Date.parse(x)), s.tz) : '(none)\n';
  out += '\nRECENT RUNS\n';
  out += d.runs.length
    ? formatTable(
        ['SLOT', 'OUTCOME', s.dag ? 'DAG RUN' : 'TASK', 'STATE', 'LATENESS', 'REASON'],
        d.runs.map((r) => [formatTime(r.slotAt), r.outcome, r.taskId ?? r.dagRunId ?? '-', r.taskState ?? r.dagRunState ?? '-', formatMs(r.latenessMs), r.reason ?? ''].map(safeText)),
      )
    : '(none)\n';
  return out;
}

/** What each run does, as `cron show` lists it: the task's command and settings, or the DAG and its parameters. */
function whatRuns(s: Schedule): Array<[string, string]> {
  if (s.dag) {
    const params = Object.entries(s.dag.params);
    return [
      ['dag', `${s.dag.name} (its newest version at each run)`],
      ['params', params.length ? params.map(([k, v]) => `${k}=${v}`).join(' ') : '-'],
    ];
  }
  const t = s.task!;
  const run = t.command !== null ? [t.command, ...t.args].join(' ') : `script via ${(t.interpreter.length ? t.interpreter : ['(its #! line)']).join(' ')}`;
  return [
    ['task', `${t.name}: ${run}`],
    ['env', Object.keys(t.env).length ? Object.keys(t.env).join(',') + (t.envRedacted ? ' (values only for the owner)' : '') : '-'],
    ['timeout', formatMs(t.timeoutMs)],
    ['retries', String(t.retry.maxRetries)],
  ];
}

/**
 * One line per catch-up among the recent runs, newest first. A catch-up
 * that skipped slots stores its first and last skipped slot, each with the
 * count (API `catchup`); two adjacent records with the same reason and count
 * are one catch-up. A capped `--catchup all` is a warning:
 *   warning: catch-up capped: 1,234 missed runs dropped (2026-01-01T00:01:00Z … 2026-01-01T20:34:00Z)
 */
export function catchupLines(runs: readonly ScheduleRunInfo[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < runs.length; i++) {
    const r = runs[i]!;
    if (r.catchup === null || r.reason === null || !r.reason.startsWith('catchup_')) continue;
    const o = runs[i + 1];
    const pair = r.catchup.skipped > 1 && o?.catchup != null && o.reason === r.reason && o.catchup.skipped === r.catchup.skipped && o.catchup.exact === r.catchup.exact;
    if (pair) i++;
    const span = pair ? `${formatTime(o!.slotAt)} … ${formatTime(r.slotAt)}` : r.catchup.skipped > 1 ? `… ${formatTime(r.slotAt)}` : formatTime(r.slotAt);
    const n = `${r.catchup.exact ? '' : 'at least '}${r.catchup.skipped.toLocaleString('en-US')}`;
    const runsWord = r.catchup.skipped === 1 && r.catchup.exact ? 'run' : 'runs';
    if (r.reason === 'catchup_capped') out.push(`warning: catch-up capped: ${n} missed ${runsWord} dropped (${span}); only the newest --max-catchup ran`);
    else if (r.reason === 'catchup_latest') out.push(`missed: ${n} ${runsWord} skipped by --catchup latest, which ran the newest one (${span})`);
    else out.push(`missed: ${n} ${runsWord} skipped by --catchup ${r.reason.slice('catchup_'.length)} (${span})`);
  }
  return out;
}
