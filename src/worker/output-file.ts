/**
 * Reads an attempt's outputs file (DROVER_OUTPUT, core/task-outputs.ts) once
 * its process has exited with success.
 *
 * The task is untrusted input to the agent, so the read is bounded whatever
 * the task left in the file's place:
 *   - O_NOFOLLOW: a symbolic link there (to /etc/passwd, /dev/zero, another
 *     attempt's file) is refused, never followed;
 *   - O_NONBLOCK: a FIFO there cannot make the open wait for a writer (it is
 *     then refused as not a regular file);
 *   - fstat of the opened descriptor: only a regular file is read (not a
 *     FIFO, socket, device or directory), and one whose size is over the limit
 *     is refused without reading it;
 *   - at most maxBytes + 1 bytes are read whatever the size said (the file may
 *     grow meanwhile): a huge file costs 64 KiB.
 * Only the last path component is the task's to choose: the work directory
 * above it is the agent's, and a task that replaced it (it runs as the agent's
 * user) could only lead the agent to another file named drover-output.env
 * that the task made itself, read under the same bounds.
 *
 * On a filesystem in memory the calls are made synchronously, elsewhere on
 * libuv's threadpool (the same choice and reasons as work-dir.ts): the open
 * is made after every successful attempt, and usually finds no file.
 * Measured (20,000 opens of a missing file, this 2-core machine under load):
 * about 10 µs of CPU each synchronously, about 50 µs through the threadpool,
 * against a cycle of several milliseconds per attempt.
 */
import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from 'node:fs';
import { open } from 'node:fs/promises';
import path from 'node:path';
import { OUTPUT_LIMITS, parseTaskOutputs, OUTPUT_ENV, type TaskOutputs } from '../core/task-outputs.js';
import { onMemoryFs, type WorkDir } from './work-dir.js';

const FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
/** What is read at most: one byte past the limit tells a file that is too large. */
const READ_CAP = OUTPUT_LIMITS.maxBytes + 1;

/** `none`: no file, or a file without a key. `error`: the attempt fails with this message. */
export type OutputFileRead = { kind: 'none' } | { kind: 'outputs'; outputs: TaskOutputs } | { kind: 'error'; message: string };

const NONE: OutputFileRead = { kind: 'none' };
const problem = (reason: string): OutputFileRead => ({ kind: 'error', message: `${OUTPUT_ENV}: ${reason}` });

/** Reads and parses the work dir's outputs file (see the bounds at the top); marks the work dir when the file exists. */
export async function readOutputFile(wd: WorkDir): Promise<OutputFileRead> {
  return onMemoryFs(path.dirname(wd.dir)) ? readNow(wd) : readInPool(wd);
}

/** Synchronously (a filesystem in memory). */
function readNow(wd: WorkDir): OutputFileRead {
  let fd: number;
  try {
    fd = openSync(wd.outputFile, FLAGS);
  } catch (err) {
    return openFailure(err);
  }
  wd.outputFileSeen = true;
  try {
    const refused = checkStats(fstatSync(fd));
    if (refused) return refused;
    const buf = Buffer.allocUnsafe(READ_CAP);
    let n = 0;
    while (n < READ_CAP) {
      const r = readSync(fd, buf, n, READ_CAP - n, null);
      if (r === 0) break;
      n += r;
    }
    return parsed(buf.subarray(0, n));
  } catch (err) {
    return problem(`could not read the file (${errCode(err)})`);
  } finally {
    closeSync(fd);
  }
}

/** On libuv's threadpool (a disk). */
async function readInPool(wd: WorkDir): Promise<OutputFileRead> {
  let fh: Awaited<ReturnType<typeof open>>;
  try {
    fh = await open(wd.outputFile, FLAGS);
  } catch (err) {
    return openFailure(err);
  }
  wd.outputFileSeen = true;
  try {
    const refused = checkStats(await fh.stat());
    if (refused) return refused;
    const buf = Buffer.allocUnsafe(READ_CAP);
    let n = 0;
    while (n < READ_CAP) {
      const { bytesRead } = await fh.read(buf, n, READ_CAP - n, null);
      if (bytesRead === 0) break;
      n += bytesRead;
    }
    return parsed(buf.subarray(0, n));
  } catch (err) {
    return problem(`could not read the file (${errCode(err)})`);
  } finally {
    await fh.close();
  }
}

function openFailure(err: unknown): OutputFileRead {
  const code = errCode(err);
  if (code === 'ENOENT') return NONE;
  // O_NOFOLLOW on a symbolic link: ELOOP on Linux.
  if (code === 'ELOOP') return problem('is a symbolic link (not followed: write a regular file)');
  return problem(`could not open the file (${code})`);
}

function checkStats(st: Stats): OutputFileRead | null {
  if (!st.isFile()) return problem('not a regular file');
  if (st.size > OUTPUT_LIMITS.maxBytes) return problem(`the file is larger than ${OUTPUT_LIMITS.maxBytes} bytes (64 KiB)`);
  return null;
}

function parsed(bytes: Uint8Array): OutputFileRead {
  const p = parseTaskOutputs(bytes);
  if (!p.ok) return { kind: 'error', message: p.message };
  return Object.keys(p.outputs).length > 0 ? { kind: 'outputs', outputs: p.outputs } : NONE;
}

function errCode(err: unknown): string {
  return (err as { code?: string }).code ?? (err instanceof Error ? err.message : String(err));
}
