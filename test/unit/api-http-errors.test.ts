import { Writable } from 'node:stream';
import Fastify, { type FastifyBaseLogger } from 'fastify';
import { describe, expect, it } from 'vitest';
import { registerHttpErrors } from '../../api/http-errors.js';
import { createLogger } from '../../src/logger.js';

// A failure of the API's own is an error-level line; a client that left while its streamed
// answer was being prepared is not (issue 57: "Premature close" at error level).
describe('API error handler: log levels', () => {
  const app = (error: Error & { code?: string }) => {
    const lines: Array<{ level: number; msg: string }> = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(JSON.parse(String(chunk)));
        done();
      },
    });
    const logger: FastifyBaseLogger = createLogger({ level: 'info', name: 'api' }, sink);
    const server = Fastify({ loggerInstance: logger });
    registerHttpErrors(server);
    server.get('/fails', async () => {
      throw error;
    });
    return { server, lines };
  };

  it('logs a client gone from a stream at info, anything else at error, both answered 500', async () => {
    const gone = Object.assign(new Error('Premature close'), {
      code: 'ERR_STREAM_PREMATURE_CLOSE',
    });
    for (const [error, level] of [
      [gone, 30],
      [new Error('redis down'), 50],
    ] as const) {
      const { server, lines } = app(error);
      const res = await server.inject({ url: '/fails' });
      expect(res.statusCode).toBe(500);
      expect(res.json()).toEqual({ valid: false, error: 'INTERNAL_ERROR' });
      const line = lines.find((l) => l.msg !== 'incoming request' && l.msg !== 'request completed');
      expect(line?.level, error.message).toBe(level);
      await server.close();
    }
  });
});
