import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';

// The playground proxy's connections to its upstream: a pool of their own, capped, so a page of
// try-it requests (or someone scripting it) can hold at most `maxConnections` of them. When the
// upstream is this server on 127.0.0.1, they leave from another loopback address (Linux routes
// all of 127.0.0.0/8 to lo), so the connection table counts them as one client of their own and
// never against the browsers and pollers that share 127.0.0.1.

/** The proxy's own source address towards 127.0.0.1 (docs/security.md, "Playground proxy"). */
export const PROXY_SOURCE_ADDRESS = '127.80.0.1';

export interface UpstreamPool {
  agentFor(url: URL): HttpAgent;
  /** The source address used towards `url`'s host, or undefined for the system's choice. */
  sourceFor(url: URL): string | undefined;
  destroy(): void;
}

export function createUpstreamPool(maxConnections: number): UpstreamPool {
  const options = { keepAlive: true, maxSockets: maxConnections, maxFreeSockets: 8 };
  const http = new HttpAgent(options);
  const https = new HttpsAgent(options);
  return {
    agentFor: (url) => (url.protocol === 'https:' ? https : http),
    sourceFor: (url) =>
      process.platform === 'linux' && url.hostname === '127.0.0.1'
        ? PROXY_SOURCE_ADDRESS
        : undefined,
    destroy() {
      http.destroy();
      https.destroy();
    },
  };
}
