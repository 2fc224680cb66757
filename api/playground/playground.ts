import scalar from '@scalar/fastify-api-reference';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../../src/config.js';
import { buildOpenApiDocument } from '../openapi/openapi-document.js';
import { registerDocsProxy } from './docs-proxy.js';
import { registerPlaygroundHeaders } from './playground-headers.js';

// The documentation playground at /docs: Scalar renders the API's OpenAPI description, with its
// JavaScript served from node_modules (no CDN). The document names the API's own address, so
// the snippets a user copies are the calls to make (docs/api.md, "Documentation playground"):
// - by default (the playground shows this server): the relative API base, which Scalar
//   resolves against the page's origin, the address the user reached this server at (also
//   behind a TLS proxy). "Test Request" then calls the API on the page's own origin, as any
//   client would: no proxy is needed, and none could check an origin it only sees in `Host`.
// - with API_DOCS_UPSTREAM_URL: that origin plus the base, absolute. Scalar sends each try-it
//   as `/docs/proxy?scalar_url=<target>` (its `proxyUrl`), and the proxy forwards it server side
//   to that origin only (proxy-target.ts), so the browser never makes a cross-origin call.
// The page and its assets carry a strict CSP (playground-headers.ts); the proxy's answers are
// API answers and carry the API's headers.

export const DOCS_PREFIX = '/docs';
export const PROXY_PREFIX = `${DOCS_PREFIX}/proxy`;

export function registerPlayground(
  app: FastifyInstance,
  config: Config,
  /** Counts a stream the proxy refused for its own caps. */
  streamRefused: () => void,
): void {
  const basePath = config.api.basePath;
  const upstream = config.api.docsUpstreamUrl;
  // Same document as {base}/openapi.json, with the server the playground calls.
  const document = JSON.stringify({
    ...buildOpenApiDocument(basePath),
    servers: [
      upstream === null
        ? { url: basePath, description: 'this server' }
        : {
            url: `${new URL(upstream).origin}${basePath}`,
            description: 'via the playground proxy',
          },
    ],
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
        // Scalar proxies absolute server URLs only: with the default (relative) one, none.
        ...(upstream === null ? {} : { proxyUrl: PROXY_PREFIX }),
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
