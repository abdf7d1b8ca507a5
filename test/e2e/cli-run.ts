/**
 * What the e2e tests that drive the CLI share: `drover` runs bin/drover.js
 * against a cluster as a user would (DROVER_URL, DROVER_TOKEN, NO_COLOR) and
 * resolves with its exit code and output; `until` polls with a deadline, so a
 * test waits on what it can observe instead of sleeping.
 */
import { spawn } from 'node:child_process';
import { BIN, type Cluster } from './harness.js';

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** `drover ARGS` with the cluster's URL and a token (the cluster's admin token unless `token`); `input` is its stdin (none: stdin closed). */
export function drover(c: Cluster, args: string[], opts: { cwd?: string; token?: string; input?: string } = {}): Promise<CliRun> {
  return new Promise((resolve) => {
    const env: NodeJS.ProcessEnv = { ...process.env, DROVER_URL: c.url, DROVER_TOKEN: opts.token ?? c.api.token, NO_COLOR: '1' };
    const child = spawn(process.execPath, [BIN, ...args], { env, cwd: opts.cwd, stdio: [opts.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d) => (stdout += d));
    child.stderr!.on('data', (d) => (stderr += d));
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
    child.stdin?.end(opts.input);
  });
}

/** Polls `probe` every 25 ms until it returns a value (not undefined); fails after `ms`. */
export async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
