import type { FastifyReply } from 'fastify';

// The API's error table (read-api.md "Errors"): code, HTTP status and meaning in one entry.
// Every route and the OpenAPI document take their errors from here.

export const ERROR_CATALOG = {
  MISSING_PARAMETERS: { status: 400, meaning: '`installationId` is missing' },
  INVALID_PARAMETERS: {
    status: 400,
    meaning: '`installationId` is not a valid integer (decimals are rejected)',
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
} as const;

export type ErrorCode = keyof typeof ERROR_CATALOG;
export const ERROR_CODES = Object.keys(ERROR_CATALOG) as ErrorCode[];

/** Outside the API's error table: the HTTP layer's answers to unknown routes and methods. */
export const TRANSPORT_ERRORS = {
  BAD_REQUEST: { status: 400, meaning: 'the request could not be read (e.g. a malformed body)' },
  NOT_FOUND: { status: 404, meaning: 'no such route' },
  METHOD_NOT_ALLOWED: { status: 405, meaning: 'the route exists but not for this method' },
  PAYLOAD_TOO_LARGE: { status: 413, meaning: 'request body over the configured limit' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, meaning: 'POST body is not form-urlencoded' },
  REQUEST_TIMEOUT: { status: 408, meaning: 'request not received in time' },
  BAD_GATEWAY: {
    status: 502,
    meaning: 'playground proxy only: the API is unreachable, redirected or answered non-JSON',
  },
  GATEWAY_TIMEOUT: {
    status: 504,
    meaning: 'playground proxy only: the API did not answer in time',
  },
} as const;

export type TransportErrorCode = keyof typeof TRANSPORT_ERRORS;

/** The codes each endpoint may answer, exactly as read-api.md lists them. */
export const ENDPOINT_ERRORS = {
  getInstallations: ['UNAUTHORIZED', 'DATABASE_ERROR', 'INTERNAL_ERROR'],
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

export function sendError(reply: FastifyReply, code: ErrorCode | TransportErrorCode): FastifyReply {
  return reply
    .code(errorStatus(code))
    .type('application/json')
    .send(BODIES.get(code) as string);
}
