import { DEVICE_CATEGORIES, type DeviceCategory } from '../../src/domain/device-fields.js';
import type { IssuedKey } from '../../tools/access/api-key.js';
import { issueKey } from '../../tools/access/api-key.js';
import { createRng, deriveSeed } from '../../tools/sim/random.js';

// The bench's workload, derived from a seed: installations 1..N with 1-20 devices each over all
// six categories, 200 applications (half user-owned, half company-owned) with one key each, and
// grants so that every installation is readable by exactly two keys.

export const APPLICATIONS = 200;
const COMPANY_APPS = APPLICATIONS / 2;

export interface DeviceSpec {
  readonly category: DeviceCategory;
  readonly deviceId: number;
}

export interface AppSpec {
  readonly applicationId: number;
  readonly owner: { readonly type: 'user' | 'company'; readonly id: number };
  readonly key: IssuedKey;
  readonly installations: readonly number[];
}

export interface Workload {
  readonly seed: number;
  readonly installationCount: number;
  readonly deviceCount: number;
  devicesOf(installationId: number): readonly DeviceSpec[];
  companyOf(installationId: number): number;
  readonly apps: readonly AppSpec[];
  /** Every (key, installation) pair a key may read: reads are spread uniformly over these. */
  readonly pairs: ReadonlyArray<readonly [apiKey: string, installationId: number]>;
}

/** 1-20 devices; the first is a meter and the second an inverter so most flows have numbers. */
export function devicesOf(seed: number, installationId: number): DeviceSpec[] {
  const rng = createRng(deriveSeed(seed, installationId, 7));
  const count = rng.int(1, 20);
  return Array.from({ length: count }, (_, slot) => ({
    category: slot === 0 ? 'energyMeter' : slot === 1 ? 'inverter' : rng.pick(DEVICE_CATEGORIES),
    deviceId: installationId * 100 + slot + 1,
  }));
}

export function createWorkload(seed: number, installationCount: number): Workload {
  const companyOf = (id: number) => ((id - 1) % COMPANY_APPS) + 1;
  const block = Math.ceil(installationCount / COMPANY_APPS);
  const apps: AppSpec[] = [];
  for (let u = 1; u <= COMPANY_APPS; u++) {
    const from = (u - 1) * block + 1;
    const to = Math.min(u * block, installationCount);
    const installations = [];
    for (let i = from; i <= to; i++) installations.push(i);
    apps.push({ applicationId: u, owner: { type: 'user', id: u }, key: issueKey(), installations });
  }
  for (let c = 1; c <= COMPANY_APPS; c++) {
    const installations = [];
    for (let i = c; i <= installationCount; i += COMPANY_APPS) installations.push(i);
    apps.push({
      applicationId: COMPANY_APPS + c,
      owner: { type: 'company', id: c },
      key: issueKey(),
      installations,
    });
  }
  let deviceCount = 0;
  for (let i = 1; i <= installationCount; i++) deviceCount += devicesOf(seed, i).length;
  const pairs = apps.flatMap((a) => a.installations.map((i) => [a.key.apiKey, i] as const));
  return {
    seed,
    installationCount,
    deviceCount,
    devicesOf: (id) => devicesOf(seed, id),
    companyOf,
    apps,
    pairs,
  };
}
