import {
  createServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
  STATUS_CODES,
} from 'node:http';
import type { Socket } from 'node:net';
import { clientOf } from './client-address.js';
import { ConnectionTable } from './connection-table.js';
import { hostLineCount, isValidHost } from './host-header.js';

// A Node HTTP server with the limits and refusals every listener of this project needs (the
// API's and the consumers' health server): timeouts for headers, the whole request, keep-alive
// and a stalled socket; connection caps shared fairly between clients (connection-table.ts);
// and an answer in the caller's JSON for everything Node would otherwise answer with an empty
// body (no Host, a bad Expect, unparsable HTTP, CONNECT, a refused connection) or let through
// (two Hosts, an invalid Host, HTTP/0.9 or 2.0 on an HTTP/1 parser).

export type EdgeRefusal =
  | 'BAD_REQUEST'
  | 'METHOD_NOT_ALLOWED'
  | 'REQUEST_TIMEOUT'
  | 'EXPECTATION_FAILED'
  | 'TOO_MANY_CONNECTIONS'
  | 'HEADERS_TOO_LARGE'
  | 'SERVER_BUSY';

export const REFUSAL_STATUS: Readonly<Record<EdgeRefusal, number>> = {
  BAD_REQUEST: 400,
  METHOD_NOT_ALLOWED: 405,
  REQUEST_TIMEOUT: 408,
  EXPECTATION_FAILED: 417,
  TOO_MANY_CONNECTIONS: 429,
  HEADERS_TOO_LARGE: 431,
  SERVER_BUSY: 503,
};

/**
 * Why a connection was closed without an answer: refused while the refusals awaiting their
 * request were at their bound (or sending none in time), cut for not reading, or closed to make
 * room for another client's (idle or over its share).
 */
export const DROP_REASONS = ['max-connections', 'per-client', 'stalled', 'reclaimed'] as const;
export type DropReason = (typeof DROP_REASONS)[number];

export interface EdgeServerLimits {
  readonly headersTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly keepAliveTimeoutMs: number;
  /** A socket with nothing read or written for this long is closed (a client not reading). */
  readonly socketIdleTimeoutMs: number;
  readonly maxConnections: number;
  /** Per client (an IPv4 address, an IPv6 /64); 0: no cap but the fair share at the limit. */
  readonly maxConnectionsPerClient: number;
  /** Addresses whose connections count only against maxConnections (a reverse proxy's). */
  readonly trustedProxies?: readonly string[];
  readonly maxHeaderBytes: number;
  /** 0: no limit. */
  readonly maxRequestsPerSocket: number;
}

