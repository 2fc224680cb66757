import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import {
  answerResponse,
  createEdgeServer as createHardenedServer,
  createClientErrorHandler as createSocketErrorHandler,
  type DropReason,
  type EdgeServerHooks,
  type EdgeServerLimits,
} from '../../src/http/edge-server.js';
import { errorBody, type TransportErrorCode } from '../errors/error-catalog.js';
import { API_HEADERS } from '../http/response-headers.js';
import { checkRequestTarget } from './request-target.js';

// The API's Node server under Fastify: the shared edge (src/http/edge-server.ts: timeouts,
// connection caps, Host and version checks, refusals in JSON) answering in the API's envelope
// with the API's headers, plus the request-target check (an absolute-form target naming another
// host is refused). See docs/security.md.

export type EdgeLimits = EdgeServerLimits;

/** Logs and counts one answer written before routing; never given the URL or any header. */
export type EdgeRecorder = (code: TransportErrorCode, reason: string) => void;

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

const hooksFor = (
  record: EdgeRecorder,
  dropped: (reason: DropReason) => void,
): EdgeServerHooks => ({
  body: errorBody,
  headers: API_HEADERS,
  record,
  dropped,
  // Fastify registers its clientErrorHandler option (createClientErrorHandler below) itself.
  handleClientErrors: false,
});

export function createEdgeServer(
  handler: Handler,
  limits: EdgeLimits,
  record: EdgeRecorder,
  onDrop: (reason: DropReason) => void,
): Server {
  const hooks = hooksFor(record, onDrop);
  return createHardenedServer(
    (req, res) => {
      const verdict = checkRequestTarget(req.url ?? '', req.headers.host);
      if (!verdict.ok) {
        record('BAD_REQUEST', verdict.reason);
        answerResponse(res, 'BAD_REQUEST', hooks);
        return;
      }
      req.url = verdict.url;
      handler(req, res);
    },
    limits,
    hooks,
  );
}

/** Fastify's clientErrorHandler: Node's parse errors and timeouts, in the envelope. */
export function createClientErrorHandler(record: EdgeRecorder) {
  return createSocketErrorHandler(hooksFor(record, () => undefined));
}

export { clientErrorCode } from '../../src/http/edge-server.js';
