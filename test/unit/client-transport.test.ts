import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  ApiError,
  createReadApiClient,
  NetworkError,
  TimeoutError,
} from '../../clients/typescript/src/index.js';

// The client's reads against a tiny local HTTP server scripted to do what the real API does not
// do on demand (client-*.test.ts in test/integration run the client against the API): quota
// headers that space requests seconds apart, a body cut midway, a chunk that fails while another
// is in flight, a clock that jumps past a deadline. Nothing here stands in for the API's logic.

type Handler = (req: IncomingMessage, res: ServerResponse, url: URL) => void;
const servers: Array<{ close(): void; closeAllConnections(): void }> = [];
afterEach(() => {
  vi.useRealTimers();
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    server.close();
  }
});

/** A local server answering with `handle`; resolves to a client of it and what it was asked. */
async function serve(handle: Handler, retry = { maxAttempts: 4, baseDelayMs: 1, maxDelayMs: 10 }) {
  const requests: URL[] = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://local');
    requests.push(url);
    handle(req, res, url);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/application/v1`;
  const client = createReadApiClient({ baseUrl, apiKey: 'itk_test', retry, cache: false });
  return { client, requests };
}

const json = (res: ServerResponse, status: number, body: unknown, headers = {}) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
};
const flow = { valid: true, data: null };

describe('client: quota pacing slots', () => {
  // r=2 with 2 s to the reset: one request a second. Every answer says the same.
  const paced: Handler = (_req, res) =>
    json(res, 200, flow, {
      'ratelimit-policy': '"default";q=10;w=60',
      ratelimit: '"default";r=2;t=2',
    });

  it('does not keep the slot of a call that timed out before it, and reports its timeout', async () => {
    const { client, requests } = await serve(paced);
    await client.getEnergyFlow(1); // learns the quota
    await client.getEnergyFlow(1); // starts now, the next slot a second later
    const late = await client.getEnergyFlow(1, { timeoutMs: 100 }).catch((e: unknown) => e);
    expect(late).toBeInstanceOf(TimeoutError);
    expect(late).toMatchObject({ timeoutMs: 100 });
    // The slot a second after the second call is still free: a call that can wait 1.2 s gets it
    // (had the failed call kept it, the next free one would be half a second later).
    expect((await client.getEnergyFlow(1, { timeoutMs: 1_200 })).status).toBe(200);
    expect(requests).toHaveLength(3);
  });

  it('gives back the slot of a call aborted while it waited for it', async () => {
    const { client, requests } = await serve(paced);
    await client.getEnergyFlow(1);
    await client.getEnergyFlow(1);
    const cancel = new AbortController();
    const aborted = client.getEnergyFlow(1, { signal: cancel.signal });
    cancel.abort(new Error('caller gave up'));
    await expect(aborted).rejects.toThrow('caller gave up');
    expect((await client.getEnergyFlow(1, { timeoutMs: 1_200 })).status).toBe(200);
    expect(requests).toHaveLength(3);
  });
});

describe('client: a request in flight', () => {
  /** Never answers; `closed` tells whether the client ended the request before an answer. */
  const hanging = () => {
    let closed: Promise<boolean> = new Promise(() => undefined);
    const handle: Handler = (_req, res) => {
      closed = new Promise((resolve) => res.on('close', () => resolve(!res.writableEnded)));
    };
    return { handle, closed: () => closed };
  };

  it('is ended at the call deadline, which the TimeoutError reports', async () => {
    const server = hanging();
    const { client } = await serve(server.handle);
    const error = await client.getEnergyFlow(1, { timeoutMs: 200 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TimeoutError);
    expect(error).toMatchObject({ timeoutMs: 200 });
    expect(await server.closed()).toBe(true);
  });

  it('is ended when the caller aborts, with the caller reason', async () => {
    const server = hanging();
    const { client, requests } = await serve(server.handle);
    const cancel = new AbortController();
    const call = client.getEnergyFlow(1, { signal: cancel.signal });
    await vi.waitFor(() => expect(requests).toHaveLength(1));
    cancel.abort(new Error('caller gave up'));
    await expect(call).rejects.toThrow('caller gave up');
    expect(await server.closed()).toBe(true);
  });
});

describe('client: a 200 whose body is cut', () => {
  const cut = (res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
    res.write('{"valid":tr', () => res.socket?.destroy());
  };

  it('is retried like a connection error', async () => {
    const { client, requests } = await serve((_req, res) =>
      requests.length === 1 ? cut(res) : json(res, 200, flow),
    );
    expect((await client.getEnergyFlow(1)).body).toEqual(flow);
    expect(requests).toHaveLength(2);
  });

  it('ends in a NetworkError when every attempt is cut', async () => {
    const { client, requests } = await serve((_req, res) => cut(res), {
      maxAttempts: 2,
      baseDelayMs: 1,
      maxDelayMs: 10,
    });
    const error = await client.getEnergyFlow(1).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NetworkError);
    expect(error).toMatchObject({ retriable: true });
    expect(requests).toHaveLength(2);
  });
});

const bulkIds = (url: URL) => (url.searchParams.get('installationIds') ?? '').split(',');
const bulkAnswer = (res: ServerResponse, url: URL) =>
  json(res, 200, {
    valid: true,
    flows: bulkIds(url).map((id) => ({ installationId: Number(id), data: null })),
    notFound: [],
  });
const ids = Array.from({ length: 250 }, (_, i) => i + 1); // chunks 1-100, 101-200, 201-250

describe('client: bulk call', () => {
  it('stops at the first failed chunk: the one in flight is aborted, no other starts', async () => {
    let secondArrived: () => void = () => undefined;
    const second = new Promise<void>((resolve) => {
      secondArrived = resolve;
    });
    let secondClosed: Promise<boolean> = Promise.resolve(false);
    const { client, requests } = await serve((_req, res, url) => {
      const first = bulkIds(url)[0];
      if (first === '1') {
        // Fails once the second chunk is in flight.
        void second.then(() => json(res, 400, { valid: false, error: 'INVALID_PARAMETERS' }));
      } else if (first === '101') {
        // Never answered: only the client can end it.
        secondClosed = new Promise((resolve) => res.on('close', () => resolve(!res.writableEnded)));
        secondArrived();
      } else bulkAnswer(res, url);
    });
    const error = await client.getEnergyFlows(ids, { concurrency: 2 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ status: 400 });
    expect(await secondClosed).toBe(true);
    expect(requests.map((u) => bulkIds(u)[0]).sort()).toEqual(['1', '101']);
  });

  it('has one deadline for all its chunks', async () => {
    // Only Date is faked: the client's clock, which the server moves past the deadline.
    vi.useFakeTimers({ toFake: ['Date'] });
    const { client, requests } = await serve((_req, res, url) => {
      if (requests.length === 1) vi.setSystemTime(Date.now() + 10_001);
      bulkAnswer(res, url);
    });
    const error = await client
      .getEnergyFlows(ids, { concurrency: 1, timeoutMs: 10_000 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TimeoutError);
    expect(error).toMatchObject({ timeoutMs: 10_000 });
    expect(requests).toHaveLength(1);
  });
});

describe('client: installations pages', () => {
  it('share one deadline for the iterator own time, not the loop body', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const { client, requests } = await serve((_req, res) => {
      vi.setSystemTime(Date.now() + 6_000); // each page takes 6 s
      const page = requests.length;
      json(res, 200, { valid: true, installations: [{ id: page }], nextCursor: `c${page}` });
    });
    const seen: number[] = [];
    const error = await (async () => {
      for await (const installation of client.installations({ timeoutMs: 10_000 })) {
        seen.push(installation.id);
        vi.setSystemTime(Date.now() + 60_000); // the loop body takes a minute: not counted
      }
    })().catch((e: unknown) => e);
    // 6 s for the first page, 12 s after the second: the third is not asked.
    expect(seen).toEqual([1, 2]);
    expect(error).toBeInstanceOf(TimeoutError);
    expect(error).toMatchObject({ timeoutMs: 10_000 });
    expect(requests).toHaveLength(2);
  });
});
