import type { FastifyInstance } from 'fastify';
import { API_HEADERS } from '../http/response-headers.js';
import { buildOpenApiDocument } from './openapi-document.js';

/** `{base}/openapi.json`: the description, servers set to this deployment's base path. */
export function registerOpenApiRoute(app: FastifyInstance, basePath: string): void {
  const body = JSON.stringify(buildOpenApiDocument(basePath));
  app.get('/openapi.json', async (_request, reply) =>
    reply.headers(API_HEADERS).type('application/json').send(body),
  );
}
