import type { EdgeServerLimits } from './edge-server.js';

// The limits of a listener that only probes and a scraper use (the consumers' health server, the
// API's ops listener): a few short requests, so short timeouts and few connections; 8 per
// client out of 32, and a newcomer takes the biggest holder's idle one when all are held
// (connection-table.ts), so idle sockets from a neighbour never keep a health check out.
export const PROBE_LIMITS: EdgeServerLimits = {
  headersTimeoutMs: 3_000,
  requestTimeoutMs: 5_000,
  keepAliveTimeoutMs: 5_000,
  socketIdleTimeoutMs: 10_000,
  maxConnections: 32,
  maxConnectionsPerClient: 8,
  maxHeaderBytes: 8 * 1024, // 8 KiB: probes send a few short headers
  maxRequestsPerSocket: 0,
};
