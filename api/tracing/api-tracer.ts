import type { FastifyInstance } from 'fastify';
import type { ApiReader } from '../read-model/api-reader.js';

// What the API tells tracing, without depending on OpenTelemetry: main.ts hands in an
// implementation (request-tracing.ts) only when tracing is on; off, buildApi adds nothing.

export interface ApiTracer {
  /** Adds the request spans to the app; called before any route is declared. */
  register(app: FastifyInstance): void;
  /** The reader, noting on the request's span whether a read came from the near-cache. */
  reader(reader: ApiReader, nearCache: boolean): ApiReader;
}
