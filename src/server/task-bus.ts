/**
 * In-process notifications that something about a task changed (new log
 * output, a state change), so a log follower wakes at once instead of polling.
 * Contract: `wait` resolves on the next `notify` for that task or after
 * `timeoutMs`, whichever is first; followers re-read the store either way, so
 * a lost notification costs at most one timeout, never correctness.
 */
export class TaskBus {
  private readonly waiters = new Map<string, Set<() => void>>();

  notify(taskId: string): void {
    const set = this.waiters.get(taskId);
    if (!set) return;
    this.waiters.delete(taskId);
    for (const wake of set) wake();
  }

  wait(taskId: string, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      let set = this.waiters.get(taskId);
      if (!set) this.waiters.set(taskId, (set = new Set()));
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        set!.delete(done);
        if (set!.size === 0 && this.waiters.get(taskId) === set) this.waiters.delete(taskId);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      signal?.addEventListener('abort', done, { once: true });
      set.add(done);
    });
  }
}
