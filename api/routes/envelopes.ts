import type { DeviceCategory } from '../../src/domain/device-fields.js';
import { CATEGORY_ARRAY_NAME, DEVICE_CATEGORIES } from '../../src/domain/device-fields.js';

// Success bodies built from the stored JSON by concatenation: the bytes the consumer wrote are
// the bytes the client reads, with no parse and re-serialize on the way.

/** `{"valid":true,"installations":[…]}` by ascending installation id. */
export function installationsBody(byId: ReadonlyMap<number, string>): string {
  const ids = [...byId.keys()].sort((a, b) => a - b);
  return `{"valid":true,"installations":[${ids.map((id) => byId.get(id)).join(',')}]}`;
}

/** Groups the devices hash (flat field/value pairs) by category, each by ascending device id. */
export function devicesBody(installationId: number, pairs: readonly string[]): string {
  const groups = new Map<string, Array<[number, string]>>();
  for (let i = 0; i + 1 < pairs.length; i += 2) {
    const field = pairs[i] as string;
    const sep = field.indexOf(':');
    const category = field.slice(0, sep);
    const list = groups.get(category) ?? [];
    list.push([Number(field.slice(sep + 1)), pairs[i + 1] as string]);
    groups.set(category, list);
  }
  let body = `{"valid":true,"installationId":${installationId}`;
  for (const category of DEVICE_CATEGORIES) {
    const list = (groups.get(category) ?? []).sort((a, b) => a[0] - b[0]);
    body += `,"${CATEGORY_ARRAY_NAME[category as DeviceCategory]}":[${list.map((d) => d[1]).join(',')}]`;
  }
  return `${body}}`;
}

export function energyFlowBody(installationId: number, dataJson: string): string {
  return `{"valid":true,"installationId":${installationId},"data":${dataJson}}`;
}
