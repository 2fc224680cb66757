// Polls the energy flow of every installation the key may read, every 10 s, with the official
// client: 100 installations per request, unchanged chunks cost a 304, stale data is flagged.
// Installed from the package (compiled beside this file at pack time):
//   READ_API_URL=http://127.0.0.1:8080/application/v1 READ_API_KEY=itk_… \
//     node node_modules/@installation-telemetry/read-api-client/examples/poller.js
// POLLS=n stops after n polls (default: until interrupted).
import { createReadApiClient, isApiError } from '@installation-telemetry/read-api-client';

const client = createReadApiClient({
  baseUrl: process.env.READ_API_URL ?? 'http://127.0.0.1:8080/application/v1',
  apiKey: process.env.READ_API_KEY ?? '',
});
const polls = Number(process.env.POLLS ?? Number.POSITIVE_INFINITY);
// Older than this is flagged STALE; a device leaves the flow after the online window (5 min by
// default), its installation then shows "no device online".
const STALE_MS = 2 * 60_000;

const ids: number[] = [];
for await (const installation of client.installations()) ids.push(installation.id);

for (let poll = 1; ; poll++) {
  try {
    const result = await client.getEnergyFlows(ids);
    for (const { installationId, data } of result.flows) {
      const age = data ? Date.now() - Date.parse(data.lastUpdated) : null;
      const state = age === null ? 'no device online' : age > STALE_MS ? 'STALE' : 'live';
      console.log(installationId, state, data?.housePower ?? '-', 'W house');
    }
    // The oldest data age tells whether any installation is stale, whatever the others.
    const oldest = result.oldestLastModified?.toISOString() ?? 'none';
    console.log(
      `${result.requests} requests, ${result.notModified} answered 304, oldest data ${oldest},`,
      `${result.offline.length} offline, quota left:`,
      result.rateLimit?.remaining ?? 'off',
    );
  } catch (error) {
    if (isApiError(error, 'UNAUTHORIZED')) throw error; // a revoked key does not come back
    console.error('poll failed, next one in 10 s:', error);
  }
  if (poll >= polls) break;
  await new Promise((resolve) => setTimeout(resolve, 10_000));
}
