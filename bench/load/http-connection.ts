import { connect, type Socket } from 'node:net';

// One keep-alive HTTP/1.1 connection of a load generator, one request in flight: writes
// ready-made request bytes and frames the response by Content-Length or chunked encoding,
// reading nothing of it but the status. A dropped connection fails its request and is opened
// again. Cheap on purpose: the generator runs on the cores it measures.

export interface ConnectionEvents {
  onResponse(conn: HttpConnection, status: number, intendedMs: number): void;
  /** The request in flight got no response (the connection failed or closed). */
  onFailure(conn: HttpConnection, intendedMs: number): void;
}

const HEAD_END = Buffer.from('\r\n\r\n');
const CRLF = Buffer.from('\r\n');

export class HttpConnection {
  private socket!: Socket;
  private connected!: Promise<void>;
  private closing = false;
  private inFlight = false;
  private intendedMs = 0;
  /** Bytes of the response read so far, until its head is complete (or its chunked body). */
  private pending: Buffer | null = null;
  /** Content-Length body bytes still to come; -1 before the head is read. */
  private bodyLeft = -1;
  private chunked = false;
  private closeAfter = false;
  private status = 0;

  constructor(
    private readonly port: number,
    private readonly host: string,
    private readonly events: ConnectionEvents,
  ) {
    this.open();
  }

  ready(): Promise<void> {
    return this.connected;
  }

  /** Writes the request; on a connection still opening, once it is open (the socket queues it). */
  send(request: Buffer, intendedMs: number): void {
    this.inFlight = true;
    this.intendedMs = intendedMs;
    this.socket.write(request);
  }

  close(): void {
    this.closing = true;
    this.socket.destroy();
  }

  private open(): void {
    this.reset();
    const socket = connect({ port: this.port, host: this.host, noDelay: true });
    this.socket = socket;
    let opened = false;
    this.connected = new Promise((resolve, reject) => {
      socket.once('connect', () => {
        opened = true;
        resolve();
      });
      socket.once('error', reject);
    });
    this.connected.catch(() => undefined);
    socket.on('data', (chunk: Buffer) => this.read(chunk));
    socket.on('error', () => undefined);
    socket.once('close', () => {
      if (socket !== this.socket || this.closing) return;
      const failed = this.inFlight;
      this.inFlight = false;
      // A server that refuses connections is tried again at a pace, not in a busy loop.
      if (opened) this.reopen(failed);
      else setTimeout(() => this.reopen(failed), 50);
    });
  }

  private reopen(failed: boolean): void {
    if (this.closing) return;
    this.open();
    if (failed) this.events.onFailure(this, this.intendedMs);
  }

  private reset(): void {
    this.pending = null;
    this.bodyLeft = -1;
    this.chunked = false;
    this.closeAfter = false;
  }

  private read(chunk: Buffer): void {
    if (this.bodyLeft < 0 || this.chunked) {
      const data = this.pending === null ? chunk : Buffer.concat([this.pending, chunk]);
      if (this.bodyLeft < 0) {
        const end = data.indexOf(HEAD_END);
        if (end < 0) {
          this.pending = data;
          return;
        }
        this.readHead(data.toString('latin1', 0, end).toLowerCase());
        const body = data.subarray(end + HEAD_END.length);
        if (this.chunked) {
          this.pending = body;
          if (chunkedComplete(body)) this.done();
        } else {
          this.pending = null;
          this.bodyLeft -= body.length;
          if (this.bodyLeft <= 0) this.done();
        }
        return;
      }
      this.pending = data;
      if (chunkedComplete(data)) this.done();
      return;
    }
    this.bodyLeft -= chunk.length;
    if (this.bodyLeft <= 0) this.done();
  }

  private readHead(head: string): void {
    this.status = Number(head.slice(9, 12));
    this.chunked = /\r\ntransfer-encoding:[^\r]*chunked/.test(head);
    this.closeAfter = /\r\nconnection:\s*close/.test(head);
    const length = /\r\ncontent-length:\s*(\d+)/.exec(head);
    this.bodyLeft = length ? Number(length[1]) : 0;
  }

  private done(): void {
    const { status, intendedMs, closeAfter } = this;
    this.reset();
    this.inFlight = false;
    // The server ends this connection: the next request goes on a new one.
    if (closeAfter) {
      this.socket.destroy();
      this.open();
    }
    this.events.onResponse(this, status, intendedMs);
  }
}

/** Whether a chunked body is complete: its chunks walked to the last (size 0) one. */
function chunkedComplete(body: Buffer): boolean {
  let at = 0;
  for (;;) {
    const lineEnd = body.indexOf(CRLF, at);
    if (lineEnd < 0) return false;
    const size = Number.parseInt(body.toString('latin1', at, lineEnd), 16);
    if (Number.isNaN(size)) return false;
    // Chunk data and its CRLF; the last chunk is followed by (no trailers) one CRLF.
    const next = lineEnd + 2 + size + 2;
    if (size === 0) return body.length >= next;
    if (body.length < next) return false;
    at = next;
  }
}
