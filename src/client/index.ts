/** The typed Drover API client: `new DroverClient({ url, token })`. */
export { DroverClient, type DroverClientOptions } from './client.js';
export { ApiError, ConnectionError, describeFetchFailure, type ApiErrorBody } from './errors.js';
export type * from './types.js';
