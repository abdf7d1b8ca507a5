/**
 * The closed set of errors Drover raises on purpose. Each says whether the
 * operation may succeed if retried unchanged, and which HTTP status it maps to
 * at the API edge. Anything else reaching the edge is an internal error (500).
 */
export type ErrorCode =
  | 'invalid_input'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  | 'illegal_transition'
  | 'payload_too_large'
  | 'unavailable'
  | 'cursor_expired';

export abstract class DroverError extends Error {
  abstract readonly code: ErrorCode;
  abstract readonly httpStatus: number;
  /** True when the same request may succeed later without change. */
  abstract readonly retryable: boolean;
  toJSON(): { code: ErrorCode; message: string; field?: string } {
    return { code: this.code, message: this.message };
  }
}

/** Bad input on any surface: names the field and the reason. */
export class InvalidInputError extends DroverError {
  readonly code = 'invalid_input' as const;
  readonly httpStatus = 400;
  readonly retryable = false;
  constructor(
    readonly field: string,
    readonly reason: string,
  ) {
    super(`${field}: ${reason}`);
  }
  override toJSON() {
    return { code: this.code, message: this.message, field: this.field, reason: this.reason };
  }
}

export class UnauthorizedError extends DroverError {
  readonly code = 'unauthorized' as const;
  readonly httpStatus = 401;
  readonly retryable = false;
}

export class ForbiddenError extends DroverError {
  readonly code = 'forbidden' as const;
  readonly httpStatus = 403;
  readonly retryable = false;
}

export class NotFoundError extends DroverError {
  readonly code = 'not_found' as const;
  readonly httpStatus = 404;
  readonly retryable = false;
  constructor(
    readonly kind: string,
    readonly id: string,
  ) {
    super(`${kind} ${id} not found`);
  }
}

/** The request is valid but the resource's current state forbids it. */
export class ConflictError extends DroverError {
  readonly code = 'conflict' as const;
  readonly httpStatus = 409;
  readonly retryable = false;
}

export class IllegalTransitionError extends DroverError {
  readonly code = 'illegal_transition' as const;
  readonly httpStatus = 409;
  readonly retryable = false;
  constructor(
    readonly from: string,
    readonly to: string,
    readonly reason: string,
  ) {
    super(`illegal transition ${from} -> ${to} (${reason})`);
  }
}

/** The store cannot take writes right now (disk full, database down). */
export class UnavailableError extends DroverError {
  readonly code = 'unavailable' as const;
  readonly httpStatus = 503;
  readonly retryable = true;
}

/**
 * A change-feed cursor older than the changes the store still keeps
 * (store/feed.ts): the reader must re-read its state and resume from the head.
 */
export class CursorExpiredError extends DroverError {
  readonly code = 'cursor_expired' as const;
  readonly httpStatus = 410;
  readonly retryable = false;
  constructor(readonly cursor: string) {
    super(`cursor ${cursor} is older than the retained changes; re-read and resume from the current head`);
  }
}

export function isDroverError(e: unknown): e is DroverError {
  return e instanceof DroverError;
}
