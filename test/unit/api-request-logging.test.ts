import { Writable } from 'node:stream';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { requestLogController } from '../../api/request-logging.js';
import { createLogger } from '../../src/logger.js';

// Fastify's per-request logging through api/request-logging.ts: at info its request lines are
// written with the request's reqId; at warn they are not built, and warnings and errors (the
// handler's, Fastify's own) are still written.
function appAt(level: string) {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  const logger = createLogger({ level, name: 'api' }, sink);
  const app = Fastify({
    loggerInstance: logger,
    logController: requestLogController(logger),
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
  return { app, lines };
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
