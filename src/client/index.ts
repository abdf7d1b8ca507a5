/** The typed Drover API client: `new DroverClient({ url, token })`. */
export { DroverClient, EventStream, IDEMPOTENCY_KEY_PATTERN, MAX_BATCH_SUBMIT, SUBMIT_RETRY_DELAYS_MS, type DroverClientOptions, type MinimalTask, type SubmitBatchMinimalResult, type SubmitBatchResult, type SubmitOptions, type SubmitResult } from './client.js';
export { ApiError, ConnectionError, describeFetchFailure, type ApiErrorBody } from './errors.js';
export type * from './types.js';
export type * from './schedule-types.js';
export type * from './dag-types.js';
export { SseParser, type SseMessage } from './sse-parser.js';
export { fetchTransport, nodeTransport, type HttpRequest, type HttpResponse, type Transport } from './http-transport.js';
