import type { DeviceCategory } from '../../src/domain/device-fields.js';
import { CATEGORY_ARRAY_NAME, DEVICE_CATEGORIES } from '../../src/domain/device-fields.js';
import { parseDeviceField } from '../../src/read-model/keys.js';
import { fieldValuePairs } from '../../src/read-model/stored-flow.js';

// Success bodies built from the stored JSON by concatenation: the bytes the consumer wrote are
// the bytes the client reads, with no parse and re-serialize on the way.

/** `{"valid":true,"installations":[…]}` by ascending installation id. */
export function installationsBody(byId: ReadonlyMap<number, string>): string {
  const ids = [...byId.keys()].sort((a, b) => a - b);
  return `{"valid":true,"installations":[${ids.map((id) => byId.get(id)).join(',')}]}`;
}

/** Groups the devices hash (flat field/value pairs) by category, each by ascending device id. */
export function devicesBody(installationId: number, pairs: readonly string[]): string {
  const groups = new Map<DeviceCategory, Array<[number, string]>>();
  for (const [field, json] of fieldValuePairs(pairs)) {
    const parsed = parseDeviceField(field);
    if (!parsed) continue;
    const list = groups.get(parsed.category) ?? [];
    list.push([parsed.deviceId, json]);
    groups.set(parsed.category, list);
  }
  let body = `{"valid":true,"installationId":${installationId}`;
  for (const category of DEVICE_CATEGORIES) {
    const list = (groups.get(category) ?? []).sort((a, b) => a[0] - b[0]);
    body += `,"${CATEGORY_ARRAY_NAME[category]}":[${list.map((d) => d[1]).join(',')}]`;
  }
  return `${body}}`;
}

export function energyFlowBody(installationId: number, dataJson: string): string {
  return `{"valid":true,"installationId":${installationId},"data":${dataJson}}`;
}
