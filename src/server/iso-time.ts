/**
 * Epoch milliseconds → ISO-8601 (`YYYY-MM-DDTHH:MM:SS.mmmZ`), the same string
 * as `new Date(t).toISOString()`, faster: a task list page formats five times
 * per row, and toISOString (a Date object and its formatting each time) was a
 * measurable share of a page's server time. The date part is computed once
 * per UTC day (the last day seen is kept), the time of day by integer
 * arithmetic. Anything but a whole millisecond in years 1970 to 9999 goes
 * through toISOString itself (which also keeps its RangeError for invalid times).
 */
const DAY_MS = 86_400_000;
/** 10000-01-01T00:00:00.000Z: from there on toISOString writes an extended (+0YYYYY) year. */
const FAST_END = 253_402_300_800_000;

let lastDay = -1;
let lastDayPrefix = '';

const pad2 = (n: number): string => (n < 10 ? `0${n}` : `${n}`);
const pad3 = (n: number): string => (n < 10 ? `00${n}` : n < 100 ? `0${n}` : `${n}`);

export function isoTime(t: number): string {
  if (!(t >= 0 && t < FAST_END) || t % 1 !== 0) return new Date(t).toISOString();
  const day = Math.floor(t / DAY_MS);
  if (day !== lastDay) {
    lastDayPrefix = new Date(day * DAY_MS).toISOString().slice(0, 11); // "YYYY-MM-DDT"
    lastDay = day;
  }
  let r = t - day * DAY_MS;
  const h = Math.floor(r / 3_600_000);
  r -= h * 3_600_000;
  const m = Math.floor(r / 60_000);
  r -= m * 60_000;
  const s = Math.floor(r / 1000);
  return `${lastDayPrefix}${pad2(h)}:${pad2(m)}:${pad2(s)}.${pad3(r - s * 1000)}Z`;
}
