import type { DeviceCategory } from '../domain/device-fields.js';
import { metaFromRecord, readStoredDevice } from '../domain/device-record.js';
import { flowInputOfEntry } from '../projection/flow-of-state.js';
import type {
  DeviceEntry,
  InstallationState,
  StoredFlow,
} from '../projection/installation-state.js';
import { encodeFlowInput } from './flow-inputs.js';
import { parseDeviceField } from './keys.js';

// How an installation's state is laid out in its slot (src/read-model/keys.ts): the devices
// hash (records, as served), the flow-inputs hash (field -> '<firstSeenMs>;<lastSeenMs>;<flow
// inputs>', plus '#rev'), the flow hash and the deletion marker. Pure: parses what
// load-installation-4.lua returns, encodes what write-installation-4.lua stores.

export const REVISION_FIELD = '#rev';

/** The flow-inputs value of one device: precise times first (the Lua script reads lastSeenMs). */
export const encodeDeviceInputs = (entry: DeviceEntry): string =>
  `${entry.meta.firstSeenMs};${entry.meta.lastSeenMs};${encodeFlowInput(flowInputOfEntry(entry))}`;

const TIMES = /^(-?\d+);(-?\d+);/;

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
  inputsFlat: readonly string[],
  devicesFlat: readonly string[],
  flow: readonly (string | null)[],
): InstallationState {
  const inputs = new Map<string, string>();
  for (let i = 0; i + 1 < inputsFlat.length; i += 2)
    inputs.set(inputsFlat[i] as string, inputsFlat[i + 1] as string);
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
        inputs.get(field),
      ),
    );
  }
  const storedFlow: StoredFlow = {
    data: flow[0] ?? 'null',
    validUntilMs: Number(flow[1] ?? 0),
  };
  return {
    id,
    revision: Number(inputs.get(REVISION_FIELD) ?? 0),
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
  inputs: string | undefined,
): DeviceEntry {
  let record: ReturnType<typeof readStoredDevice>;
  try {
    record = readStoredDevice(category, json);
  } catch (error) {
    throw new CorruptStoredDataError(id, (error as Error).message);
  }
  const times = inputs === undefined ? null : TIMES.exec(inputs);
  // Written before precise times were kept: the record's whole seconds.
  const meta = times
    ? { firstSeenMs: Number(times[1]), lastSeenMs: Number(times[2]) }
    : metaFromRecord(record);
  if (meta === null)
    throw new CorruptStoredDataError(id, `${category} ${deviceId} has no seen dates`);
  return { category, deviceId, record, meta };
}
