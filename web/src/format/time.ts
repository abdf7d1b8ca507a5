/** Times as the dashboard shows them: local wall-clock time, the date only when it is not today. */

const timeFmt = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false });
const dateTimeFmt = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', hour12: false });
const fullFmt = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
const clockFmt = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', hour12: false });
const dayFmt = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric' });

/** Hours and minutes, 24-hour, as the rest of the dashboard (charts' time axes). */
export function formatClock(ms: number): string {
  return clockFmt.format(new Date(ms));
}

/** Month and day ("Dec 4"): under a chart's first time tick and where the day changes. */
export function formatDay(ms: number): string {
  return dayFmt.format(new Date(ms));
}

export function formatTime(iso: string | null, now = Date.now()): string {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '—';
  const today = new Date(now);
  const sameDay = d.getFullYear() === today.getFullYear() && d.getMonth() === today.getMonth() && d.getDate() === today.getDate();
  return sameDay ? timeFmt.format(d) : dateTimeFmt.format(d);
}

export function formatFullTime(iso: string | null): string {
  if (!iso) return '';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? '' : `${fullFmt.format(d)} (${d.toISOString()})`;
}

/** "4 s ago", "3 min ago", "2 h ago", "5 d ago". */
export function formatAge(iso: string | null, now: number): string {
  if (!iso) return '—';
  const ms = now - Date.parse(iso);
  if (!Number.isFinite(ms)) return '—';
  if (ms < 1000) return 'just now';
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s} s ago`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ago`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h} h ago`;
  return `${Math.floor(h / 24)} d ago`;
}

/** A `datetime-local` input's value (local time, minutes) ↔ ISO-8601 UTC. */
export function localInputToIso(v: string): string | undefined {
  if (!v) return undefined;
  const d = new Date(v);
  return Number.isNaN(d.getTime()) ? undefined : d.toISOString();
}

export function isoToLocalInput(iso: string | undefined): string {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}

const zoneFmts = new Map<string, Intl.DateTimeFormat>();

/** The wall-clock reading of `iso` in IANA zone `tz` ("Sun, Mar 8, 2026, 03:00:00"); the ISO text if the browser does not know the zone. */
export function formatInZone(iso: string, tz: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '—';
  let f = zoneFmts.get(tz);
  if (!f) {
    try {
      f = new Intl.DateTimeFormat(undefined, { timeZone: tz, weekday: 'short', year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false });
    } catch {
      return d.toISOString();
    }
    zoneFmts.set(tz, f);
  }
  return f.format(d);
}

/** This browser's IANA zone (e.g. "Europe/Berlin"). */
export function browserTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone;
}
