/**
 * Undo for a failed start: remembers what a directory held before a command
 * began, so that on failure it removes exactly what this run added (the
 * directory itself, and the parents it had to make, when it did not exist).
 * Nothing that was there before is touched.
 */
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';

export interface CreatedPaths {
  /** Removes what was added since the snapshot; never throws (a start's own error matters more). */
  undo(): void;
}

export function snapshotDir(dir: string): CreatedPaths {
  // The top-most directory that does not exist yet: mkdir -p creates it and everything below.
  let missing: string | null = null;
  for (let d = dir; !existsSync(d); d = dirname(d)) {
    missing = d;
    if (dirname(d) === d) break;
  }
  const before = missing === null ? new Set(readdirSync(dir)) : null;
  return {
    undo() {
      try {
        if (missing !== null) {
          rmSync(missing, { recursive: true, force: true });
          return;
        }
        if (!existsSync(dir)) return;
        for (const name of readdirSync(dir)) if (!before!.has(name)) rmSync(join(dir, name), { recursive: true, force: true });
      } catch {
        // Best effort: the caller reports the start's failure either way.
      }
    },
  };
}
