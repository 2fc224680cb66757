import { createReadApiClient } from '../../clients/typescript/src/index.js';

// The calls client-cpu.ts compares, one read of an installation's energy flow each: the same
// functions run in the bench process (CPU time) and in the child under callgrind (instructions).

/** The installations seeded and read, cycled through call after call. */
export const IDS: readonly number[] = Array.from({ length: 100 }, (_, i) => 9_000 + i);

/** What the client waits for at most per call unless told otherwise, ms (its default). */
const TIMEOUT_MS = 30_000;

export type Call = (id: number) => Promise<unknown>;

/** Names in table order: the first is the baseline every ratio is against. */
export const KINDS = ['raw', 'raw-abortable', 'client', 'client-304'] as const;
export type Kind = (typeof KINDS)[number];

export const KIND_LABELS: Record<Kind, string> = {
  raw: 'raw fetch + json()',
  'raw-abortable': 'raw fetch + json(), with a timeout that aborts it (AbortController + timer)',
  client: 'client, 200s (cache off)',
  'client-304': 'client, 304s (cache on)',
};

/** `baseUrl`: the API's origin and base path. */
export function calls(baseUrl: string, apiKey: string): Record<Kind, Call> {
  const url = (id: number) => `${baseUrl}/getInstallationCurrentEnergyFlow?installationId=${id}`;
  const fresh = createReadApiClient({ baseUrl, apiKey, cache: false });
  const cached = createReadApiClient({ baseUrl, apiKey });
  return {
    raw: async (id) => {
      const res = await fetch(url(id), { headers: { 'api-key': apiKey } });
      return res.json();
    },
    // The least a read with a deadline that really ends the request costs through fetch.
    'raw-abortable': async (id) => {
      const expiry = new AbortController();
      const timer = setTimeout(() => expiry.abort(), TIMEOUT_MS);
      try {
        const res = await fetch(url(id), { headers: { 'api-key': apiKey }, signal: expiry.signal });
        return await res.json();
      } finally {
        clearTimeout(timer);
      }
    },
    client: (id) => fresh.getEnergyFlow(id),
    'client-304': (id) => cached.getEnergyFlow(id),
  };
}

/** `n` calls one after another over IDS. */
export async function runCalls(call: Call, n: number): Promise<void> {
  for (let i = 0; i < n; i++) await call(IDS[i % IDS.length] as number);
}
