import type { DeviceCategory } from '../domain/device-fields.js';
import { type DeviceMeta, metaFromRecord, readStoredDevice } from '../domain/device-record.js';
import type {
  DeviceEntry,
  InstallationState,
  ProjectedFlow,
} from '../projection/installation-state.js';
import { parseDeviceField } from './keys.js';

// How an installation's state is laid out in its slot (src/read-model/keys.ts): the devices
// hash (records, as served), the device-times hash (field -> '<firstSeenMs>;<lastSeenMs>', plus
// '#rev'), the flow hash and the deletion marker. Pure: parses what
// load-installation-4.lua returns, encodes what write-installation-4.lua stores.

export const REVISION_FIELD = '#rev';

/** The device-times value of one device (the Lua script reads lastSeenMs from it). */
export function encodeDeviceTimes(meta: DeviceMeta): string {
  // The devices of one report share both times (first seen together, seen now): one text for
  // all of them, not two number conversions and a concatenation per device.
  if (meta.firstSeenMs !== lastFirstMs || meta.lastSeenMs !== lastLastMs) {
    lastFirstMs = meta.firstSeenMs;
    lastLastMs = meta.lastSeenMs;
    lastTimes = `${lastFirstMs};${lastLastMs}`;
  }
  return lastTimes;
}
let lastFirstMs = Number.NaN;
let lastLastMs = Number.NaN;
let lastTimes = '';

// A third part (flow inputs, written by earlier releases) is left unread.
const TIMES = /^(-?\d+);(-?\d+)(?:;|$)/;

/** A stored device-times value; null when it is not one. */
export function decodeDeviceTimes(value: string | undefined): DeviceMeta | null {
  const times = value === undefined ? null : TIMES.exec(value);
  return times ? { firstSeenMs: Number(times[1]), lastSeenMs: Number(times[2]) } : null;
}

/** A stored device record cannot be read back: the installation's events are dead-lettered. */
export class CorruptStoredDataError extends Error {
  readonly retriable = false;
  constructor(
    readonly installationId: number,
    /** Why, for the log (the dead-letter detail names the installation only). */
    readonly why: string,
  ) {
    super(`stored devices of installation ${installationId} are unreadable`);
  }
}

/** The state of one installation from load-installation-4.lua's reply; throws CorruptStoredDataError. */
export function decodeInstallationState(
  id: number,
  marker: string | null,
  timesFlat: readonly string[],
  devicesFlat: readonly string[],
  flow: readonly (string | null)[],
): InstallationState {
  const times = new Map<string, string>();
  for (let i = 0; i + 1 < timesFlat.length; i += 2)
    times.set(timesFlat[i] as string, timesFlat[i + 1] as string);
  const devices = new Map<string, DeviceEntry>();
  for (let i = 0; i + 1 < devicesFlat.length; i += 2) {
    const field = devicesFlat[i] as string;
    const device = parseDeviceField(field);
    if (!device) continue;
    devices.set(
      field,
      decodeDevice(
        id,
        device.category,
        device.deviceId,
        devicesFlat[i + 1] as string,
        times.get(field),
      ),
    );
  }
  const storedFlow: ProjectedFlow = {
    data: flow[0] ?? 'null',
    validUntilMs: Number(flow[1] ?? 0),
  };
  return {
    id,
    revision: Number(times.get(REVISION_FIELD) ?? 0),
    deletedAtMs: marker === null ? null : Number(marker),
    devices,
    flow: storedFlow,
  };
}

function decodeDevice(
  id: number,
  category: DeviceCategory,
  deviceId: number,
  json: string,
  times: string | undefined,
): DeviceEntry {
  let record: ReturnType<typeof readStoredDevice>;
  try {
    record = readStoredDevice(category, json);
  } catch (error) {
    throw new CorruptStoredDataError(id, (error as Error).message);
  }
  // Written before precise times were kept: the record's whole seconds.
  const meta = decodeDeviceTimes(times) ?? metaFromRecord(record);
  if (meta === null)
    throw new CorruptStoredDataError(id, `${category} ${deviceId} has no seen dates`);
  return { category, deviceId, record, meta };
}
