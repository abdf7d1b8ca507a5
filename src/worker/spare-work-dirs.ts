/**
 * Work directories made ahead of the attempts that will use them.
 *
 * Contract: take() hands out a directory made by work-dir.ts's
 * createWorkDir (fresh, with its `out`, never handed out twice), at once when
 * a spare is ready and otherwise by making one then; every take is followed
 * by making spares until `keep` are ready or being made. A spare is named
 * `attempt-0-<random>` (not after the task it will serve, which is not known
 * yet), a shape leftovers.ts recognises: spares an agent that died left
 * behind are removed by the next one, like any attempt directory (no process
 * carries their marker). close() removes the spares and makes no more.
 *
 * Why: making a directory and its `out` are two metadata calls that every
 * attempt waited for between its assignment and its spawn. On this machine's
 * ext4 disk, shared with fsyncing databases, they took 0.6-1.3 ms per attempt
 * (a 100-step PostgreSQL chain, timestamps in process-runner.ts); made while
 * the previous attempt runs, they leave that path.
 *
 * Where the work-directory addon is built, spares are made in threadpool jobs
 * shared with other makings and removals (work-dir-native.ts): within its
 * batching window while more than half of `keep` are ready or being made, at
 * once when fewer are. A spare that cannot be made (disk full, permissions)
 * is not retried until the next take, which then makes its directory itself
 * and fails the way it always did, with the error naming the path.
 */
import type { Logger } from './logger.js';
import { createWorkDir, createWorkDirs, removeWorkDir, type WorkDir } from './work-dir.js';

/** The task-id part of a spare's name (see the contract). */
export const SPARE_NAME = 'attempt';

export interface WorkDirSource {
  take(taskId: string, attempt: number): Promise<WorkDir>;
}

export class SpareWorkDirs implements WorkDirSource {
  private readonly ready: WorkDir[] = [];
  private making = 0;
  private closed = false;
  private readonly pending = new Set<Promise<void>>();

  constructor(
    private readonly parent: string,
    private readonly keep: number,
    private readonly log?: Logger,
  ) {}

  /** Spares ready now (tests). */
  get spares(): number {
    return this.ready.length;
  }

  /** Resolves once the makings under way have ended (tests). */
  async made(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }

  /** Makes spares until `keep` are ready or being made (see the contract for when). */
  fill(): void {
    const missing = this.keep - this.ready.length - this.making;
    if (!this.closed && missing > 0) this.make(missing, (this.ready.length + this.making) * 2 <= this.keep ? 'now' : 'soon');
  }

  take(taskId: string, attempt: number): Promise<WorkDir> {
    const spare = this.ready.shift();
    this.fill();
    return spare ? Promise.resolve(spare) : createWorkDir(this.parent, taskId, attempt);
  }

  /** Makes no more spares, waits for those being made, and removes every spare not handed out. */
  async close(): Promise<void> {
    this.closed = true;
    await this.made();
    await Promise.all(this.ready.splice(0).map((wd) => removeWorkDir(wd).catch(() => {})));
  }

  private make(count: number, when: 'now' | 'soon'): void {
    this.making += count;
    const p = createWorkDirs(this.parent, SPARE_NAME, 0, count, when).then(
      async (made) => {
        this.making -= count;
        if (this.closed) {
          await Promise.all(made.map((wd) => removeWorkDir(wd).catch(() => {})));
          return;
        }
        this.ready.push(...made);
      },
      (err: unknown) => {
        this.making -= count;
        // Not retried here (see the contract): the next take tries again, and an attempt that needs it says why.
        this.log?.debug({ err, dir: this.parent }, 'could not make a spare work dir');
      },
    );
    const tracked = p.finally(() => this.pending.delete(tracked));
    this.pending.add(tracked);
  }
}
