/**
 * Task ids are ULIDs: 26 Crockford base32 characters, lexicographically sortable
 * by creation time, which is what keyset pagination (newest first) relies on.
 * Monotonic within a process so two tasks created in one millisecond still sort.
 */
import { randomFillSync } from 'node:crypto';
import { encodeTime, monotonicFactory } from 'ulid';

/**
 * Random bytes from the CSPRNG, drawn POOL_BYTES at a time. Measured (issue 9,
 * a 5,000-task drain): one randomBytes(16) per fencing token and ulid's
 * default of one crypto.getRandomValues call per id character cost ~40 µs and
 * ~15 µs per task, nearly all of it per-call overhead. Same source, same bits.
 */
const POOL_BYTES = 4096;
const pool = Buffer.alloc(POOL_BYTES);
let poolAt = POOL_BYTES;

function randomSlice(n: number): Buffer {
  if (poolAt + n > POOL_BYTES) {
    randomFillSync(pool);
    poolAt = 0;
  }
  const out = Buffer.from(pool.subarray(poolAt, poolAt + n));
  // Each byte is handed out once.
  pool.fill(0, poolAt, poolAt + n);
  poolAt += n;
  return out;
}

/** ulid's PRNG contract: a number in [0, 1). A byte / 256 maps evenly onto its 32 characters (256 = 8 × 32). */
function randomFraction(): number {
  return randomSlice(1)[0]! / 256;
}

const next = monotonicFactory(randomFraction);

export function newTaskId(now: number): string {
  return next(now);
}

/** The largest time a ULID holds (2^48 - 1 ms). */
const ULID_TIME_MAX = 2 ** 48 - 1;

/**
 * The smallest task id of millisecond `ms` (its time part, then zeros): every
 * id made by newTaskId(t) with t >= ms sorts at or after it, every one with
 * t < ms before it. So a createdAt range [a, b) is the id range
 * [smallestTaskIdAt(a), smallestTaskIdAt(b)), which the stores scan in
 * index order. A fractional `ms` rounds up (createdAt values are whole ms);
 * below 0 gives the smallest id, beyond the ULID range a string above every id.
 * One exception: when the clock steps back, newTaskId keeps the later time
 * (ids never sort before earlier ones), so an id's time can be later than its
 * createdAt, never earlier; users of an upper bound allow for that
 * (store/task-list.ts).
 */
export function smallestTaskIdAt(ms: number): string {
  const t = Math.ceil(ms);
  if (!(t > 0)) return '0'.repeat(26);
  if (t > ULID_TIME_MAX) return '8'.padEnd(26, '0');
  return encodeTime(t, 10) + '0'.repeat(16);
}

export const TASK_ID_PATTERN = '^[0-9A-HJKMNP-TV-Z]{26}$';
const TASK_ID_RE = new RegExp(TASK_ID_PATTERN);

export function isTaskId(s: string): boolean {
  return TASK_ID_RE.test(s);
}

/**
 * A fencing token: 128 random bits, hex. Made once per attempt by the store
 * that creates the attempt and sent only to the worker it is assigned to, so
 * no other party (another worker, a user reading the API) can forge a report.
 */
export function newFencingToken(): string {
  return randomSlice(16).toString('hex');
}

export const FENCING_TOKEN_PATTERN = '^[0-9a-f]{32}$';
