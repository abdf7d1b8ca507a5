/**
 * The agent's side of the reaper (reaper.ts): starts it, tells it about each
 * attempt's process group, and starts a new one if it dies.
 *
 * Contract:
 * - `add`/`remove` keep the registry of live groups here and send the same
 *   change to the reaper; a new reaper gets the whole registry first, in one
 *   write before "reaper started" is logged.
 * - A reaper that exits while the agent lives is logged (warn) and replaced
 *   at once, or after RESTART_DELAY_MS when it lived less than that (no hot
 *   loop when it cannot start at all).
 * - `close()` closes the pipe (the reaper then stops whatever is still
 *   registered, normally nothing) and waits briefly for it to exit.
 * - Neither the child nor its pipe keeps the agent's event loop alive.
 * - Lines are written in the order of the calls, coalesced: `add` and
 *   `deadline` go out at the next turn of the event loop (setImmediate, with
 *   whatever else is queued), `del` within DEL_DELAY_MS or with the next
 *   `add`, whichever comes first. A late `del` is harmless: the reaper only
 *   ever signals a group while a member still carries that task's
 *   DROVER_TASK_ID. Measured (2,000 /bin/true through one agent with 8
 *   slots, `node --cpu-prof`): one write(2) per line cost the agent's main
 *   thread 0.26 ms per attempt on this loaded 2-core machine (and woke the
 *   reaper each time); coalesced, adds and dels of a busy agent share writes.
 *   Tried and dropped (2026-12-05): a reaper that naps 10 ms after each
 *   read, so that the agent's writes meanwhile wake nobody. The same 2,000
 *   /bin/true with `--prefetch 16`, nine runs each way in alternating groups
 *   of three, the reaper binary swapped between groups: 709-777/s against
 *   684-771/s as is, the agent's CPU 0.70-0.93 ms a task against 0.70-0.96
 *   ms. Within the spread, for an EOF and deadlines seen up to 10 ms later.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import type { Logger } from './logger.js';
import type { GroupWatch } from './process-runner.js';
import { REAPER_MAX_GRACE_MS, reaperCommand, type ReaperCommand } from './reaper-command.js';

const RESTART_DELAY_MS = 1_000;
/** How long a `del` may wait for company (see the contract). */
const DEL_DELAY_MS = 100;

export class ReaperClient implements GroupWatch {
  private child: ChildProcess | null = null;
  private readonly groups = new Map<number, string>();
  private readonly deadlines = new Map<number, { termAt: number; killAt: number }>();
  private closed = false;
  private restartTimer: NodeJS.Timeout | null = null;
  /** Lines not written yet, in call order. */
  private queued = '';
  private flushSoon: NodeJS.Immediate | null = null;
  private flushLater: NodeJS.Timeout | null = null;
  readonly graceMs: number;
  /** What is started (native/reaper.c when built, else reaper.ts under this Node; see start()). */
  command: ReaperCommand;

  constructor(
    killGraceMs: number,
    private readonly log: Logger,
    /** Which reaper (tests): one of the two, or a command of one's own; default reaperCommand's choice. */
    command?: 'native' | 'node' | ReaperCommand,
  ) {
    this.graceMs = Math.min(killGraceMs, REAPER_MAX_GRACE_MS);
    this.command = typeof command === 'object' ? command : reaperCommand(this.graceMs, command);
    this.start();
  }

  /** The running reaper's pid (tests, logs). */
  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  add(pgid: number, taskId: string): void {
    this.groups.set(pgid, taskId);
    this.write(`add ${pgid} ${taskId}\n`, 'soon');
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
    this.write(`deadline ${pgid} ${term} ${kill}\n`, 'soon');
  }

  remove(pgid: number): void {
    this.deadlines.delete(pgid);
    if (!this.groups.delete(pgid)) return;
    this.write(`del ${pgid}\n`, 'later');
  }

  async close(timeoutMs = this.graceMs + 2_000): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.flush();
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
    const child = spawn(this.command.file, this.command.args, { stdio: ['pipe', 'ignore', 'inherit'], env: {} });
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
    child.once('error', (err) => {
      // The native reaper was built but cannot be started here (a noexec mount, a foreign architecture):
      // from now on reaper.ts, started at once.
      const fellBack = this.command.kind === 'native';
      if (fellBack) {
        this.log.warn({ err, file: this.command.file }, 'the native reaper did not start; using the reaper in JavaScript');
        this.command = reaperCommand(this.graceMs, 'node');
      }
      onGone(err.message);
      if (fellBack && this.restartTimer) {
        clearTimeout(this.restartTimer);
        this.start();
      }
    });
    child.once('exit', (code, signal) => onGone(signal ? `killed by ${signal}` : `exit code ${code}`));
    // The new reaper gets the whole registry, written now rather than at the next turn: an agent
    // killed in between would leave the live groups to a reaper that knows none of them (seen
    // in CI: the agent was killed within the window after 'reaper started' was logged).
    // Queued lines were for the old one (the registry has their effect).
    this.queued = '';
    for (const [pgid, taskId] of this.groups) this.queued += `add ${pgid} ${taskId}\n`;
    for (const [pgid, d] of this.deadlines) this.sendDeadline(pgid, d.termAt, d.killAt);
    this.flush();
    if (child.pid !== undefined) this.log.info({ pid: child.pid, graceMs: this.graceMs, kind: this.command.kind }, 'reaper started');
  }

  private write(line: string, when: 'soon' | 'later'): void {
    this.queued += line;
    if (when === 'soon') this.flushSoon ??= setImmediate(() => this.flush());
    else if (!this.flushLater) {
      this.flushLater = setTimeout(() => this.flush(), DEL_DELAY_MS);
      this.flushLater.unref();
    }
  }

  private flush(): void {
    if (this.flushSoon) clearImmediate(this.flushSoon);
    if (this.flushLater) clearTimeout(this.flushLater);
    this.flushSoon = null;
    this.flushLater = null;
    const lines = this.queued;
    this.queued = '';
    const stdin = this.child?.stdin;
    if (lines && stdin && stdin.writable) stdin.write(lines);
  }
}
