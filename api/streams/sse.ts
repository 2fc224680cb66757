// Server-Sent Events framing (WHATWG HTML §9.2). The bodies sent are single-line JSON, so one
// `data:` line each; an event without data is not dispatched by EventSource, hence the revoked
// event carries the error envelope the single endpoint would answer.

export const SSE_HEADERS = Object.freeze({
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'private, no-cache',
  'x-content-type-options': 'nosniff',
  // Proxies that buffer responses (nginx) would hold events back.
  'x-accel-buffering': 'no',
});

export function flowEvent(etag: string, body: string): string {
  return `event: energyFlow\nid: ${etag}\ndata: ${body}\n\n`;
}

export function revokedEvent(body: string): string {
  return `event: revoked\ndata: ${body}\n\n`;
}

/** A comment line: ignored by clients, keeps idle-closing proxies from closing the stream. */
export const KEEP_ALIVE = ': keep-alive\n\n';
