// The real fetch, with a record of what each call sent and got: tests of the official client
// (clients/typescript) see the requests it makes against the real API, nothing stands in for it.

export interface RecordedCall {
  readonly url: string;
  readonly ifNoneMatch: string | null;
  readonly lastEventId: string | null;
  readonly status: number;
  readonly at: number;
}

export function recordingFetch(): { fetch: typeof fetch; calls: RecordedCall[] } {
  const calls: RecordedCall[] = [];
  const recorded: typeof fetch = async (input, init) => {
    const headers = new Headers(init?.headers);
    const res = await fetch(input, init);
    calls.push({
      url: String(input),
      ifNoneMatch: headers.get('if-none-match'),
      lastEventId: headers.get('last-event-id'),
      status: res.status,
      at: Date.now(),
    });
    return res;
  };
  return { fetch: recorded, calls };
}
