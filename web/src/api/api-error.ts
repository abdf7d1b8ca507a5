/**
 * An API answer other than 2xx, carrying the server's `{error: {code, message,
 * field?, reason?}}` so forms can put the reason next to the field it names.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field?: string,
    readonly reason?: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  get unauthorized(): boolean {
    return this.status === 401;
  }
}

/** No answer at all (server down, network gone): worth retrying, unlike most ApiErrors. */
export class NetworkError extends Error {
  constructor(cause: unknown) {
    super('the Drover server could not be reached', { cause });
    this.name = 'NetworkError';
  }
}

export function errorMessage(err: unknown): string {
  if (err instanceof ApiError || err instanceof NetworkError) return err.message;
  if (err instanceof Error) return err.message;
  return String(err);
}
