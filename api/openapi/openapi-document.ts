import { z } from 'zod';
import {
  CATEGORY_ARRAY_NAME,
  DEVICE_CATEGORIES,
  passThroughValueSchema,
} from '../../src/domain/device-fields.js';
import { contractJsonSchema } from '../../src/domain/json-schema.js';
import {
  BULK_FLOW_ERRORS,
  ENDPOINT_ERRORS,
  ERROR_CATALOG,
  type ErrorCode,
  errorStatus,
  FLOW_STREAM_ERRORS,
  OPERATION_TRANSPORT_ERRORS,
  QUOTA_ERRORS,
  TRANSPORT_ERRORS,
  type TransportErrorCode,
} from '../errors/error-catalog.js';
import { MAX_INSTALLATION_IDS } from '../params/installation-ids.js';
import { MAX_PAGE_LIMIT } from '../params/page.js';
import {
  bulkEnergyFlowResponseSchema,
  deviceRecordSchemas,
  devicesResponseSchema,
  energyFlowDataSchema,
  energyFlowResponseSchema,
  errorResponseSchema,
  flowStreamEnergyFlowEventSchema,
  flowStreamRevokedErrorSchema,
  flowStreamRevokedEventSchema,
  installationEnergyFlowSchema,
  installationRecordSchema,
  installationsResponseSchema,
  inverterStatusSchema,
} from './response-schemas.js';

// The OpenAPI 3.1 description, generated from the zod schemas the code uses and the error
// catalog. Deterministic: the committed docs/openapi.json must equal it byte for byte. Each
// operation lists every status it can answer: the endpoint's codes and the HTTP layer's.

type Json = Record<string, unknown>;

// read-api.md's endpoints and beyond.md's bulk flow; every one may also answer 429 when quotas
// are on (beyond.md §6).
const OPERATION_ERRORS = {
  ...ENDPOINT_ERRORS,
  getInstallationsCurrentEnergyFlow: BULK_FLOW_ERRORS,
} as const;
type EndpointName = keyof typeof OPERATION_ERRORS;

const ENDPOINTS: ReadonlyArray<{
  name: EndpointName;
  summary: string;
  /** What a caller must know to read the answer (read-api.md). */
  description: string;
  response: string;
  param: 'installationId' | 'installationIds' | null;
  /** Whether the 200 carries Last-Modified (beyond.md §2). */
  dataAge: boolean;
}> = [
  {
    name: 'getInstallations',
    summary: 'List the installations the calling application may currently read, by ascending id',
    description:
      'Both an explicit grant of the installation to the application and continued access of its owner are required. Every Installation field is always present, null where unknown. With `limit`, one page and `nextCursor` (beyond.md §7).',
    response: 'InstallationsResponse',
    param: null,
    dataAge: false,
  },
  {
    name: 'getInstallationDevices',
    summary: 'Last-known state of all six device categories of one installation (offline ones too)',
    description:
      "Power in W, energy in Wh; null is unknown, not zero. Offline devices are included: check each lastSeenDate before treating its telemetry as current. Sign rules differ by category: an energy meter's powerAc is positive for export, a battery's powerDc positive for charging, an inverter's powerAc positive when it supplies the AC side.",
    response: 'InstallationDevicesResponse',
    param: 'installationId',
    dataAge: true,
  },
  {
    name: 'getInstallationCurrentEnergyFlow',
    summary: 'Aggregated energy flow over the online devices of one installation',
    description:
      "Only devices online now contribute (lastSeenDate within the online window, default 300 s); `data` is null when none is. gridPower is positive for import, the opposite of a meter's powerAc; batteryPower positive for charging.",
    response: 'EnergyFlowResponse',
    param: 'installationId',
    dataAge: true,
  },
  {
    name: 'getInstallationsCurrentEnergyFlow',
    summary:
      'Current energy flow of up to 100 installations in one request; each `data` exactly as getInstallationCurrentEnergyFlow serves it',
    description:
      '`flows` by ascending id for the ids the caller may read; `notFound` the others (missing and inaccessible alike, as the single 404).',
    response: 'BulkEnergyFlowResponse',
    param: 'installationIds',
    dataAge: true,
  },
];

