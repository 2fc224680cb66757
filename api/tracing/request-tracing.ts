import { FastifyOtelInstrumentation } from '@fastify/otel';
import { context, createContextKey, type Span } from '@opentelemetry/api';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ApiReader, Read } from '../read-model/api-reader.js';
import type { ApiTracer } from './api-tracer.js';

// The API's spans (docs/operations.md, "Tracing"): one per request, by @fastify/otel (route,
// method, status, the caller's traceparent as parent), with the Redis commands beneath (the
// ioredis instrumentation), and what only the API knows: whether the read came from the
// near-cache, and the installation read once the answer says the caller may see it. Never the
// path as sent, a header or a key: a client may put its key anywhere in the URL.

/** The request whose handler runs, in the context: the reader notes its cache outcome on it. */
const REQUEST = createContextKey('read-model request');

const INSTALLATION_ID = /^[1-9][0-9]{0,15}$/;

export function createApiTracer(): ApiTracer {
  const otel = new FastifyOtelInstrumentation({
    // The request's span and its handler's (which restores the request's context after a form
    // body was read, so the handler's Redis commands stay beneath it); no span per hook.
    instrumentHooks: false,
    // Named by what it is: @fastify/otel names it after the plugin, whose name Fastify takes
    // from an anonymous plugin's source text.
    lifecycleHook: (span, info) => {
      span.updateName(info.hookName);
      span.setAttribute('hook.name', info.hookName);
    },
    requestHook: (span, request) => {
      const route = request.routeOptions.url ?? 'unmatched';
      span.updateName(`${request.method} ${route}`);
      // In place of the path as sent (@fastify/otel records request.url, query included).
      span.setAttribute('url.path', route);
    },
  });
  return {
    register(app: FastifyInstance) {
      // Before the plugin's own onRequest hook: the context it keeps for the request (and the
      // handler runs in) then carries the request, however the body was read.
      app.addHook('onRequest', (request, _reply, done) => {
        context.with(context.active().setValue(REQUEST, request), done);
      });
      app.register(otel.plugin());
      // Before @fastify/otel's own onSend, which ends the span.
      app.addHook('onSend', (request, reply, payload, done) => {
        const span = requestSpan(request);
        if (span && reply.statusCode < 400) {
          const id = installationIdOf(request);
          if (id !== undefined) span.setAttribute('installation.id', id);
        }
        done(null, payload);
      });
    },
    reader: (reader, nearCache) => tracedReader(reader, nearCache),
  };
}

function requestSpan(request: FastifyRequest): Span | undefined {
  const otel = request.opentelemetry();
  return otel.instrumented ? (otel.span ?? undefined) : undefined;
}

/** The `installationId` parameter (query or form body) when it is one; else undefined. */
function installationIdOf(request: FastifyRequest): number | undefined {
  const fromQuery = (request.query as Record<string, unknown> | undefined)?.installationId;
  const raw = fromQuery ?? (request.body as Record<string, unknown> | undefined)?.installationId;
  return typeof raw === 'string' && INSTALLATION_ID.test(raw) ? Number(raw) : undefined;
}

/** `read.cache`: `hit` (answered from memory), `miss` (read from Redis), `off` (no near-cache). */
function noteCache<T>(read: Read<T>, nearCache: boolean): Read<T> {
  const request = context.active().getValue(REQUEST) as FastifyRequest | undefined;
  const span = request && requestSpan(request);
  if (span)
    span.setAttribute('read.cache', !nearCache ? 'off' : read instanceof Promise ? 'miss' : 'hit');
  return read;
}

function tracedReader(reader: ApiReader, nearCache: boolean): ApiReader {
  return {
    keyLive: (keyHash, nowMs) => reader.keyLive(keyHash, nowMs),
    installations: (keyHash, nowMs, page) => reader.installations(keyHash, nowMs, page),
    viewPage: (app, page) => reader.viewPage(app, page),
    devices: (keyHash, id, nowMs) => noteCache(reader.devices(keyHash, id, nowMs), nearCache),
    flow: (keyHash, id, nowMs) => noteCache(reader.flow(keyHash, id, nowMs), nearCache),
    flows: (keyHash, ids, nowMs) => reader.flows(keyHash, ids, nowMs),
  };
}
