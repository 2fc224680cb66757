import { FastifyOtelInstrumentation } from '@fastify/otel';
import { type Span, trace } from '@opentelemetry/api';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ApiReader, Read } from '../read-model/api-reader.js';
import type { ApiTracer } from './api-tracer.js';

// The API's spans (docs/operations.md, "Tracing"): one per request, by @fastify/otel (route,
// method, status, the caller's traceparent as parent), its handler's, the Redis commands
// beneath (the ioredis instrumentation), and what only the API knows: whether the read came
// from the near-cache, and the installation read once the answer says the caller may see it.
// Never the path as sent, a header or a key: a client may put its key anywhere in the URL.
// A request the sampler dropped costs a few checks here: nothing is kept or looked up for it.

const INSTALLATION_ID = /^[1-9][0-9]{0,15}$/;

export function createApiTracer(): ApiTracer {
  /** The span of each sampled request, by request. */
  const requests = new WeakMap<FastifyRequest, Span>();
  /** The request's span, by its handler's span: the reader sees only the handler's. */
  const byHandler = new WeakMap<Span, Span>();
  const otel = new FastifyOtelInstrumentation({
    // No span per hook; the handler's stays: it restores the request's context once a form
    // body was read, so the handler's Redis commands stay beneath the request.
    instrumentHooks: false,
    requestHook: (span, request) => {
      if (!span.isRecording()) return;
      requests.set(request, span);
      const route = request.routeOptions.url ?? 'unmatched';
      span.updateName(`${request.method} ${route}`);
      // In place of the path as sent (@fastify/otel records request.url, query included).
      span.setAttribute('url.path', route);
    },
    lifecycleHook: (span, info) => {
      if (!span.isRecording()) return;
      // Named by what it is: @fastify/otel names it after the plugin, whose name Fastify takes
      // from an anonymous plugin's source text.
      span.updateName(info.hookName);
      span.setAttribute('hook.name', info.hookName);
      const request = requests.get(info.request);
      if (request) byHandler.set(span, request);
    },
  });
  return {
    register(app: FastifyInstance) {
      app.register(otel.plugin());
      // Before @fastify/otel's own onSend, which ends the span.
      app.addHook('onSend', (request, reply, payload, done) => {
        const span = requests.get(request);
        if (span && reply.statusCode < 400) {
          const id = installationIdOf(request);
          if (id !== undefined) span.setAttribute('installation.id', id);
        }
        done(null, payload);
      });
    },
    reader: (reader, nearCache) => tracedReader(reader, nearCache, byHandler),
  };
}

/** The `installationId` parameter (query or form body) when it is one; else undefined. */
function installationIdOf(request: FastifyRequest): number | undefined {
  const fromQuery = (request.query as Record<string, unknown> | undefined)?.installationId;
  const raw = fromQuery ?? (request.body as Record<string, unknown> | undefined)?.installationId;
  return typeof raw === 'string' && INSTALLATION_ID.test(raw) ? Number(raw) : undefined;
}

/** The reader noting `read.cache` on the request's span: `hit` (from memory), `miss`, `off`. */
function tracedReader(
  reader: ApiReader,
  nearCache: boolean,
  byHandler: WeakMap<Span, Span>,
): ApiReader {
  const note = <T>(read: Read<T>): Read<T> => {
    const handler = trace.getActiveSpan();
    const span = handler && byHandler.get(handler);
    if (span)
      span.setAttribute(
        'read.cache',
        !nearCache ? 'off' : read instanceof Promise ? 'miss' : 'hit',
      );
    return read;
  };
  return {
    keyLive: (keyHash, nowMs) => reader.keyLive(keyHash, nowMs),
    installations: (keyHash, nowMs, page) => reader.installations(keyHash, nowMs, page),
    viewPage: (app, page) => reader.viewPage(app, page),
    devices: (keyHash, id, nowMs) => note(reader.devices(keyHash, id, nowMs)),
    flow: (keyHash, id, nowMs) => note(reader.flow(keyHash, id, nowMs)),
    flows: (keyHash, ids, nowMs) => reader.flows(keyHash, ids, nowMs),
  };
}
