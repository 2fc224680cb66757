import { randomBytes } from 'node:crypto';
import { formatDateTime } from '../../src/domain/date-time.js';
import { DEVICE_FIELDS, type DeviceCategory } from '../../src/domain/device-fields.js';
import type { DeviceRecord, DeviceValue } from '../../src/domain/device-record.js';
import type { Installation } from '../../src/domain/installation.js';

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** A well-formed API key: `itk_` plus 40 random letters and digits. */
export function newApiKey(): string {
  const bytes = randomBytes(40);
  return `itk_${[...bytes].map((b) => ALNUM[b % ALNUM.length]).join('')}`;
}

export function installation(id: number, overrides: Partial<Installation> = {}): Installation {
  return {
    id,
    name: `Installation ${id}`,
    type: 'private',
    address: 'Main Street 1',
    postalCode: '1000',
    city: 'Brussels',
    country: 'BE',
    timezone: 'Europe/Brussels',
    latitude: 50.85,
    longitude: 4.35,
    altitude: null,
    creationDate: '2024-01-02T03:04:05Z',
    ...overrides,
  };
}

const REQUIRED_DEFAULTS: Partial<Record<DeviceCategory, Record<string, DeviceValue>>> = {
  energyMeter: { options: '' },
  evCharger: { mode: 'normal', supportsBiDirectionalCharging: false },
  relay: { relayCount: 2, currentState: [true, false], desiredState: [null, true] },
  boiler: { boilerMode: 'auto' },
};

/** A full device record: every key of the category, null unless given or non-nullable. */
export function device(
  category: DeviceCategory,
  id: number,
  installationId: number,
  lastSeenMs: number,
  values: Record<string, DeviceValue> = {},
): DeviceRecord {
  const record: Record<string, DeviceValue> = {};
  for (const spec of DEVICE_FIELDS[category]) record[spec.name] = null;
  Object.assign(record, REQUIRED_DEFAULTS[category] ?? {}, values, {
    id,
    installationId,
    firstSeenDate: formatDateTime(lastSeenMs - 3_600_000),
    lastSeenDate: formatDateTime(lastSeenMs),
  });
  return record;
}
