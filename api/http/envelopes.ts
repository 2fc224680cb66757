import { CATEGORY_ARRAY_NAME, DEVICE_CATEGORIES } from '../../src/domain/device-fields.js';
import { parseDeviceField } from '../../src/read-model/keys.js';

// Success bodies built from the stored JSON by concatenation: the bytes the consumer wrote are
// the bytes the client reads, with no parse and re-serialize on the way. The list bodies are
// joined as Buffers, straight from Redis's reply, without a UTF-8 decode and re-encode.

const ascii = (text: string) => Buffer.from(text, 'latin1');
const COMMA = ascii(',');
const INSTALLATIONS_OPEN = ascii('{"valid":true,"installations":[');
const INSTALLATIONS_CLOSE = ascii(']}');
const CATEGORY_OPEN = DEVICE_CATEGORIES.map((c) => ascii(`,"${CATEGORY_ARRAY_NAME[c]}":[`));
const CATEGORY_INDEX = new Map<string, number>(DEVICE_CATEGORIES.map((c, i) => [c, i]));
const CATEGORY_CLOSE = ascii(']');
const DEVICES_CLOSE = ascii('}');

/**
 * What a list body needs of an installation: its id (the order) and its stored JSON bytes. The
 * reader's StoredInstallation is one; named here so http/ needs nothing of the reader.
 */
export interface ListedInstallation {
  readonly id: number;
  readonly json: Buffer;
}

const byId = (a: { readonly id: number }, b: { readonly id: number }) => a.id - b.id;

/**
 * `{"valid":true,"installations":[…]}` of installations in ascending id order, with
 * `"nextCursor"` after the list when a page has one (beyond.md §7).
 */
export function installationsBody(
  installations: readonly ListedInstallation[],
  nextCursor: string | null = null,
): Buffer {
  const parts: Buffer[] = [INSTALLATIONS_OPEN];
  appendInstallations(parts, installations, true);
  parts.push(nextCursor === null ? INSTALLATIONS_CLOSE : ascii(`],"nextCursor":"${nextCursor}"}`));
  return Buffer.concat(parts);
}

/** The pieces of a streamed installations body: its opening, each page's items, its end. */
export const installationsStream = {
  open: INSTALLATIONS_OPEN,
  items(installations: readonly ListedInstallation[], first: boolean): Buffer {
    const parts: Buffer[] = [];
    appendInstallations(parts, installations, first);
    return Buffer.concat(parts);
  },
  close: INSTALLATIONS_CLOSE,
};

function appendInstallations(
  parts: Buffer[],
  installations: readonly ListedInstallation[],
  first: boolean,
): void {
  for (let i = 0; i < installations.length; i++) {
    if (i > 0 || !first) parts.push(COMMA);
    parts.push((installations[i] as ListedInstallation).json);
  }
}

interface StoredDevice {
  readonly id: number;
  readonly json: Buffer;
}

/**
 * The devices hash (flat field/value pairs) grouped by category in the spec's order, each by
 * ascending device id.
 */
export function devicesBody(installationId: number, pairs: readonly Buffer[]): Buffer {
  const groups: StoredDevice[][] = DEVICE_CATEGORIES.map(() => []);
  for (let i = 0; i + 1 < pairs.length; i += 2) {
    const field = parseDeviceField((pairs[i] as Buffer).toString('latin1'));
    if (!field) continue;
    const group = groups[CATEGORY_INDEX.get(field.category) as number] as StoredDevice[];
    group.push({ id: field.deviceId, json: pairs[i + 1] as Buffer });
  }
  const parts: Buffer[] = [ascii(`{"valid":true,"installationId":${installationId}`)];
  for (let c = 0; c < groups.length; c++) {
    const group = (groups[c] as StoredDevice[]).sort(byId);
    parts.push(CATEGORY_OPEN[c] as Buffer);
    for (let d = 0; d < group.length; d++) {
      if (d > 0) parts.push(COMMA);
      parts.push((group[d] as StoredDevice).json);
    }
    parts.push(CATEGORY_CLOSE);
  }
  parts.push(DEVICES_CLOSE);
  return Buffer.concat(parts);
}

export function energyFlowBody(installationId: number, dataJson: string): string {
  return `{"valid":true,"installationId":${installationId},"data":${dataJson}}`;
}
