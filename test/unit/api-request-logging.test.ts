import { Writable } from 'node:stream';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { requestChildLoggerFactory, requestLogController } from '../../api/request-logging.js';
import { createLogger } from '../../src/logger.js';

// Fastify's per-request logging through api/request-logging.ts: at info its request lines are
// written with the request's reqId; at warn they are not built, nor is the request's child
// logger until something is logged, and warnings and errors (the handler's, Fastify's own) are
// still written with the reqId.
function appAt(level: string) {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  const logger = createLogger({ level, name: 'api' }, sink);
  // Children pino makes of the app's logger (Fastify's per request among them).
  const made = { children: 0 };
  const child = logger.child;
  logger.child = function (this: typeof logger, ...args: Parameters<typeof child>) {
    made.children++;
    return child.apply(this, args);
  } as typeof logger.child;
  const app = Fastify({
    loggerInstance: logger,
    logController: requestLogController(logger),
    childLoggerFactory: requestChildLoggerFactory(logger),
  });
  app.get('/ok', async () => 'ok');
  app.get('/fails', async (request) => {
    request.log.error({ err: { message: 'boom' } }, 'read failed');
    throw new Error('unhandled');
  });
  app.get('/child', async (request) => {
    request.log.child({ part: 'x' }).warn('from a child');
    return 'ok';
  });
  app.get('/info-route', { logLevel: 'info' }, async (request) => {
    request.log.info('at the route level');
    return 'ok';
  });
  return { app, lines, made };
}

describe('request logging', () => {
  it('at info, writes the request lines with their reqId', async () => {
    const { app, lines } = appAt('info');
    const res = await app.inject({ url: '/ok' });
    expect(res.statusCode).toBe(200);
    const msgs = lines.map((l) => l.msg);
    expect(msgs).toEqual(['incoming request', 'request completed']);
    expect(lines.every((l) => l.reqId === lines[0]?.reqId && typeof l.reqId === 'string')).toBe(
      true,
    );
    expect(lines[0]?.req).toMatchObject({ method: 'GET', url: '/ok' });
  });

  it('at warn, writes no request line but every warning and error, with the reqId', async () => {
    const { app, lines } = appAt('warn');
    await app.inject({ url: '/ok' });
    expect(lines).toEqual([]);
    const res = await app.inject({ url: '/fails' });
    expect(res.statusCode).toBe(500);
    const failed = lines.find((l) => l.msg === 'read failed');
    expect(failed).toMatchObject({ level: 50, err: { message: 'boom' } });
    expect(typeof failed?.reqId).toBe('string');
    // Fastify's own line for the unhandled error, and its completion with the error.
    expect(lines.filter((l) => l.reqId === failed?.reqId).length).toBeGreaterThan(1);
    await app.inject({ url: '/child' });
    const fromChild = lines.find((l) => l.msg === 'from a child');
    expect(fromChild).toMatchObject({ level: 40, part: 'x' });
    expect(typeof fromChild?.reqId).toBe('string');
  });

  it('at warn, makes no child logger for a request that logs nothing', async () => {
    const { app, lines, made } = appAt('warn');
    await app.ready();
    const before = made.children;
    await app.inject({ url: '/ok' });
    await app.inject({ url: '/ok' });
    expect(made.children).toBe(before);
    expect(lines).toEqual([]);
    await app.inject({ url: '/fails' });
    expect(made.children).toBe(before + 1);
  });

  it('at info, makes the child for every request', async () => {
    const { app, made } = appAt('info');
    await app.ready();
    const before = made.children;
    await app.inject({ url: '/ok' });
    expect(made.children).toBe(before + 1);
  });

  it('a route with its own level logs at it, with the reqId', async () => {
    const { app, lines } = appAt('warn');
    await app.inject({ url: '/info-route' });
    const line = lines.find((l) => l.msg === 'at the route level');
    expect(line).toMatchObject({ level: 30 });
    expect(typeof line?.reqId).toBe('string');
  });

  it('reports the level of the logger it stands for', async () => {
    const { app } = appAt('warn');
    let level = '';
    app.get('/level', async (request) => {
      level = request.log.level;
      return 'ok';
    });
    await app.inject({ url: '/level' });
    expect(level).toBe('warn');
  });
});
