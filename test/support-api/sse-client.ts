import { type RequestOptions, request } from 'node:http';

// A Server-Sent Events client over a real socket, for tests: parses events and comments as
// they arrive, and waits for them with a deadline.

export interface SseEvent {
  readonly event: string;
  readonly id: string | null;
  readonly data: string;
}

export interface SseStream {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  /** For a refused request: the whole JSON body. */
  readonly body: string;
  readonly events: SseEvent[];
  readonly comments: string[];
  readonly ended: boolean;
  /** The next event not yet taken, waiting up to `timeoutMs`. */
  next(timeoutMs?: number): Promise<SseEvent>;
  /** Resolves when the server closed the stream, within `timeoutMs`. */
  closed(timeoutMs?: number): Promise<void>;
  close(): void;
}

export function openSse(
  url: string,
  headers: Record<string, string>,
  /** localAddress in 127.0.0.0/8: another client to the server's per-client limits. */
  options: Pick<RequestOptions, 'localAddress' | 'agent'> = {},
): Promise<SseStream> {
  return new Promise((resolve, reject) => {
    const init = { headers: { accept: 'text/event-stream', ...headers }, ...options };
    const req = request(url, init, (res) => {
      const events: SseEvent[] = [];
      const comments: string[] = [];
      let taken = 0;
      let buffer = '';
      let body = '';
      let ended = false;
      const waiters: Array<() => void> = [];
      const wake = () => {
        for (const w of waiters.splice(0)) w();
      };
      const sse = String(res.headers['content-type'] ?? '').startsWith('text/event-stream');
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (!sse) {
          body += chunk;
          return;
        }
        buffer += chunk;
        let end = buffer.indexOf('\n\n');
        while (end >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          let event = 'message';
          let id: string | null = null;
          const data: string[] = [];
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) comments.push(line.slice(1).trim());
            else if (line.startsWith('event: ')) event = line.slice(7);
            else if (line.startsWith('id: ')) id = line.slice(4);
            else if (line.startsWith('data: ')) data.push(line.slice(6));
          }
          if (data.length > 0) events.push({ event, id, data: data.join('\n') });
          end = buffer.indexOf('\n\n');
        }
        wake();
      });
      const finish = () => {
        ended = true;
        wake();
      };
      res.on('end', finish);
      res.on('close', finish);
      const until = (what: string, done: () => boolean, timeoutMs: number) =>
        new Promise<void>((ok, fail) => {
          const timer = setTimeout(
            () => fail(new Error(`no ${what} within ${timeoutMs} ms`)),
            timeoutMs,
          );
          const check = () => {
            if (done()) {
              clearTimeout(timer);
              ok();
            } else waiters.push(check);
          };
          check();
        });
      const stream: SseStream = {
        status: res.statusCode ?? 0,
        headers: res.headers,
        get body() {
          return body;
        },
        events,
        comments,
        get ended() {
          return ended;
        },
        async next(timeoutMs = 5_000) {
          await until('event', () => events.length > taken || ended, timeoutMs);
          if (events.length <= taken) throw new Error('stream ended without another event');
          return events[taken++] as SseEvent;
        },
        closed: (timeoutMs = 5_000) => until('end of stream', () => ended, timeoutMs),
        close: () => req.destroy(),
      };
      if (sse) resolve(stream);
      else res.on('end', () => resolve(stream));
    });
    req.on('error', reject);
    req.end();
  });
}
