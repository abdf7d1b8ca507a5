/**
 * Signals to a whole process group, and the test of whether it is gone.
 *
 * A task runs as the leader of its own group (spawned detached: pgid = pid),
 * so `process.kill(-pgid, sig)` reaches every descendant that did not leave
 * the group on purpose (setsid/setpgid). Linux does not hand out a pid while
 * it is still some group's id, so a pgid cannot be recycled to an unrelated
 * group while any member of ours remains.
 */
export function signalGroup(pgid: number, signal: NodeJS.Signals): 'sent' | 'gone' {
  try {
    process.kill(-pgid, signal);
    return 'sent';
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return 'gone';
    throw err;
  }
}

/**
 * True while any member of the group exists, zombies included: a member is
 * gone only once it has been reaped (by us for the leader, by init or a
 * subreaper for orphans). EPERM means a member exists that we may not signal.
 */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}
