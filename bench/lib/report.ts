/**
 * The bench's output: one markdown table (measure | Drover | peer | ratio |
 * target met?) under a header line with the date, machine, node version and
 * the exact command, then numbered notes giving, for each row, what its span
 * starts and ends on and how each side was configured. Rows are also printed
 * to stderr as they are measured, so a long run shows progress.
 */
import { execFileSync } from 'node:child_process';
import { cpus, totalmem } from 'node:os';

export interface Row {
  measure: string;
  drover: string;
  peer: string;
  /** Drover ÷ peer, oriented so that > 1 is better for Drover, or ''. */
  ratio: string;
  /** 'yes', '**no**', or '' (no target). */
  met: string;
  /** What the span starts and ends on, and the command / config of both sides. */
  note: string;
}

/** "1.23×" */
export const ratio = (x: number): string => (Number.isFinite(x) ? `${x.toFixed(2)}×` : 'n/a');

export const met = (ok: boolean, target: string): string => (ok ? `yes (${target})` : `**no** (${target})`);

export class Report {
  readonly rows: Row[] = [];
  failures = 0;

  add(row: Row): void {
    console.error(`  ${row.measure}: Drover ${row.drover} | peer ${row.peer} | ${row.ratio} ${row.met}`);
    this.rows.push(row);
  }

  /** A part that could not be measured: a row saying why, and a non-zero exit. */
  fail(measure: string, err: unknown): void {
    const msg = (err instanceof Error ? err.message : String(err)).split('\n').map((l) => l.trim()).filter(Boolean).slice(0, 4).join(' / ');
    console.error(`  ${measure} FAILED: ${msg}`);
    this.rows.push({ measure, drover: 'not measured', peer: '', ratio: '', met: '**no**', note: `FAILED: ${msg}` });
    this.failures++;
  }

  /** Runs one part; a throw becomes a FAILED row and the rest of the bench goes on. */
  async part(measure: string, fn: () => Promise<void>): Promise<void> {
    try {
      await fn();
    } catch (err) {
      this.fail(measure, err);
    }
  }

  print(command: string, run: string): void {
    const esc = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
    const lines = [
      `Drover bench, ${new Date().toISOString()}; ${machine()}; node ${process.version}; command: \`${command}\` (${run}). Ratio: Drover ÷ peer as rates (> 1: Drover faster); latency ratios are Drover ÷ peer as times (≤ 1: Drover faster).`,
      '',
      '| measure | Drover | peer | ratio | target met? |',
      '| --- | --- | --- | --- | --- |',
      ...this.rows.map((r, i) => `| ${esc(r.measure)} [${i + 1}] | ${esc(r.drover)} | ${esc(r.peer)} | ${r.ratio} | ${esc(r.met)} |`),
      '',
      ...this.rows.map((r, i) => `${i + 1}. ${r.note}`),
    ];
    console.log(lines.join('\n'));
  }
}

function machine(): string {
  const c = cpus();
  let load = '';
  try {
    load = `, load ${execFileSync('cat', ['/proc/loadavg']).toString().split(' ').slice(0, 3).join(' ')}`;
  } catch {
    load = '';
  }
  return `${c.length} × ${c[0]?.model.trim() ?? 'unknown CPU'}, ${(totalmem() / 1024 ** 3).toFixed(1)} GiB${load}`;
}

/** The older sections' rows (recovery.ts, dashboard.ts): [measure, result, note]. */
export type LegacyRow = [string, string, string];

export function fromLegacy([measure, result, note]: LegacyRow): Row {
  return { measure, drover: result, peer: '', ratio: '', met: /not met/.test(note) ? '**no**' : /\bmet\b/.test(note) ? 'yes' : '', note: note || 'see bench/dashboard.ts or bench/recovery.ts for the span' };
}
