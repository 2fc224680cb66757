import { z } from 'zod';
import { CATEGORY_ARRAY_NAME, DEVICE_CATEGORIES } from '../../src/domain/device-fields.js';
import {
  ENDPOINT_ERRORS,
  type EndpointName,
  ERROR_CATALOG,
  type ErrorCode,
} from '../errors/error-catalog.js';
import {
  deviceRecordSchemas,
  devicesResponseSchema,
  energyFlowDataSchema,
  energyFlowResponseSchema,
  errorResponseSchema,
  installationRecordSchema,
  installationsResponseSchema,
} from './response-schemas.js';

// The OpenAPI 3.1 description, generated from the zod schemas the code uses and the error
// catalog. Deterministic: the committed docs/openapi.json must equal it byte for byte.

type Json = Record<string, unknown>;

const ENDPOINTS: ReadonlyArray<{
  name: EndpointName;
  summary: string;
  response: string;
  withId: boolean;
}> = [
  {
    name: 'getInstallations',
    summary: 'List the installations the calling application may currently read, by ascending id',
    response: 'InstallationsResponse',
    withId: false,
  },
  {
    name: 'getInstallationDevices',
    summary: 'Last-known state of all six device categories of one installation (offline ones too)',
    response: 'InstallationDevicesResponse',
    withId: true,
  },
  {
    name: 'getInstallationCurrentEnergyFlow',
    summary: 'Aggregated energy flow over the online devices of one installation',
    response: 'EnergyFlowResponse',
    withId: true,
  },
];

const pascal = (s: string) => `${s.charAt(0).toUpperCase()}${s.slice(1)}`;

function components(): Json {
  const registry = z.registry<{ id: string }>();
  registry.add(installationRecordSchema, { id: 'Installation' });
  for (const c of DEVICE_CATEGORIES) registry.add(deviceRecordSchemas[c], { id: pascal(c) });
  registry.add(energyFlowDataSchema, { id: 'EnergyFlowData' });
  registry.add(installationsResponseSchema, { id: 'InstallationsResponse' });
  registry.add(devicesResponseSchema, { id: 'InstallationDevicesResponse' });
  registry.add(energyFlowResponseSchema, { id: 'EnergyFlowResponse' });
  for (const { name } of ENDPOINTS) {
    for (const status of statusesOf(name)) {
      registry.add(errorResponseSchema(name, status), { id: errorId(name, status) });
    }
  }
  const { schemas } = z.toJSONSchema(registry, {
    target: 'draft-2020-12',
    io: 'output',
    uri: (id) => `#/components/schemas/${id}`,
  }) as { schemas: Record<string, Json> };
  for (const schema of Object.values(schemas)) {
    delete schema.$schema;
    delete schema.$id;
  }
  return schemas;
}

const statusesOf = (name: EndpointName) =>
  [...new Set(ENDPOINT_ERRORS[name].map((c: ErrorCode) => ERROR_CATALOG[c].status))].sort();
const errorId = (name: EndpointName, status: number) => `${pascal(name)}Error${status}`;
const ref = (id: string) => ({ $ref: `#/components/schemas/${id}` });

function responses(name: EndpointName, success: string): Json {
  const out: Json = {
    200: { description: 'Success', content: { 'application/json': { schema: ref(success) } } },
  };
  for (const status of statusesOf(name)) {
    const codes = ENDPOINT_ERRORS[name].filter(
      (c: ErrorCode) => ERROR_CATALOG[c].status === status,
    );
    out[status] = {
      description: codes.map((c: ErrorCode) => `\`${c}\`: ${ERROR_CATALOG[c].meaning}`).join('; '),
      content: { 'application/json': { schema: ref(errorId(name, status)) } },
    };
  }
  return out;
}

const ID_DESCRIPTION =
  'Integer: optional minus sign and decimal digits only, within the safe integer range. ' +
  '`12.0`, `1e3`, `0x1A`, ` 12`, `12abc`, an empty or repeated value: INVALID_PARAMETERS.';

function operations(e: (typeof ENDPOINTS)[number]): Json {
  const common = { summary: e.summary, responses: responses(e.name, e.response) };
  const get: Json = { operationId: e.name, ...common };
  const post: Json = {
    operationId: `${e.name}Post`,
    ...common,
    description:
      'The same operation with the parameters in a form body; a body value overrides the query value.',
  };
  if (e.withId) {
    get.parameters = [
      {
        name: 'installationId',
        in: 'query',
        required: true,
        description: ID_DESCRIPTION,
        schema: { type: 'integer' },
      },
    ];
    post.requestBody = {
      required: true,
      content: {
        'application/x-www-form-urlencoded': {
          schema: {
            type: 'object',
            properties: { installationId: { type: 'integer', description: ID_DESCRIPTION } },
            required: ['installationId'],
          },
        },
      },
    };
  }
  return { get, post };
}

export function buildOpenApiDocument(basePath: string): Json {
  const paths: Json = {};
  for (const e of ENDPOINTS) paths[`/${e.name}`] = operations(e);
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
      schemas: components(),
    },
  };
}
