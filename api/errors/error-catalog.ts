import type { FastifyReply } from 'fastify';
import { API_HEADERS } from '../http/response-headers.js';

// The API's error table (read-api.md "Errors"): code, HTTP status and meaning in one entry.
// Every route and the OpenAPI document take their errors from here.

export const ERROR_CATALOG = {
  MISSING_PARAMETERS: { status: 400, meaning: '`installationId` is missing' },
  INVALID_PARAMETERS: {
    status: 400,
    meaning:
      "`installationId` is not a valid integer (decimals are rejected); beyond.md: `installationIds`, or getInstallations' `limit` or `cursor`, is malformed",
  },
  UNAUTHORIZED: {
    status: 401,
    meaning: 'key cannot authenticate or application is disabled',
  },
  DOESNT_EXIST: {
    status: 404,
    meaning: 'installation does not exist or is inaccessible to the application',
  },
  DATABASE_ERROR: {
    status: 500,
    meaning: 'the installation list could not be retrieved (getInstallations)',
  },
  INTERNAL_ERROR: { status: 500, meaning: 'server-side failure (all three endpoints)' },
  RATE_LIMITED: {
    status: 429,
    meaning:
      "the application's request budget for the window is spent (only when quotas are on); on the stream path, the key, its application or the client holds as many open streams as it may",
  },
  TOO_MANY_STREAMS: {
    status: 503,
    meaning:
      'this API process holds as many open streams as it is configured for, or is shutting down, or (through the playground proxy) the proxy relays as many as it may; retry later or elsewhere (streams only)',
  },
} as const;

export type ErrorCode = keyof typeof ERROR_CATALOG;
export const ERROR_CODES = Object.keys(ERROR_CATALOG) as ErrorCode[];

/**
 * Outside the API's error table: the HTTP layer's answers (router, body parser, the Node server
 * below Fastify). docs/api.md lists each one; a unit test keeps it so.
 */
export const TRANSPORT_ERRORS = {
  BAD_REQUEST: {
    status: 400,
    meaning:
      'the request could not be read: malformed HTTP or body, invalid percent-encoding, no `Host` (HTTP/1.1), a target naming another host',
  },
  NOT_FOUND: { status: 404, meaning: 'no such route' },
  METHOD_NOT_ALLOWED: { status: 405, meaning: 'the route exists but not for this method' },
  REQUEST_TIMEOUT: { status: 408, meaning: 'request not received in time' },
  PAYLOAD_TOO_LARGE: { status: 413, meaning: 'request body over the configured limit' },
  URI_TOO_LONG: {
    status: 414,
    meaning: 'playground proxy only: path segment over the router limit',
  },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, meaning: 'POST body is not form-urlencoded' },
  EXPECTATION_FAILED: { status: 417, meaning: '`Expect` other than `100-continue`' },
  TOO_MANY_CONNECTIONS: {
    status: 429,
    meaning:
      'the client (address) holds as many connections as it may (`API_MAX_CONNECTIONS_PER_CLIENT`), or the most while the server is full; with `Retry-After`',
  },
  HEADERS_TOO_LARGE: { status: 431, meaning: 'request headers over the configured size' },
  BAD_GATEWAY: {
    status: 502,
    meaning: 'playground proxy only: the API is unreachable, redirected or answered non-JSON',
  },
  SERVER_BUSY: {
    status: 503,
    meaning:
      'the server holds `API_MAX_CONNECTIONS` connections and none could be reclaimed for this one; with `Retry-After`',
  },
  GATEWAY_TIMEOUT: {
    status: 504,
    meaning: 'playground proxy only: the API did not answer in time',
  },
} as const;

export type TransportErrorCode = keyof typeof TRANSPORT_ERRORS;

/**
 * HTTP-layer answers a request to an operation may get besides the endpoint's own codes, by
 * method; the OpenAPI document lists them. HEAD answers what GET does, without a body.
 */
export const OPERATION_TRANSPORT_ERRORS = {
  get: [
    'BAD_REQUEST',
    'REQUEST_TIMEOUT',
    'EXPECTATION_FAILED',
    'TOO_MANY_CONNECTIONS',
    'HEADERS_TOO_LARGE',
    'SERVER_BUSY',
  ],
  post: [
    'BAD_REQUEST',
    'REQUEST_TIMEOUT',
    'PAYLOAD_TOO_LARGE',
    'UNSUPPORTED_MEDIA_TYPE',
    'EXPECTATION_FAILED',
    'TOO_MANY_CONNECTIONS',
    'HEADERS_TOO_LARGE',
    'SERVER_BUSY',
  ],
} as const satisfies Record<string, readonly TransportErrorCode[]>;

/**
 * The codes each endpoint may answer, as read-api.md lists them; getInstallations' 400 only for
 * beyond.md §7's `limit` and `cursor`, which a client of read-api.md alone never sends.
 */
export const ENDPOINT_ERRORS = {
  getInstallations: ['INVALID_PARAMETERS', 'UNAUTHORIZED', 'DATABASE_ERROR', 'INTERNAL_ERROR'],
  getInstallationDevices: [
    'MISSING_PARAMETERS',
    'INVALID_PARAMETERS',
    'UNAUTHORIZED',
    'DOESNT_EXIST',
    'INTERNAL_ERROR',
  ],
  getInstallationCurrentEnergyFlow: [
    'MISSING_PARAMETERS',
    'INVALID_PARAMETERS',
    'UNAUTHORIZED',
    'DOESNT_EXIST',
    'INTERNAL_ERROR',
  ],
} as const satisfies Record<string, readonly ErrorCode[]>;

export type EndpointName = keyof typeof ENDPOINT_ERRORS;

/** Codes any authenticated answer may get only when quotas are on (beyond.md §6). */
export const QUOTA_ERRORS = ['RATE_LIMITED'] as const satisfies readonly ErrorCode[];

/** beyond.md §4: the bulk energy flow endpoint's codes, auth before parameters. */
export const BULK_FLOW_ERRORS = [
  'MISSING_PARAMETERS',
  'INVALID_PARAMETERS',
  'UNAUTHORIZED',
  'INTERNAL_ERROR',
] as const satisfies readonly ErrorCode[];

/** beyond.md §5: the energy-flow stream's codes, answered as JSON before any stream starts. */
export const FLOW_STREAM_ERRORS = [
  'MISSING_PARAMETERS',
  'INVALID_PARAMETERS',
  'UNAUTHORIZED',
  'DOESNT_EXIST',
  'RATE_LIMITED',
  'TOO_MANY_STREAMS',
  'INTERNAL_ERROR',
] as const satisfies readonly ErrorCode[];

const BODIES = new Map<string, string>(
  [...ERROR_CODES, ...(Object.keys(TRANSPORT_ERRORS) as TransportErrorCode[])].map((code) => [
    code,
    `{"valid":false,"error":"${code}"}`,
  ]),
);

export function errorStatus(code: ErrorCode | TransportErrorCode): number {
  return code in ERROR_CATALOG
    ? ERROR_CATALOG[code as ErrorCode].status
    : TRANSPORT_ERRORS[code as TransportErrorCode].status;
}

export function errorBody(code: ErrorCode | TransportErrorCode): string {
  return BODIES.get(code) as string;
}

export function sendError(reply: FastifyReply, code: ErrorCode | TransportErrorCode): FastifyReply {
  return reply
    .code(errorStatus(code))
    .headers(API_HEADERS)
    .type('application/json')
    .send(BODIES.get(code) as string);
}