// beyond.md §7: getInstallations' optional paging, additions to read-api.md's operation.
const PAGE_PARAMETERS = {
  limit: {
    type: 'integer',
    minimum: 1,
    maximum: MAX_PAGE_LIMIT,
    description: `1 to ${MAX_PAGE_LIMIT}: one page of at most this many installations, with \`nextCursor\` when more follow. Without it the whole list (streamed past ${MAX_PAGE_LIMIT} installations, then without ETag).`,
  },
  cursor: {
    type: 'string',
    description:
      'The `nextCursor` of the previous page (with `limit`): the page after it. Opaque; malformed or without `limit`: INVALID_PARAMETERS.',
  },
} as const;

const pascal = (s: string) => `${s.charAt(0).toUpperCase()}${s.slice(1)}`;

function components(): Json {
  const registry = z.registry<{ id: string }>();
  registry.add(installationRecordSchema, { id: 'Installation' });
  for (const c of DEVICE_CATEGORIES) registry.add(deviceRecordSchemas[c], { id: pascal(c) });
  registry.add(inverterStatusSchema, { id: 'InverterStatus' });
  registry.add(passThroughValueSchema, { id: 'PassThroughValue' });
  registry.add(energyFlowDataSchema, { id: 'EnergyFlowData' });
  registry.add(installationsResponseSchema, { id: 'InstallationsResponse' });
  registry.add(devicesResponseSchema, { id: 'InstallationDevicesResponse' });
  registry.add(energyFlowResponseSchema, { id: 'EnergyFlowResponse' });
  registry.add(installationEnergyFlowSchema, { id: 'InstallationEnergyFlow' });
  registry.add(bulkEnergyFlowResponseSchema, { id: 'BulkEnergyFlowResponse' });
  registry.add(flowStreamEnergyFlowEventSchema, { id: 'FlowStreamEnergyFlowEvent' });
  registry.add(flowStreamRevokedEventSchema, { id: 'FlowStreamRevokedEvent' });
  registry.add(flowStreamRevokedErrorSchema, { id: 'FlowStreamRevokedError' });
  for (const { name } of ENDPOINTS) {
    // POST's statuses include GET's, and a status has the same codes under both methods.
    for (const status of statusesOf(name, 'post')) {
      registry.add(errorResponseSchema(codesAt(name, 'post', status)), {
        id: errorId(name, status),
      });
    }
  }
  for (const status of streamStatuses()) {
    registry.add(errorResponseSchema(streamCodesAt(status)), { id: STREAM_ERROR_ID(status) });
  }
  const { schemas } = contractJsonSchema(registry, {
    target: 'draft-2020-12',
    io: 'output',
    uri: (id) => `#/components/schemas/${id}`,
  });
  for (const [id, schema] of Object.entries(schemas)) {
    delete schema.$schema;
    delete schema.$id;
    // A generator names the model by its title; without one some invent AnonymousSchema_N.
    schema.title = id;
  }
  return schemas;
}

type Method = keyof typeof OPERATION_TRANSPORT_ERRORS;
type Code = ErrorCode | TransportErrorCode;

const codesOf = (name: EndpointName, method: Method): Code[] => [
  ...OPERATION_ERRORS[name],
  ...QUOTA_ERRORS,
  ...OPERATION_TRANSPORT_ERRORS[method],
];
const codesAt = (name: EndpointName, method: Method, status: number) =>
  codesOf(name, method).filter((c) => errorStatus(c) === status);
const statusesOf = (name: EndpointName, method: Method) =>
  [...new Set(codesOf(name, method).map(errorStatus))].sort();
const meaning = (c: Code) =>
  c in ERROR_CATALOG
    ? ERROR_CATALOG[c as ErrorCode].meaning
    : TRANSPORT_ERRORS[c as TransportErrorCode].meaning;
