/**
 * The spawner used when the native addon is not built or does not load
 * (native-spawn.ts): Node's child_process, `detached` (setsid: pgid = pid),
 * stdin ignored, stdout/stderr pipes, no shell. libuv looks the command up
 * in the PATH of `env`, resets every signal to its default and the mask to
 * empty in the child, and opens every fd of its own O_CLOEXEC (as Node does
 * all of the agent's). One difference: an fd the agent itself inherited
 * without O_CLOEXEC from whoever started it is passed on; the addon closes
 * every fd above 2. Costs a fork() of the whole agent per start (see
 * native-spawn.ts for the numbers).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { ProcessExit, SpawnedProcess, SpawnFailure, SpawnRequest } from './native-spawn.js';

export function spawnWithNode(req: SpawnRequest): Promise<SpawnedProcess | SpawnFailure> {
  let child: ChildProcess;
  try {
    child = spawn(req.file, [...req.args], { cwd: req.cwd, env: req.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    // Synchronous throws: invalid arguments such as a NUL byte in argv or env, and errors Node does not
    // defer (E2BIG, ENOTDIR...), whose message is "spawn CODE": name the command there too, as for ENOENT.
    const message = err instanceof Error ? err.message : String(err);
    const bare = /^spawn (E[A-Z0-9]+)$/.exec(message);
    const code = errCode(err) ?? bare?.[1] ?? null;
    return Promise.resolve({ error: bare ? `spawn ${req.file} ${bare[1]}` : message, code: code !== null && /^E[A-Z0-9]+$/.test(code) ? code : null });
  }
  const exited = new Promise<ProcessExit | { error: Error }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
    child.on('error', (error) => resolve({ error }));
  });
  if (child.pid === undefined) {
    // Spawn failed (ENOENT, EACCES...): Node reports it as 'error' on the next tick, after closing the pipes.
    child.stdout?.destroy();
    child.stderr?.destroy();
    return exited.then((r) => ('error' in r ? { error: r.error.message, code: errCode(r.error) } : { error: 'spawn failed', code: null }));
  }
  return Promise.resolve({
    pid: child.pid,
    stdout: child.stdout!,
    stderr: child.stderr!,
    // After a successful spawn the only 'error' is a failed kill(), which the runner does not use.
    exited: exited.then((r) => ('error' in r ? { code: null, signal: null } : r)),
  });
}

/** The errno name Node puts on a spawn error (`code: 'ENOENT'`), or null. */
function errCode(err: unknown): string | null {
  const c = (err as { code?: unknown } | null)?.code;
  return typeof c === 'string' && /^E[A-Z0-9]+$/.test(c) ? c : null;
}
