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
 * The open is made after every successful attempt, and usually finds no
 * file. It is made synchronously wherever the work dir is: an open without
 * O_CREAT or O_TRUNC only looks the name up (in a directory the agent just
 * made, so in the kernel's caches) and writes nothing, so unlike the
 * directory calls of work-dir.ts it never waits for the disk's journal.
 * Measured (5,000 opens of a missing file in fresh work dirs on this
 * machine's ext4, another process writing and fsyncing 8 KiB in a loop on the
 * same disk): p50 5.5 µs, p99 38 µs, max 0.3 ms; through the threadpool an
 * open costs about 58 µs of the main thread's CPU, against a cycle of a
 * few milliseconds per attempt. A file that is there is then read
 * synchronously on a filesystem in memory, and on libuv's threadpool
 * elsewhere (reading may update its access time, a write to the disk).
 */
import { close, closeSync, constants, fstat, fstatSync, lstatSync, openSync, read, readSync, type Stats } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
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
  // Usually there is no file: lstat says so without the cost of an exception (a link is lstat'ed, not followed).
  if (lstatSync(wd.outputFile, { throwIfNoEntry: false }) === undefined) return NONE;
  let fd: number;
  try {
    fd = openSync(wd.outputFile, FLAGS);
  } catch (err) {
    return openFailure(err);
  }
  wd.outputFileSeen = true;
  return onMemoryFs(path.dirname(wd.dir)) ? readNow(fd) : readInPool(fd);
}

const fstatAsync = promisify(fstat);
const readAsync = promisify(read);
const closeAsync = promisify(close);

/** Synchronously (a filesystem in memory); closes `fd`. */
function readNow(fd: number): OutputFileRead {
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

/** On libuv's threadpool (a disk); closes `fd`. */
async function readInPool(fd: number): Promise<OutputFileRead> {
  try {
    const refused = checkStats(await fstatAsync(fd));
    if (refused) return refused;
    const buf = Buffer.allocUnsafe(READ_CAP);
    let n = 0;
    while (n < READ_CAP) {
      const { bytesRead } = await readAsync(fd, buf, n, READ_CAP - n, null);
      if (bytesRead === 0) break;
      n += bytesRead;
    }
    return parsed(buf.subarray(0, n));
  } catch (err) {
    return problem(`could not read the file (${errCode(err)})`);
  } finally {
    await closeAsync(fd).catch(() => {});
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