const errorId = (name: EndpointName, status: number) => `${pascal(name)}Error${status}`;
const ref = (id: string) => ({ $ref: `#/components/schemas/${id}` });

const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` });
const RATE_LIMIT_HEADERS = {
  'RateLimit-Policy': headerRef('RateLimit-Policy'),
  RateLimit: headerRef('RateLimit'),
};

function responses(e: (typeof ENDPOINTS)[number], method: Method, conditional: boolean): Json {
  const { name } = e;
  const out: Json = {
    200: {
      description: 'Success',
      headers: {
        ETag: headerRef('ETag'),
        'Cache-Control': headerRef('Cache-Control'),
        Vary: headerRef('Vary'),
        ...(e.dataAge ? { 'Last-Modified': headerRef('Last-Modified') } : {}),
        'Content-Encoding': headerRef('Content-Encoding'),
        ...RATE_LIMIT_HEADERS,
      },
      content: { 'application/json': { schema: ref(e.response) } },
    },
  };
  if (conditional) {
    out[304] = {
      description:
        'Not Modified: `If-None-Match` matched (or, without it, `If-Modified-Since` is not older than the data). No body; the same ETag. Only after authentication, access and parameter checks passed.',
      headers: {
        ETag: headerRef('ETag'),
        'Cache-Control': headerRef('Cache-Control'),
        Vary: headerRef('Vary'),
        ...RATE_LIMIT_HEADERS,
      },
    };
  }
  for (const status of statusesOf(name, method)) {
    out[status] = {
      description: codesAt(name, method, status)
        .map((c) => `\`${c}\`: ${meaning(c)}`)
        .join('; '),
      ...(status === 429
        ? { headers: { 'Retry-After': headerRef('Retry-After'), ...RATE_LIMIT_HEADERS } }
        : status === 500
          ? { headers: { 'Retry-After': headerRef('Retry-After') } }
          : {}),
      content: { 'application/json': { schema: ref(errorId(name, status)) } },
    };
  }
  return out;
}

const HEADER_PARAMETERS = {
  'If-None-Match': {
    description:
      'ETags of stored copies (or `*`); weak comparison. A match answers 304. Honoured on GET and HEAD.',
    schema: { type: 'string' },
  },
  'If-Modified-Since': {
    description:
      'HTTP-date; ignored when If-None-Match is sent. Not older than the data: 304. Honoured on GET and HEAD.',
    schema: { type: 'string' },
  },
  'Accept-Encoding': {
    description: '`br` or `gzip` (q-values honoured): bodies of 1 KiB or more come compressed.',
    schema: { type: 'string' },
  },
};
const headerParameters = (names: ReadonlyArray<keyof typeof HEADER_PARAMETERS>) =>
  names.map((name) => ({ name, in: 'header', required: false, ...HEADER_PARAMETERS[name] }));

function responseHeaders(): Json {
  return {
    ETag: {
      description:
        'Strong validator of the body bytes: same body, same tag, from any replica. A compressed body has its own tag (suffix `-br` or `-gz`). Absent on a getInstallations list streamed as it is read (more than 1,000 installations without `limit`).',
      schema: { type: 'string' },
    },
    'Cache-Control': { description: '`private, no-cache`', schema: { type: 'string' } },
    Vary: { description: '`Accept-Encoding`', schema: { type: 'string' } },
    'Last-Modified': {
      description:
        'The latest `lastSeenDate` the body contains, as an HTTP-date; absent when it contains none.',
      schema: { type: 'string' },
    },
    'Content-Encoding': {
      description: '`br` or `gzip` when Accept-Encoding asked for it and the body is 1 KiB or more',
      schema: { type: 'string', enum: ['br', 'gzip'] },
    },
    'RateLimit-Policy': {
      description:
        'Only when quotas are on (IETF httpapi RateLimit header fields): `"default";q=<requests>;w=60`.',
      schema: { type: 'string' },
    },
    RateLimit: {
      description:
        'Only when quotas are on: `"default";r=<remaining requests>;t=<seconds until the window resets>`.',
      schema: { type: 'string' },
    },
    'Retry-After': {
      description:
        'Seconds until trying again can succeed (429: the window resets; 500: Redis reconnects).',
      schema: { type: 'integer' },
    },
  };
}

