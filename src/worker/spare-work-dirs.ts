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
 * A spare that cannot be made (disk full, permissions) is not retried until
 * the next take, which then makes its directory itself and fails the way it
 * always did, with the error naming the path.
 */
import type { Logger } from './logger.js';
import { createWorkDir, removeWorkDir, type WorkDir } from './work-dir.js';

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

  /** Makes spares until `keep` are ready or being made. */
  fill(): void {
    while (!this.closed && this.ready.length + this.making < this.keep) this.makeOne();
  }

  take(taskId: string, attempt: number): Promise<WorkDir> {
    const spare = this.ready.shift();
    this.fill();
    return spare ? Promise.resolve(spare) : createWorkDir(this.parent, taskId, attempt);
  }

  /** Makes no more spares, waits for those being made, and removes every spare not handed out. */
  async close(): Promise<void> {
    this.closed = true;
    while (this.pending.size > 0) await Promise.all([...this.pending]);
    await Promise.all(this.ready.splice(0).map((wd) => removeWorkDir(wd).catch(() => {})));
  }

  private makeOne(): void {
    this.making++;
    const p = createWorkDir(this.parent, SPARE_NAME, 0).then(
      (wd) => {
        this.making--;
        if (this.closed) return removeWorkDir(wd).catch(() => {});
        this.ready.push(wd);
      },
      (err: unknown) => {
        this.making--;
        // Not retried here (see the contract): the next take tries again, and an attempt that needs it says why.
        this.log?.debug({ err, dir: this.parent }, 'could not make a spare work dir');
      },
    );
    const tracked = p.finally(() => this.pending.delete(tracked));
    this.pending.add(tracked);
  }
}
