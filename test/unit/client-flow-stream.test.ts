import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type EnergyFlowEvent,
  streamEnergyFlow,
} from '../../clients/typescript/src/flow-stream.js';

// The client's push iterator against a tiny local HTTP server playing what the real API does not
// (client-stream.test.ts runs it against the API): a proxy that answers and hangs up at once, and
// a stream whose reader is slow. Nothing here stands in for the API's behaviour.

const servers: Array<{ close(): void; closeAllConnections(): void }> = [];
afterEach(() => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    server.close();
  }
});

/** A local server answering each request with `handle`; resolves to its base URL. */
async function serve(handle: (res: ServerResponse, connection: number) => void): Promise<string> {
  let connections = 0;
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' });
    handle(res, ++connections);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/application/v1`;
}

const flowEvent = (id: string) =>
  `event: energyFlow\nid: ${id}\ndata: ${JSON.stringify({ valid: true, data: null })}\n\n`;

const deps = (baseUrl: string) => ({
  baseUrl,
  apiKey: 'itk_test',
  fetch: globalThis.fetch,
  now: Date.now,
  random: () => 1, // every backoff at its ceiling: the delays are exact
});

describe('client: push reconnects', () => {
  it('backs off further each time a stream ends early, even one that sent an event', async () => {
    const baseUrl = await serve((res) => res.end(flowEvent('"a"')));
    const stop = new AbortController();
    const retries: Array<{ attempt: number; delayMs: number }> = [];
    const stream = streamEnergyFlow(deps(baseUrl), 7, {
      signal: stop.signal,
      backoff: { baseDelayMs: 10, maxDelayMs: 10_000 },
      onRetry: ({ attempt, delayMs }) => {
        retries.push({ attempt, delayMs });
        if (retries.length === 5) stop.abort(new Error('enough'));
      },
    });
    const first = await stream.next();
    expect((first.value as EnergyFlowEvent).id).toBe('"a"');
    // Every reconnect gets the same event again (skipped: already seen) and the close.
    await expect(stream.next()).rejects.toThrow('enough');
    expect(retries).toEqual([
      { attempt: 0, delayMs: 10 },
      { attempt: 1, delayMs: 20 },
      { attempt: 2, delayMs: 40 },
      { attempt: 3, delayMs: 80 },
      { attempt: 4, delayMs: 160 },
    ]);
  });
});

describe('client: push idle timeout', () => {
  it('does not count the time the caller spends on an event as the stream being idle', async () => {
    let open: ServerResponse | undefined;
    let connections = 0;
    const baseUrl = await serve((res, n) => {
      connections = n;
      open = res;
      res.write(flowEvent('"a"'));
    });
    const retries: unknown[] = [];
    const idleTimeoutMs = 1_000;
    const stream = streamEnergyFlow(deps(baseUrl), 7, {
      idleTimeoutMs,
      onRetry: ({ error }) => retries.push(error),
    });
    expect(((await stream.next()).value as EnergyFlowEvent).id).toBe('"a"');
    // The caller's handling of the event takes longer than the idle timeout: that slowness is
    // the condition under test, not a wait for something else to happen.
    await new Promise((resolve) => setTimeout(resolve, idleTimeoutMs * 1.5));
    const next = stream.next();
    open?.write(flowEvent('"b"'));
    expect(((await next).value as EnergyFlowEvent).id).toBe('"b"');
    expect(retries).toEqual([]);
    expect(connections).toBe(1);
    await stream.return();
  });
});