export interface EdgeServerHooks {
  /** The JSON body of a refusal. */
  readonly body: (code: EdgeRefusal) => string;
  /** Headers every answer carries, refusals included. */
  readonly headers: Readonly<Record<string, string>>;
  /** Logs and counts one refusal; never given the URL or a header. */
  readonly record: (code: EdgeRefusal, reason: string) => void;
  /** Counts one connection closed unanswered. */
  readonly dropped: (reason: DropReason) => void;
  /** false: the caller registers `createClientErrorHandler` itself (Fastify's option does). */
  readonly handleClientErrors?: boolean;
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

// Node enforces the header and request timeouts by checking open connections on an interval
// (30 s by default): a slow client would keep its connection up to 30 s past the timeout.
const CHECK_INTERVAL_MS = 500;
const JSON_TYPE = 'application/json; charset=utf-8';
// A refused connection is answered at its first request; at most this many wait for one, each
// at most REFUSED_WAIT_MS. Past the bound a refused connection is closed unanswered.
const MAX_WAITING_REFUSALS = 64;
const REFUSED_WAIT_MS = 1_000;
/** Seconds: a connection frees up as soon as any client closes one. */
export const CONNECTION_RETRY_AFTER = '1';

// Sockets that were answered before their request body had arrived: Node drains the rest, and
// if that outlasts the request timeout the connection is closed, never answered a second time.
const answeredEarly = new WeakSet<Socket>();

export function createEdgeServer(
  handler: Handler,
  limits: EdgeServerLimits,
  hooks: EdgeServerHooks,
): Server {
  const refuse = (res: ServerResponse, code: EdgeRefusal, reason: string) => {
    hooks.record(code, reason);
    answerResponse(res, code, hooks);
  };
  const perSocket = limits.maxRequestsPerSocket;
  const requestCounts = new WeakMap<Socket, number>();
  // Connections refused by the table, answered at their first request.
  const refused = new WeakMap<Socket, EdgeRefusal>();
  const server = createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      maxHeaderSize: limits.maxHeaderBytes,
      connectionsCheckingInterval: Math.min(CHECK_INTERVAL_MS, limits.headersTimeoutMs),
      // Checked below, to answer in JSON.
      requireHostHeader: false,
    },
    (req, res) => {
      const socket = req.socket;
      answeredEarly.delete(socket);
      const refusal = refused.get(socket);
      if (refusal !== undefined) {
        hooks.record(refusal, 'connection refused');
        return answerResponse(res, refusal, hooks, CONNECTION_RETRY_AFTER);
      }
      if (req.httpVersionMajor !== 1 || req.httpVersionMinor > 1) {
        return refuse(res, 'BAD_REQUEST', 'http version');
      }
      const host = req.headers.host;
      if (host === undefined) {
        if (req.httpVersionMinor === 1) return refuse(res, 'BAD_REQUEST', 'missing Host');
      } else if (!isValidHost(host)) {
        return refuse(res, 'BAD_REQUEST', 'invalid Host');
      } else if (hostLineCount(req.rawHeaders) > 1) {
        return refuse(res, 'BAD_REQUEST', 'repeated Host');
      }
      if (perSocket > 0) {
        // Node's own limit answers the request past it with an empty 503; here the last one
        // allowed says `Connection: close` and any pipelined after it are left unanswered
        // (RFC 9112 §9.3.2: the client retries them on a new connection).
        const count = (requestCounts.get(socket) ?? 0) + 1;
        requestCounts.set(socket, count);
        if (count > perSocket) {
          req.resume();
          return;
        }
        if (count === perSocket) res.shouldKeepAlive = false;
      }
      if (req.headers['content-length'] !== undefined || req.headers['transfer-encoding']) {
        res.once('finish', () => {
          if (!req.complete) answeredEarly.add(socket);
        });
      }
      handler(req, res);
    },
  );
  // Fastify sets these on the servers it makes itself, not on one from a factory.
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  // A backstop only: the table admits at most maxConnections, plus refusals awaiting their
  // answer and evicted connections still closing.
  server.maxConnections = 2 * limits.maxConnections + MAX_WAITING_REFUSALS;
  // The byte limit bounds the count; with Node's count limit, headers past it vanish unseen
  // (a second Authorization or Host among them).
  server.maxHeadersCount = 0;
  // Node re-arms this after each request and swaps in the keep-alive timeout between requests.
  server.timeout = limits.socketIdleTimeoutMs;
  server.on('timeout', (socket: Socket) => {
    // An answer still being written: the client stopped reading (or reads too slowly to
    // matter). Otherwise an idle keep-alive connection, closed as Node would.
    const refusal = refused.get(socket);
    if (refusal !== undefined) hooks.dropped(dropReasonOf(refusal));
    else if (!isIdle(socket)) hooks.dropped('stalled');
    socket.destroy();
  });
  // Any Expect but 100-continue (which Node answers itself).
  server.on('checkExpectation', (_req: IncomingMessage, res: ServerResponse) =>
    refuse(res, 'EXPECTATION_FAILED', 'unsupported Expect'),
  );
  // Not a proxy: without this listener Node closes the socket without a byte.
  server.on('connect', (_req: IncomingMessage, socket: Socket) => {
    hooks.record('METHOD_NOT_ALLOWED', 'CONNECT');
    answerSocket(socket, 'METHOD_NOT_ALLOWED', hooks);
  });
  server.on('drop', () => hooks.dropped('max-connections'));
  admitFairly(server, limits, hooks, refused);
  if (hooks.handleClientErrors !== false) server.on('clientError', createClientErrorHandler(hooks));
  return server;
}

/**
 * Between requests, or still sending its request: nothing is being answered on it, nor waits
 * to be read by the client.
 */
const isIdle = (socket: Socket): boolean =>
  !(socket as Socket & { _httpMessage?: unknown })._httpMessage && socket.writableLength === 0;

const dropReasonOf = (refusal: EdgeRefusal): DropReason =>
  refusal === 'TOO_MANY_CONNECTIONS' ? 'per-client' : 'max-connections';

