/**
 * The agent's side of the reaper (reaper.ts): starts it, tells it about each
 * attempt's process group, and starts a new one if it dies.
 *
 * Contract:
 * - `add`/`remove` keep the registry of live groups here and send the same
 *   change to the reaper; a new reaper gets the whole registry first.
 * - A reaper that exits while the agent lives is logged (warn) and replaced
 *   at once, or after RESTART_DELAY_MS when it lived less than that (no hot
 *   loop when it cannot start at all).
 * - `close()` closes the pipe (the reaper then stops whatever is still
 *   registered, normally nothing) and waits briefly for it to exit.
 * - Neither the child nor its pipe keeps the agent's event loop alive.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import type { Logger } from './logger.js';
import type { GroupWatch } from './process-runner.js';
import { REAPER_MAX_GRACE_MS, REAPER_PATH } from './reaper.js';

const RESTART_DELAY_MS = 1_000;

export class ReaperClient implements GroupWatch {
  private child: ChildProcess | null = null;
  private readonly groups = new Map<number, string>();
  private readonly deadlines = new Map<number, { termAt: number; killAt: number }>();
  private closed = false;
  private restartTimer: NodeJS.Timeout | null = null;
  readonly graceMs: number;

  constructor(
    killGraceMs: number,
    private readonly log: Logger,
  ) {
    this.graceMs = Math.min(killGraceMs, REAPER_MAX_GRACE_MS);
    this.start();
  }

  /** The running reaper's pid (tests, logs). */
  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  add(pgid: number, taskId: string): void {
    this.groups.set(pgid, taskId);
    this.write(`add ${pgid} ${taskId}\n`);
  }

  /**
   * The dead-man deadline of one group (reaper.ts `deadline`), as times on
   * performance.now()'s clock; sent relative, so the two processes need no
   * common clock. Remembered and re-sent to a replacement reaper.
   */
  deadline(pgid: number, termAt: number, killAt: number): void {
    if (!this.groups.has(pgid)) return;
    this.deadlines.set(pgid, { termAt, killAt });
    this.sendDeadline(pgid, termAt, killAt);
  }

  private sendDeadline(pgid: number, termAt: number, killAt: number): void {
    const now = performance.now();
    const term = Math.max(0, Math.round(termAt - now));
    const kill = Math.max(term, Math.round(killAt - now));
    this.write(`deadline ${pgid} ${term} ${kill}\n`);
  }

  remove(pgid: number): void {
    this.deadlines.delete(pgid);
    if (!this.groups.delete(pgid)) return;
    this.write(`del ${pgid}\n`);
  }

  async close(timeoutMs = this.graceMs + 2_000): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit').catch(() => {});
    child.stdin?.end();
    const t = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    await exited;
    clearTimeout(t);
  }

  private start(): void {
    this.restartTimer = null;
    if (this.closed) return;
    const startedAt = Date.now();
    // No environment of the agent's (its token above all): the reaper needs none.
    const child = spawn(process.execPath, [REAPER_PATH, '--grace-ms', String(this.graceMs)], { stdio: ['pipe', 'ignore', 'inherit'], env: {} });
    this.child = child;
    child.stdin!.on('error', () => {}); // EPIPE when it died: 'exit' handles that
    (child.stdin as unknown as { unref?: () => void }).unref?.();
    child.unref();
    let gone = false;
    const onGone = (why: string) => {
      if (gone) return;
      gone = true;
      if (this.child === child) this.child = null;
      if (this.closed) return;
      const livedMs = Date.now() - startedAt;
      this.log.warn({ pid: child.pid, why, groups: this.groups.size }, 'the reaper exited; starting a new one');
      this.restartTimer = setTimeout(() => this.start(), livedMs < RESTART_DELAY_MS ? RESTART_DELAY_MS : 0);
      this.restartTimer.unref();
    };
    child.once('error', (err) => onGone(err.message));
    child.once('exit', (code, signal) => onGone(signal ? `killed by ${signal}` : `exit code ${code}`));
    if (child.pid !== undefined) this.log.info({ pid: child.pid, graceMs: this.graceMs }, 'reaper started');
    for (const [pgid, taskId] of this.groups) this.write(`add ${pgid} ${taskId}\n`);
    for (const [pgid, d] of this.deadlines) this.sendDeadline(pgid, d.termAt, d.killAt);
  }

  private write(line: string): void {
    const stdin = this.child?.stdin;
    if (stdin && stdin.writable) stdin.write(line);
  }
}
