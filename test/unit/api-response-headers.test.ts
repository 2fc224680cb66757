import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { API_HEADERS, withApiHeaders } from '../../api/edge/response-headers.js';

// The headers a Fastify reply gets (withApiHeaders) are the ones the writers below Fastify use
// (API_HEADERS): named twice for speed, they must not drift apart.
describe('API response headers', () => {
  it('sets on a reply exactly the headers the edge writes', async () => {
    const app = Fastify();
    app.get('/', (_request, reply) => withApiHeaders(reply).type('text/plain').send('x'));
    const res = await app.inject({ url: '/' });
    const set = Object.fromEntries(
      Object.entries(res.headers).filter(([name]) => name in API_HEADERS),
    );
    expect(set).toEqual(API_HEADERS);
    expect(Object.keys(res.headers).sort()).toEqual(
      [...Object.keys(API_HEADERS), 'connection', 'content-length', 'content-type', 'date'].sort(),
    );
  });
});
