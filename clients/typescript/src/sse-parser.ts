// Server-Sent Events framing (WHATWG HTML §9.2.6), fed text as it arrives: lines end with LF,
// CRLF or CR; `event`, `data` (joined by LF), `id` and `retry` fields; a blank line dispatches;
// lines starting with ':' are comments. Events with no data are not dispatched, as EventSource.

export interface SseEvent {
  readonly event: string;
  readonly data: string;
  /** The event's `id:` if it had one. */
  readonly id: string | undefined;
}

export interface SseParser {
  /** Events completed by `chunk`. */
  push(chunk: string): SseEvent[];
  /** The last `retry:` value, ms, or null. */
  readonly retryMs: number | null;
}

export function createSseParser(): SseParser {
  let buffer = '';
  let event = '';
  let data: string[] = [];
  let id: string | undefined;
  let retryMs: number | null = null;

  function line(text: string, out: SseEvent[]): void {
    if (text === '') {
      if (data.length > 0) out.push({ event: event || 'message', data: data.join('\n'), id });
      event = '';
      data = [];
      id = undefined;
      return;
    }
    if (text.startsWith(':')) return;
    const colon = text.indexOf(':');
    const field = colon < 0 ? text : text.slice(0, colon);
    let value = colon < 0 ? '' : text.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
    else if (field === 'id' && !value.includes('\0')) id = value;
    else if (field === 'retry' && /^\d+$/.test(value)) retryMs = Number(value);
  }

  // A chunk ending in CR may be followed by the LF of the same CRLF: skip that LF then.
  let afterCr = false;

  return {
    push(chunk) {
      const out: SseEvent[] = [];
      if (chunk === '') return out;
      let text = chunk;
      if (afterCr && text.charCodeAt(0) === 10) text = text.slice(1);
      afterCr = false;
      buffer += text;
      let start = 0;
      for (let i = 0; i < buffer.length; i++) {
        const c = buffer.charCodeAt(i);
        if (c !== 10 && c !== 13) continue;
        line(buffer.slice(start, i), out);
        if (c === 13) {
          if (i + 1 === buffer.length) afterCr = true;
          else if (buffer.charCodeAt(i + 1) === 10) i++;
        }
        start = i + 1;
      }
      buffer = buffer.slice(start);
      return out;
    },
    get retryMs() {
      return retryMs;
    },
  };
}
