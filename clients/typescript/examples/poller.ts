// Polls the energy flow of every installation the key may read, every 10 s, with the official
// client: 100 installations per request, unchanged chunks cost a 304, stale data is flagged.
//   READ_API_URL=http://127.0.0.1:8080/application/v1 READ_API_KEY=itk_… node examples/poller.ts
import { createReadApiClient, isApiError } from '@installation-telemetry/read-api-client';

const client = createReadApiClient({
  baseUrl: process.env.READ_API_URL ?? 'http://127.0.0.1:8080/application/v1',
  apiKey: process.env.READ_API_KEY ?? '',
});
const STALE_MS = 5 * 60_000;

const ids: number[] = [];
for await (const installation of client.installations()) ids.push(installation.id);

for (;;) {
  try {
    const { flows, requests, notModified, rateLimit } = await client.getEnergyFlows(ids);
    for (const { installationId, data } of flows) {
      const age = data ? Date.now() - Date.parse(data.lastUpdated) : null;
      const state = age === null ? 'no device online' : age > STALE_MS ? 'STALE' : 'live';
      console.log(installationId, state, data?.housePower ?? '-', 'W house');
    }
    console.log(
      `${requests} requests, ${notModified} answered 304, quota left:`,
      rateLimit?.remaining ?? 'off',
    );
  } catch (error) {
    if (isApiError(error, 'UNAUTHORIZED')) throw error; // a revoked key does not come back
    console.error('poll failed, next one in 10 s:', error);
  }
  await new Promise((resolve) => setTimeout(resolve, 10_000));
}
