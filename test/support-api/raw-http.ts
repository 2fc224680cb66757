import { connect, type Socket } from 'node:net';

// HTTP over a bare socket, for what an HTTP client library will not send: absolute-form
// targets, a missing Host, repeated credential headers, malformed bytes, slow senders.

export interface RawAnswer {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
  /** Everything the server wrote, as text. */
  readonly text: string;
  /** The server closed the connection. */
  readonly closed: boolean;
  readonly elapsedMs: number;
}

/** Parses the first answer in `text` (Content-Length bodies; chunked is decoded plainly). */
export function parseAnswer(text: string): Omit<RawAnswer, 'closed' | 'elapsedMs' | 'text'> | null {
  const end = text.indexOf('\r\n\r\n');
  if (end === -1) return null;
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? '')?.[1]);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const at = line.indexOf(':');
    headers[line.slice(0, at).trim().toLowerCase()] = line.slice(at + 1).trim();
  }
  let body = text.slice(end + 4);
  if (headers['content-length'] !== undefined) {
    body = body.slice(0, Number(headers['content-length']));
  } else if (headers['transfer-encoding'] === 'chunked') {
    body = body.replace(/(^|\r\n)[0-9a-f]+\r\n/gi, '').replace(/\r\n$/, '');
  }
  return { status, headers, body };
}

/**
 * Writes `chunks` (with `gapMs` between them), then reads until the server closes, or until
 * `waitMs` (then `closed` is false). HEAD answers are read without a body.
 */
export async function rawRequest(
  port: number,
  chunks: string | Buffer | ReadonlyArray<string | Buffer>,
  options: {
    gapMs?: number;
    waitMs?: number;
    endAfterWrite?: boolean;
    /** Stop at the first complete final answer instead of waiting for the server to close. */
    untilAnswer?: boolean;
    /** A source address in 127.0.0.0/8: another client to the server's per-client limits. */
    localAddress?: string;
  } = {},
): Promise<RawAnswer> {
  const started = Date.now();
  const list = typeof chunks === 'string' || Buffer.isBuffer(chunks) ? [chunks] : chunks;
  const socket: Socket = connect({ port, host: '127.0.0.1', localAddress: options.localAddress });
  let text = '';
  let closed = false;
  const done = new Promise<void>((resolve) => {
    socket.on('data', (chunk) => {
      text += chunk.toString('latin1');
      if (options.untilAnswer && answerComplete(text, /^HEAD /.test(String(list[0])))) resolve();
    });
    socket.on('close', () => {
      closed = true;
      resolve();
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  for (const [i, chunk] of list.entries()) {
    if (socket.destroyed) break;
    if (i > 0 && options.gapMs) await new Promise((r) => setTimeout(r, options.gapMs));
    socket.write(chunk);
  }
  if (options.endAfterWrite) socket.end();
  const timer = new Promise<void>((resolve) => setTimeout(resolve, options.waitMs ?? 5_000));
  await Promise.race([done, timer]);
  socket.destroy();
  const parsed = parseAnswer(text) ?? { status: 0, headers: {}, body: '' };
  return { ...parsed, text, closed, elapsedMs: Date.now() - started };
}

/** Whether `text` holds a whole final answer (after any 1xx), by Content-Length. */
function answerComplete(text: string, head: boolean): boolean {
  let rest = text;
  for (;;) {
    const answer = parseAnswer(rest);
    if (!answer) return false;
    const headerEnd = rest.indexOf('\r\n\r\n') + 4;
    if (answer.status >= 200) {
      if (head || answer.status === 204 || answer.status === 304) return true;
      const length = answer.headers['content-length'];
      return length !== undefined && rest.length - headerEnd >= Number(length);
    }
    rest = rest.slice(headerEnd);
  }
}

/** A GET request with `Host` and `Connection: close`, plus `extra` header lines. */
export function getRequest(target: string, extra: string[] = [], method = 'GET'): string {
  return [
    `${method} ${target} HTTP/1.1`,
    'Host: localhost',
    ...extra,
    'Connection: close',
    '',
    '',
  ].join('\r\n');
}

/**
 * A client that writes `bytes` and never reads (a slow reader): its socket is paused from the
 * start. The caller destroys it.
 */
export async function stalledReader(
  port: number,
  bytes: string,
  localAddress?: string,
): Promise<Socket> {
  const socket = connect({ port, host: '127.0.0.1', localAddress });
  socket.pause();
  socket.on('error', () => undefined);
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  socket.write(bytes);
  return socket;
}

/** A connection from `localAddress` that sends `bytes` (nothing: an idle socket) and waits. */
export async function heldSocket(port: number, localAddress: string, bytes = ''): Promise<Socket> {
  const socket = connect({ port, host: '127.0.0.1', localAddress });
  socket.on('error', () => undefined);
  socket.resume();
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  if (bytes !== '') socket.write(bytes);
  return socket;
}