/** Admits each connection through the table; closes what it evicts; marks what it refuses. */
function admitFairly(
  server: Server,
  limits: EdgeServerLimits,
  hooks: EdgeServerHooks,
  refused: WeakMap<Socket, EdgeRefusal>,
): void {
  const proxies = new Set((limits.trustedProxies ?? []).map(clientOf));
  const table = new ConnectionTable<Socket>(
    { max: limits.maxConnections, perClient: limits.maxConnectionsPerClient },
    isIdle,
    (client) => proxies.has(client),
  );
  const clients = new WeakMap<Socket, string>();
  let waiting = 0;
  server.on('connection', (socket: Socket) => {
    const client = clientOf(socket.remoteAddress);
    const verdict = table.decide(client);
    if (!verdict.admit) {
      if (waiting >= MAX_WAITING_REFUSALS) {
        hooks.dropped(verdict.reason);
        socket.destroy();
        return;
      }
      waiting++;
      refused.set(socket, verdict.reason === 'per-client' ? 'TOO_MANY_CONNECTIONS' : 'SERVER_BUSY');
      socket.setTimeout(REFUSED_WAIT_MS);
      socket.once('close', () => waiting--);
      return;
    }
    if (verdict.evict !== null) {
      table.remove(clients.get(verdict.evict) ?? '', verdict.evict);
      hooks.dropped('reclaimed');
      verdict.evict.destroy();
    }
    table.add(client, socket);
    clients.set(socket, client);
    socket.once('close', () => table.remove(client, socket));
  });
}

/** Writes a refusal as the answer to a request, then closes the connection. */
export function answerResponse(
  res: ServerResponse,
  code: EdgeRefusal,
  hooks: EdgeServerHooks,
  retryAfter?: string,
): void {
  const body = hooks.body(code);
  res.shouldKeepAlive = false;
  res.writeHead(REFUSAL_STATUS[code], {
    ...hooks.headers,
    ...(retryAfter === undefined ? {} : { 'retry-after': retryAfter }),
    'content-type': JSON_TYPE,
    'content-length': Buffer.byteLength(body),
    connection: 'close',
  });
  res.end(body);
}

/**
 * Writes a refusal straight to a socket that has no response object, then closes it. To a HEAD
 * (RFC 9110 §9.3.2) the head alone: its Content-Length is the body's a GET would get.
 */
export function answerSocket(
  socket: Socket,
  code: EdgeRefusal,
  hooks: EdgeServerHooks,
  head = false,
): void {
  const status = REFUSAL_STATUS[code];
  const body = hooks.body(code);
  const headers = Object.entries(hooks.headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: ${JSON_TYPE}\r\n${headers}` +
      `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${head ? '' : body}`,
  );
}

/**
 * Errors Node raises outside a request handler (unparsable HTTP, oversized headers, timeouts):
 * the refusal written to the socket, then closed.
 */
export function createClientErrorHandler(hooks: EdgeServerHooks) {
  return (error: Error & { code?: string; rawPacket?: unknown }, socket: Socket): void => {
    // A reset or closed connection has no one to answer.
    if (error.code === 'ECONNRESET' || socket.destroyed || !socket.writable) {
      socket.destroy();
      return;
    }
    const code = clientErrorCode(error.code);
    // An answer already written or under way for this request cannot be followed by another.
    const inFlight = (socket as Socket & { _httpMessage?: ServerResponse })._httpMessage;
    if (inFlight?.headersSent || answeredEarly.has(socket)) {
      hooks.record(code, `${error.code ?? 'client error'} after an answer`);
      socket.destroy();
      return;
    }
    hooks.record(code, error.code ?? 'client error');
    // The method is all that is read of what could not be parsed: a HEAD gets no body.
    answerSocket(socket, code, hooks, isHead(error.rawPacket));
  };
}

/** Node's parse errors carry the bytes they read as `rawPacket`. */
const isHead = (packet: unknown): boolean =>
  Buffer.isBuffer(packet) && packet.subarray(0, 5).toString('latin1') === 'HEAD ';

export function clientErrorCode(nodeCode: string | undefined): EdgeRefusal {
  if (nodeCode === 'ERR_HTTP_REQUEST_TIMEOUT') return 'REQUEST_TIMEOUT';
  if (nodeCode === 'HPE_HEADER_OVERFLOW') return 'HEADERS_TOO_LARGE';
  return 'BAD_REQUEST';
}