/** HEAD: GET's statuses and headers, no body. */
function headResponses(get: Json): Json {
  return Object.fromEntries(
    Object.entries(get).map(([status, r]) => [status, { description: (r as Json).description }]),
  );
}

const IDS_DESCRIPTION =
  `Comma-separated installation ids, 1 to ${MAX_INSTALLATION_IDS}, distinct, each with installationId's syntax. ` +
  'An empty item, a duplicate or more than 100: INVALID_PARAMETERS.';

/** installationId as a parameter: a 64-bit integer for generators, within the safe range. */
const ID_SCHEMA = {
  type: 'integer',
  format: 'int64',
  minimum: Number.MIN_SAFE_INTEGER,
  maximum: Number.MAX_SAFE_INTEGER,
} as const;

const ID_DESCRIPTION =
  'Integer: optional minus sign and decimal digits only, within the safe integer range. ' +
  '`12.0`, `1e3`, `0x1A`, ` 12`, `12abc`, an empty or repeated value: INVALID_PARAMETERS.';

/** A POST's form body, titled (`GetInstallationsForm`, …): generators name its model by it. */
const formSchema = (name: EndpointName, schema: Json): Json => ({
  type: 'object',
  title: `${pascal(name)}Form`,
  description: `The parameters of ${name} as a form body.`,
  ...schema,
});

function operations(e: (typeof ENDPOINTS)[number]): Json {
  const get: Json = {
    operationId: e.name,
    summary: e.summary,
    description: e.description,
    responses: responses(e, 'get', true),
  };
  const head: Json = {
    operationId: `${e.name}Head`,
    summary: `${e.summary} (headers only)`,
    description: `The GET's statuses and headers, no body. ${e.description}`,
    responses: headResponses(get.responses as Json),
  };
  const post: Json = {
    operationId: `${e.name}Post`,
    summary: e.summary,
    responses: responses(e, 'post', false),
    description: `The same operation with the parameters in a form body; a body value overrides the query value. ${e.description}`,
  };
  const conditionalHeaders = headerParameters([
    'If-None-Match',
    'If-Modified-Since',
    'Accept-Encoding',
  ]);
  head.parameters = get.parameters = conditionalHeaders;
  post.parameters = headerParameters(['Accept-Encoding']);
  if (e.name === 'getInstallations') {
    const query = Object.entries(PAGE_PARAMETERS).map(([name, { description, ...schema }]) => ({
      name,
      in: 'query',
      required: false,
      description,
      schema,
    }));
    head.parameters = get.parameters = [...query, ...conditionalHeaders];
    post.requestBody = {
      required: false,
      content: {
        'application/x-www-form-urlencoded': {
          schema: formSchema(e.name, { properties: PAGE_PARAMETERS }),
        },
      },
    };
  }
  if (e.param !== null) {
    const schema =
      e.param === 'installationId'
        ? { ...ID_SCHEMA, description: ID_DESCRIPTION }
        : { type: 'string', description: IDS_DESCRIPTION, pattern: '^-?[0-9]+(,-?[0-9]+)*$' };
    head.parameters = get.parameters = [
      {
        name: e.param,
        in: 'query',
        required: true,
        description: schema.description,
        schema: e.param === 'installationId' ? ID_SCHEMA : { type: schema.type },
      },
      ...conditionalHeaders,
    ];
    post.requestBody = {
      required: true,
      content: {
        'application/x-www-form-urlencoded': {
          schema: formSchema(e.name, { properties: { [e.param]: schema }, required: [e.param] }),
        },
      },
    };
  }
  return { get, head, post };
}

