import type { Installation } from '../../src/domain/installation.js';
import type { Seeder } from '../../tools/seed/read-model-seed.js';
import { installation, newApiKey } from '../../tools/seed/records.js';
import { cannon } from './side-by-side.js';
import { BASE_PATH as BASE } from './stack.js';
import { type Bodies, seedFlowModel } from './standalone.js';

// The read model of the near-cache cases (near-cache-reads.ts, read-instructions.ts): each
// installation with an inverter, a battery and a meter; `APPS` keys of their own application
// granted every installation (the per-installation reads); `LIST_KEYS` keys granted
// `LIST_SIZE` installations each (getInstallations, ~27 KB bodies). With the bodies the API
// answers for them, which the bare baseline route serves from a Map.

export const READ_ENDPOINTS = [
  'getInstallationCurrentEnergyFlow',
  'getInstallationDevices',
  'getInstallations',
] as const;
export type ReadEndpoint = (typeof READ_ENDPOINTS)[number];

const APPS = 4;
const LIST_KEYS = 4;
const LIST_SIZE = 200;

export interface ReadModel {
  readonly insts: readonly Installation[];
  /** Keys of applications 1..APPS, each granted every installation. */
  readonly keys: readonly string[];
  /** Keys of applications 100.., each granted its own LIST_SIZE installations. */
  readonly listKeys: readonly string[];
}

export function readModel(installations: number): ReadModel {
  return {
    insts: Array.from({ length: installations }, (_, i) => installation(5000 + i)),
    keys: Array.from({ length: APPS }, () => newApiKey()),
    listKeys: Array.from({ length: LIST_KEYS }, () => newApiKey()),
  };
}

export async function seedReadModel(seed: Seeder, model: ReadModel): Promise<void> {
  await seedFlowModel(seed, model.insts, model.keys, {
    inverter: { powerAc: 1200 },
    battery: { soe: 55, powerDc: 300 },
    energyMeter: { powerAc: -400 },
  });
  for (const [a, key] of model.listKeys.entries()) {
    const granted = model.insts.slice(a * LIST_SIZE, (a + 1) * LIST_SIZE);
    await seed.liveKey(key, { app: 100 + a, installations: granted });
  }
}

/** API key -> application, as the one-read server takes them. */
export function applicationsOf(model: ReadModel): Record<string, number> {
  return Object.fromEntries([
    ...model.keys.map((k, a) => [k, a + 1] as const),
    ...model.listKeys.map((k, a) => [k, 100 + a] as const),
  ]);
}

export const keysOf = (model: ReadModel, endpoint: ReadEndpoint): readonly string[] =>
  endpoint === 'getInstallations' ? model.listKeys : model.keys;

export const pathOf = (endpoint: ReadEndpoint, id: number): string =>
  endpoint === 'getInstallations'
    ? `${BASE}/${endpoint}`
    : `${BASE}/${endpoint}?installationId=${id}`;

/** What the API at `origin` answers each installation (or list key), for the baseline. */
export async function captureBodies(
  origin: string,
  model: ReadModel,
  endpoints: readonly ReadEndpoint[] = READ_ENDPOINTS,
): Promise<Bodies> {
  const bodies: Bodies = {};
  const get = async (path: string, key: string) => {
    const res = await fetch(`${origin}${path}`, { headers: { 'api-key': key } });
    const body = await res.text();
    if (res.status !== 200) throw new Error(`${path} answered ${res.status}: ${body}`);
    return body;
  };
  for (const endpoint of endpoints) {
    const list: Array<[string, string]> = [];
    bodies[endpoint] = list;
    if (endpoint === 'getInstallations') {
      for (const key of model.listKeys) list.push([key, await get(pathOf(endpoint, 0), key)]);
      continue;
    }
    const key = model.keys[0] as string;
    for (const inst of model.insts) {
      list.push([String(inst.id), await get(pathOf(endpoint, inst.id), key)]);
    }
  }
  return bodies;
}

/**
 * Every (key, installation) pair in turn, twice: JIT, script caches and the near-cache (an entry
 * is kept by the read after the one that subscribes), so no measured run pays for filling it.
 * Random pairs left ~1 in 8 cold, which the first endpoint paid.
 */
export async function warmPairs(
  origin: string,
  model: ReadModel,
  endpoint: ReadEndpoint,
  connections = 8,
): Promise<void> {
  const list = keysOf(model, endpoint);
  const { insts } = model;
  let n = 0;
  await cannon(
    origin,
    () => {
      const i = n++;
      const inst = insts[Math.floor(i / list.length) % insts.length] as Installation;
      return {
        path: pathOf(endpoint, inst.id),
        headers: { 'api-key': list[i % list.length] as string },
      };
    },
    { connections, amount: 2 * list.length * insts.length },
  );
}
