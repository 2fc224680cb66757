// The official client of the Installation Telemetry Read API (README.md beside this folder).

export type { BackoffOptions } from './backoff.js';
export {
  BULK_CHUNK_SIZE,
  type BulkEnergyFlowResult,
  type BulkOptions,
  chunkIds,
} from './bulk.js';
export {
  type ClientOptions,
  createReadApiClient,
  type PageOptions,
  type ReadApiClient,
} from './client.js';
export {
  ApiError,
  isApiError,
  NetworkError,
  ProtocolError,
  ReadApiError,
  RevokedError,
  type RevokedPhase,
  TimeoutError,
} from './errors.js';
export type { CacheLimits } from './etag-cache.js';
export type { EnergyFlowEvent, StreamOptions } from './flow-stream.js';
export type { components, operations, paths } from './generated/openapi.js';
export type { RetryOptions } from './transport.js';
export type * from './types.js';
