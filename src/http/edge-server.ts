import {
  createServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
  STATUS_CODES,
} from 'node:http';
import type { Socket } from 'node:net';
import { hostLineCount, isValidHost } from './host-header.js';

// A Node HTTP server with the limits and refusals every listener of this project needs (the
// API's and the consumers' health server): timeouts for headers, the whole request, keep-alive
// and a stalled socket; connection caps; and an answer in the caller's JSON for everything
// Node would otherwise answer with an empty body (no Host, a bad Expect, unparsable HTTP,
// CONNECT) or let through (two Hosts, an invalid Host, HTTP/0.9 or 2.0 on an HTTP/1 parser).

export type EdgeRefusal =
  | 'BAD_REQUEST'
  | 'METHOD_NOT_ALLOWED'
  | 'REQUEST_TIMEOUT'
  | 'EXPECTATION_FAILED'
  | 'HEADERS_TOO_LARGE';

export const REFUSAL_STATUS: Readonly<Record<EdgeRefusal, number>> = {
  BAD_REQUEST: 400,
  METHOD_NOT_ALLOWED: 405,
  REQUEST_TIMEOUT: 408,
  EXPECTATION_FAILED: 417,
  HEADERS_TOO_LARGE: 431,
};

/** Why a connection was closed without an answer. */
export type DropReason = 'max-connections' | 'per-client' | 'stalled';

export interface EdgeServerLimits {
  readonly headersTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly keepAliveTimeoutMs: number;
  /** A socket with nothing read or written for this long is closed (a client not reading). */
  readonly socketIdleTimeoutMs: number;
  readonly maxConnections: number;
  /** Per remote address; 0: no limit. */
  readonly maxConnectionsPerClient: number;
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
  server.maxConnections = limits.maxConnections;
  // The byte limit bounds the count; with Node's count limit, headers past it vanish unseen
  // (a second Authorization or Host among them).
  server.maxHeadersCount = 0;
  // Node re-arms this after each request and swaps in the keep-alive timeout between requests.
  server.timeout = limits.socketIdleTimeoutMs;
  server.on('timeout', (socket: Socket) => {
    // An answer still being written: the client stopped reading (or reads too slowly to
    // matter). Otherwise an idle keep-alive connection, closed as Node would.
    if ((socket as Socket & { _httpMessage?: unknown })._httpMessage) hooks.dropped('stalled');
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
  if (limits.maxConnectionsPerClient > 0)
    limitPerClient(server, limits.maxConnectionsPerClient, hooks);
  if (hooks.handleClientErrors !== false) server.on('clientError', createClientErrorHandler(hooks));
  return server;
}

function limitPerClient(server: Server, max: number, hooks: EdgeServerHooks): void {
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '';
    const count = (open.get(address) ?? 0) + 1;
    if (count > max) {
      hooks.dropped('per-client');
      socket.destroy();
      return;
    }
    open.set(address, count);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left === 0) open.delete(address);
      else open.set(address, left);
    });
  });
}

/** Writes a refusal as the answer to a request, then closes the connection. */
export function answerResponse(
  res: ServerResponse,
  code: EdgeRefusal,
  hooks: EdgeServerHooks,
): void {
  const body = hooks.body(code);
  res.shouldKeepAlive = false;
  res.writeHead(REFUSAL_STATUS[code], {
    ...hooks.headers,
    'content-type': JSON_TYPE,
    'content-length': Buffer.byteLength(body),
    connection: 'close',
  });
  res.end(body);
}

/** Writes a refusal straight to a socket that has no response object, then closes it. */
export function answerSocket(socket: Socket, code: EdgeRefusal, hooks: EdgeServerHooks): void {
  const status = REFUSAL_STATUS[code];
  const body = hooks.body(code);
  const headers = Object.entries(hooks.headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: ${JSON_TYPE}\r\n${headers}` +
      `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

/**
 * Errors Node raises outside a request handler (unparsable HTTP, oversized headers, timeouts):
 * the refusal written to the socket, then closed.
 */
export function createClientErrorHandler(hooks: EdgeServerHooks) {
  return (error: Error & { code?: string }, socket: Socket): void => {
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
    answerSocket(socket, code, hooks);
  };
}

export function clientErrorCode(nodeCode: string | undefined): EdgeRefusal {
  if (nodeCode === 'ERR_HTTP_REQUEST_TIMEOUT') return 'REQUEST_TIMEOUT';
  if (nodeCode === 'HPE_HEADER_OVERFLOW') return 'HEADERS_TOO_LARGE';
  return 'BAD_REQUEST';
}
