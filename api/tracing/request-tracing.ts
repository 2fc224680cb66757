import {
  type Context,
  context,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { type RootSampling, sdkDecides } from '../../src/tracing/root-sampling.js';
import type { ApiReader, Read } from '../reader/api-reader.js';
import type { ApiTracer } from './api-tracer.js';
import { createStreamTracer } from './stream-tracing.js';

// The API's spans (docs/operations.md, "Tracing"): one per request, `<METHOD> <route>`, the
// caller's traceparent as parent, with the Redis commands beneath (the ioredis
// instrumentation), the status, whether the read came from the near-cache, and the
// installation read once the answer says the caller may see it. Never the path as sent, a
// header or a key: a client may put its key anywhere in the URL.
// Three hooks of our own rather than @fastify/otel: at 1 % sampling that plugin (a span per
// request and per handler, its hooks) added about 40 µs of CPU to a 39 µs near-cache hit, these
// far less (docs/operations.md, "What it costs"). A request without a caller's traceparent is
// drawn first (root-sampling.ts): one not kept builds nothing (no span, no name, no ids), leaves
// no context active, so nothing beneath it makes a span, and costs the other hooks a WeakMap
// lookup each.

const INSTALLATION_ID = /^[1-9][0-9]{0,15}$/;

interface Traced {
  readonly span: Span;
  readonly context: Context;
}

/** `roots`: the process's draw (TracingRuntime); by default the SDK's sampler decides alone. */
export function createApiTracer(roots: RootSampling = sdkDecides): ApiTracer {
  // Created after the SDK started (main.ts): the provider's own tracer, not a proxy per call.
  const tracer = trace.getTracer('read-model-api');
  /** The span of each sampled request, by request. */
  const requests = new WeakMap<FastifyRequest, Traced>();
  return {
    register(app: FastifyInstance) {
      app.addHook('onRequest', (request, _reply, done) => {
        const caller = request.headers.traceparent !== undefined;
        if (!caller && !roots.keep()) return done();
        const route = request.routeOptions.url ?? 'unmatched';
        const name = `${request.method} ${route}`;
        const options = { kind: SpanKind.SERVER };
        const parent = caller ? propagation.extract(ROOT_CONTEXT, request.headers) : ROOT_CONTEXT;
        const span = caller
          ? tracer.startSpan(name, options, parent)
          : roots.start(tracer, name, options, parent);
        // Dropped all the same: a caller's traceparent that says not sampled.
        if (!span.isRecording()) return done();
        // Set once sampled: the SDK copies and checks what a span starts with, sampled or not.
        span.setAttributes({
          'http.request.method': request.method,
          'http.route': route,
          // The route again, never the path as sent.
          'url.path': route,
        });
        const traced = { span, context: trace.setSpan(parent, span) };
        requests.set(request, traced);
        context.with(traced.context, done);
      });
      // Again once the body was read: a form body's parser calls back outside the context.
      app.addHook('preHandler', (request, _reply, done) => {
        const traced = requests.get(request);
        if (traced) context.with(traced.context, done);
        else done();
      });
      app.addHook('onResponse', (request, reply, done) => {
        const traced = requests.get(request);
        if (traced) {
          const status = reply.statusCode;
          traced.span.setAttribute('http.response.status_code', status);
          // Only on answers the caller may see: a refusal says nothing of the installation.
          const id = status < 400 ? installationIdOf(request) : undefined;
          if (id !== undefined) traced.span.setAttribute('installation.id', id);
          if (status >= 500) traced.span.setStatus({ code: SpanStatusCode.ERROR });
          traced.span.end();
        }
        done();
      });
    },
    reader: (reader, nearCache) => tracedReader(reader, nearCache),
    // The span's own context object: nothing built per request.
    sampledSpan: (request) => requests.get(request)?.span.spanContext(),
    streams: createStreamTracer(tracer, roots),
  };
}

/** The `installationId` parameter (query or form body) when it is one; else undefined. */
function installationIdOf(request: FastifyRequest): number | undefined {
  const fromQuery = (request.query as Record<string, unknown> | undefined)?.installationId;
  const raw = fromQuery ?? (request.body as Record<string, unknown> | undefined)?.installationId;
  return typeof raw === 'string' && INSTALLATION_ID.test(raw) ? Number(raw) : undefined;
}

/** The reader noting `read.cache` on the request's span: `hit` (from memory), `miss`, `off`. */
function tracedReader(reader: ApiReader, nearCache: boolean): ApiReader {
  const note = <T>(read: Read<T>): Read<T> => {
    const span = trace.getActiveSpan();
    if (span?.isRecording())
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
