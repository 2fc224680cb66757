import { keyGrantEvents, toAccessMessages } from '../../tools/access/access-grants.js';
import { createInstallationProfile } from '../../tools/sim/installations.js';
import type { Message } from '../lib/stack.js';
import { fullState, stateEvent } from './device-state.js';
import type { Workload } from './plan.js';

// The workload as the producers of spec/events.md would send it: installations, access facts
// and one full first report per device. The real consumers project it into Redis.

export function installationMessages(w: Workload, nowMs: number): Message[] {
  const occurredAt = new Date(nowMs).toISOString();
  const out: Message[] = [];
  for (let id = 1; id <= w.installationCount; id++) {
    const { installation } = createInstallationProfile(w.seed, id);
    out.push({
      key: String(id),
      value: JSON.stringify({
        type: 'installation.upserted',
        occurredAt,
        installation,
        companyId: w.companyOf(id),
      }),
    });
  }
  return out;
}

export function accessMessages(w: Workload, nowMs: number): Message[] {
  return w.apps.flatMap((app) =>
    toAccessMessages(
      keyGrantEvents({
        applicationId: app.applicationId,
        owner: app.owner,
        installations: app.installations,
        keyId: app.key.keyId,
        keyHash: app.key.keyHash,
        expiresAtMs: null,
        nowMs,
      }),
    ).map((m) => ({ key: String(m.key), value: String(m.value) })),
  );
}

/** One full report per device, observed a little before `nowMs`. */
export function firstReports(w: Workload, nowMs: number): Message[] {
  const out: Message[] = [];
  for (let id = 1; id <= w.installationCount; id++) {
    for (const device of w.devicesOf(id)) {
      const event = stateEvent(id, device, nowMs - 60_000, fullState(w.seed, device));
      out.push({ key: String(id), value: JSON.stringify(event) });
    }
  }
  return out;
}
