/**
 * Runs a CLI entry point in a child process with module-recorder.ts preloaded:
 * its result and every module URL it resolved (first resolution order,
 * without repeats). The environment is the host's without DROVER_*, plus
 * `env`. Not a test file itself.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { CliResult } from './fake-api.js';

const RECORDER = fileURLToPath(new URL('./module-recorder.js', import.meta.url));

/** `log`: a file (that does not exist yet) the recorder appends to. */
export function runRecorded(entry: string, args: string[], opts: { log: string; cwd: string; env?: Record<string, string> }): Promise<CliResult & { modules: string[] }> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env };
  for (const k of Object.keys(childEnv)) if (k.startsWith('DROVER_')) delete childEnv[k];
  Object.assign(childEnv, opts.env, { DROVER_MODULE_LOG: opts.log });
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', RECORDER, entry, ...args], { env: childEnv, cwd: opts.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => {
      // Nothing recorded (no file): the callers' assertions say so.
      const modules = existsSync(opts.log) ? [...new Set(readFileSync(opts.log, 'utf8').split('\n').filter(Boolean))] : [];
      resolve({ code, stdout, stderr, modules });
    });
  });
}