// beyond.md §5: the energy-flow stream, GET (and HEAD) only; refusals are JSON, before any stream.
const STREAM_PATH = '/streams/installationCurrentEnergyFlow';
const STREAM_ERROR_ID = (status: number) => `FlowStreamError${status}`;
const streamCodes = (): Code[] => [...FLOW_STREAM_ERRORS, ...OPERATION_TRANSPORT_ERRORS.get];
const streamCodesAt = (status: number) => streamCodes().filter((c) => errorStatus(c) === status);
const streamStatuses = () => [...new Set(streamCodes().map(errorStatus))].sort();

function streamOperations(): Json {
  const responses: Json = {
    200: {
      description:
        'Server-Sent Events. First the current flow (unless `Last-Event-ID` is its ETag), then one event per change of it, by a write or by time alone: `event: energyFlow`, `id:` the ETag getInstallationCurrentEnergyFlow would send, `data:` the exact body it would serve. A comment line at least every 15 s. When the key may no longer read the installation: `event: revoked` with the error envelope the single endpoint would answer, then the stream closes (within 1 s). Parsed, each event is a FlowStreamEnergyFlowEvent or a FlowStreamRevokedEvent (components.schemas).',
      headers: { 'Cache-Control': headerRef('Cache-Control') },
      content: {
        'text/event-stream': {
          // A string (the stream), whose events parse to these (JSON Schema's contentSchema).
          schema: {
            type: 'string',
            contentMediaType: 'text/event-stream',
            contentSchema: {
              oneOf: [ref('FlowStreamEnergyFlowEvent'), ref('FlowStreamRevokedEvent')],
            },
          },
        },
      },
    },
  };
  for (const status of streamStatuses()) {
    responses[status] = {
      description: streamCodesAt(status)
        .map((c) => `\`${c}\`: ${meaning(c)}`)
        .join('; '),
      ...(status === 500 ? { headers: { 'Retry-After': headerRef('Retry-After') } } : {}),
      content: { 'application/json': { schema: ref(STREAM_ERROR_ID(status)) } },
    };
  }
  const parameters = [
    {
      name: 'installationId',
      in: 'query',
      required: true,
      description: ID_DESCRIPTION,
      schema: ID_SCHEMA,
    },
    {
      name: 'Last-Event-ID',
      in: 'header',
      required: false,
      description: 'The id of the last event received; equal to the current ETag: no first event.',
      schema: { type: 'string' },
    },
  ];
  const summary = 'Push of the energy flow of one installation (Server-Sent Events)';
  const description =
    'Server-Sent Events of the flow getInstallationCurrentEnergyFlow serves, on every change (also by time alone), at most 250 ms after the projection wrote it. Refusals are JSON, before any stream starts.';
  return {
    get: {
      operationId: 'streamInstallationCurrentEnergyFlow',
      summary,
      description,
      parameters,
      responses,
    },
    head: {
      operationId: 'streamInstallationCurrentEnergyFlowHead',
      summary: `${summary} (headers only)`,
      description,
      parameters,
      responses: headResponses(responses),
    },
  };
}

export function buildOpenApiDocument(basePath: string): Json {
  const paths: Json = {};
  for (const e of ENDPOINTS) paths[`/${e.name}`] = operations(e);
  paths[STREAM_PATH] = streamOperations();
  return {
    openapi: '3.1.0',
    info: {
      title: 'Installation Telemetry Read API',
      version: '1.0.0',
      description:
        'Read-only access to installation metadata, last-known device state and the current ' +
        `energy flow. Device arrays: ${DEVICE_CATEGORIES.map((c) => CATEGORY_ARRAY_NAME[c]).join(', ')}, ` +
        'each by ascending device id. Cross-origin browser requests are not allowed.',
    },
    servers: [{ url: basePath }],
    security: [{ ApiKey: [] }, { Bearer: [] }],
    paths,
    components: {
      securitySchemes: {
        ApiKey: { type: 'apiKey', in: 'header', name: 'Api-Key' },
        Bearer: {
          type: 'http',
          scheme: 'bearer',
          description: 'Takes precedence over Api-Key when both are sent',
        },
      },
      headers: responseHeaders(),
      schemas: components(),
    },
  };
}
