import scalar from '@scalar/fastify-api-reference';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../../src/config.js';
import { buildOpenApiDocument } from '../openapi/openapi-document.js';
import { registerDocsProxy } from './docs-proxy.js';
import { registerPlaygroundHeaders } from './playground-headers.js';

// The documentation playground at /docs: Scalar renders the API's OpenAPI description, with its
// JavaScript served from node_modules (no CDN); try-it requests go to /docs/proxy, which
// forwards them to the API server side, so the browser never makes a cross-origin call. The
// page and its assets carry a strict CSP (playground-headers.ts); the proxy's answers are API
// answers and carry the API's headers.

export const DOCS_PREFIX = '/docs';
export const PROXY_PREFIX = `${DOCS_PREFIX}/proxy`;

export function registerPlayground(
  app: FastifyInstance,
  config: Config,
  /** Counts a stream the proxy refused for its own caps. */
  streamRefused: () => void,
): void {
  const basePath = config.api.basePath;
  // Same document as {base}/openapi.json, with the server pointed at the proxy.
  const document = JSON.stringify({
    ...buildOpenApiDocument(basePath),
    servers: [{ url: `${PROXY_PREFIX}${basePath}`, description: 'via the playground proxy' }],
  });
  app.register(async (docs) => {
    await registerPlaygroundHeaders(docs);
    docs.get(`${DOCS_PREFIX}/openapi.json`, async (_request, reply) =>
      reply.type('application/json').send(document),
    );
    await docs.register(scalar, {
      routePrefix: DOCS_PREFIX,
      configuration: {
        url: `${DOCS_PREFIX}/openapi.json`,
        title: 'Installation Telemetry Read API',
        // Offline: no web fonts, no telemetry, no hosted features.
        withDefaultFonts: false,
        telemetry: false,
        mcp: { disabled: true },
        agent: { disabled: true },
        hideClientButton: true,
        persistAuth: false,
        showDeveloperTools: 'never',
        authentication: { preferredSecurityScheme: 'ApiKey' },
      },
    });
  });
  registerDocsProxy(app, {
    prefix: PROXY_PREFIX,
    basePath,
    upstreamUrl: config.api.docsUpstreamUrl,
    timeoutMs: config.api.docsProxyTimeoutMs,
    maxConnections: config.api.docsProxyConnections,
    maxStreams: config.api.docsProxyStreams,
    streamRefused,
  });
}
