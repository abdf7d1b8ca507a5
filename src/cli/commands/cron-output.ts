/** What `drover cron` prints: tables and field lists of schedules, escaped (values are user data). */
import type { Schedule, ScheduleDetail } from '../../client/schedule-types.js';
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
    ['NAME', 'OWNER', 'SCHEDULE', 'TZ', 'NEXT', 'LAST SLOT', 'OVERLAP', 'CATCHUP', 'STATE'],
    list.map((s) => [s.name, s.owner, s.schedule, s.tz, formatTime(s.nextFireAt), formatTime(s.lastSlotAt), s.overlap, s.catchup === 'all' ? `all (max ${s.maxCatchup})` : s.catchup, s.paused ? 'paused' : 'active'].map(safeText)),
  );
}

export function formatScheduleDetail(d: ScheduleDetail): string {
  const s = d.schedule;
  const t = s.task;
  const run = t.command !== null ? [t.command, ...t.args].join(' ') : `script via ${(t.interpreter.length ? t.interpreter : ['(its #! line)']).join(' ')}`;
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
    ['task', `${t.name}: ${run}`],
    ['env', Object.keys(t.env).length ? Object.keys(t.env).join(',') + (t.envRedacted ? ' (values only for the owner)' : '') : '-'],
    ['timeout', formatMs(t.timeoutMs)],
    ['retries', String(t.retry.maxRetries)],
    ['created', formatTime(s.createdAt)],
  ];
  const width = Math.max(...fields.map(([k]) => k.length));
  let out = fields.map(([k, v]) => `${(k + ':').padEnd(width + 1)} ${safeText(v)}`).join('\n') + '\n';
  out += `\nNEXT${s.paused ? ' (if resumed)' : ''}\n`;
  out += d.next.length ? formatFireTimes(d.next.map((x) => Date.parse(x)), s.tz) : '(none)\n';
  out += '\nRECENT RUNS\n';
  out += d.runs.length
    ? formatTable(
        ['SLOT', 'OUTCOME', 'TASK', 'STATE', 'LATENESS', 'REASON'],
        d.runs.map((r) => [formatTime(r.slotAt), r.outcome, r.taskId ?? '-', r.taskState ?? '-', formatMs(r.latenessMs), r.reason ?? ''].map(safeText)),
      )
    : '(none)\n';
  return out;
}
