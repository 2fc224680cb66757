import { describe, expect, it } from 'vitest';
import {
  CATEGORY_ARRAY_NAME,
  DEVICE_CATEGORIES,
  DEVICE_FIELD_NAMES,
  DEVICE_FIELDS,
  INGEST_FIELDS,
  ingestFieldSchema,
  PERCENT_FIELDS,
  REQUIRED_ON_CREATE,
} from '../../src/domain/device-fields.js';

const COMMON = [
  'id',
  'installationId',
  'gatewayId',
  'manufacturer',
  'model',
  'version',
  'serialNumber',
  'firstSeenDate',
  'lastSeenDate',
];
const phases = (p: string) => [`${p}L1`, `${p}L2`, `${p}L3`];
const six = (p: string) => [1, 2, 3, 4, 5, 6].map((i) => `${p}${i}`);
const AC = [...phases('powerAc'), ...phases('voltageAc'), ...phases('currentAc')];

// Transcribed from read-api.md, table by table, in the order it lists them.
const EXPECTED: Record<string, string[]> = {
  inverter: [
    ...COMMON,
    'status',
    'vendorStatusString',
    'isOffGrid',
    'maxChargePower',
    'maxDischargePower',
    'powerAc',
    ...AC,
    'frequency',
    'powerApparentAc',
    'powerReactiveAc',
    'powerFactor',
    'backupPowerAc',
    'powerDc',
    'powerDcPvTotal',
    ...six('powerDcPv'),
    ...six('voltageDcPv'),
    ...six('currentDcPv'),
    'temperature',
  ],
  battery: [
    ...COMMON,
    'inverterId',
    'status',
    'powerDc',
    'voltageDc',
    'currentDc',
    'soe',
    'soh',
    'temperature',
    'minCellTemperature',
    'avgCellTemperature',
    'maxCellTemperature',
    'minCellVoltage',
    'avgCellVoltage',
    'maxCellVoltage',
    'ratedEnergy',
    'maximumEnergy',
    'availableEnergy',
    'maxChargeContinuousPower',
    'maxDischargeContinuousPower',
    'minSoe',
    'maxSoe',
  ],
  energyMeter: [
    ...COMMON,
    'powerAc',
    ...AC,
    'frequency',
    'totalImportAc',
    'totalExportAc',
    'dailyImportAc',
    'dailyExportAc',
    'options',
  ],
  evCharger: [
    ...COMMON,
    'mode',
    'requireAuthorization',
    'supportsBiDirectionalCharging',
    'maxChargingCurrent',
    'currentMaxChargingCurrent',
    'status',
    'vendorStatusString',
    'powerOffered',
    'powerAc',
    ...AC,
    'frequencyAc',
    'powerDc',
    'voltageDc',
    'currentDc',
    'temperature',
  ],
  relay: [...COMMON, 'relayCount', 'currentState', 'desiredState'],
  boiler: [
    ...COMMON,
    'status',
    'vendorStatusString',
    'boilerMode',
    'powerAc',
    ...AC,
    'frequency',
    'temperature',
    'temperature2',
    'temperature3',
    'temperature4',
    'targetTemperature',
    'minimumTemperature',
    'availablePower',
    'effectiveMaxPower',
    'operationMode',
    'operationState',
    'deviceState',
    'relayState',
    'loadState',
    'pwmPercent',
  ],
};

const spec = (category: (typeof DEVICE_CATEGORIES)[number], name: string) => {
  const found = DEVICE_FIELDS[category].find((s) => s.name === name);
  if (!found) throw new Error(`${category}.${name} missing`);
  return found;
};

describe('device fields', () => {
  it('has the six categories and their API array names', () => {
    expect(DEVICE_CATEGORIES).toEqual([
      'inverter',
      'battery',
      'energyMeter',
      'evCharger',
      'relay',
      'boiler',
    ]);
    expect(CATEGORY_ARRAY_NAME).toEqual({
      inverter: 'inverters',
      battery: 'batteries',
      energyMeter: 'energyMeters',
      evCharger: 'evChargers',
      relay: 'relays',
      boiler: 'boilers',
    });
  });

  it.each(DEVICE_CATEGORIES)('lists the %s fields in spec order', (category) => {
    expect(DEVICE_FIELD_NAMES[category]).toEqual(EXPECTED[category]);
  });

  it('requires the non-nullable fields on creation', () => {
    expect(REQUIRED_ON_CREATE).toEqual({
      inverter: [],
      battery: [],
      energyMeter: ['options'],
      evCharger: ['mode', 'supportsBiDirectionalCharging'],
      relay: ['relayCount', 'currentState', 'desiredState'],
      boiler: ['boilerMode'],
    });
  });

  it('keeps the projection-owned fields out of ingest', () => {
    for (const c of DEVICE_CATEGORIES) {
      const names = INGEST_FIELDS[c].map((s) => s.name);
      for (const owned of ['id', 'installationId', 'firstSeenDate', 'lastSeenDate']) {
        expect(names).not.toContain(owned);
      }
      expect(names).toContain('gatewayId');
    }
  });

  it('marks the battery percent fields', () => {
    expect(PERCENT_FIELDS).toEqual(['soe', 'soh', 'minSoe', 'maxSoe']);
  });

  it('type-checks ingest values per field', () => {
    const ok = (c: (typeof DEVICE_CATEGORIES)[number], n: string, v: unknown) =>
      ingestFieldSchema(spec(c, n)).safeParse(v).success;
    expect(ok('battery', 'minSoe', 10)).toBe(true);
    expect(ok('battery', 'minSoe', 10.5)).toBe(false);
    expect(ok('battery', 'soe', 10.5)).toBe(true);
    expect(ok('battery', 'soe', '10')).toBe(false);
    expect(ok('battery', 'soe', null)).toBe(true);
    expect(ok('inverter', 'maxChargePower', 1.5)).toBe(false);
    expect(ok('inverter', 'status', 4)).toBe(true);
    expect(ok('inverter', 'status', 'MPPT')).toBe(false);
    expect(ok('inverter', 'isOffGrid', 0)).toBe(false);
    expect(ok('evCharger', 'mode', null)).toBe(false);
    expect(ok('evCharger', 'supportsBiDirectionalCharging', null)).toBe(false);
    expect(ok('energyMeter', 'options', null)).toBe(false);
    expect(ok('boiler', 'boilerMode', null)).toBe(false);
    expect(ok('relay', 'relayCount', null)).toBe(false);
    expect(ok('relay', 'relayCount', 2)).toBe(true);
    expect(ok('relay', 'currentState', [true, false])).toBe(true);
    expect(ok('relay', 'currentState', [true, null])).toBe(false);
    expect(ok('relay', 'currentState', null)).toBe(false);
    expect(ok('relay', 'desiredState', [true, null])).toBe(true);
    expect(ok('relay', 'desiredState', [1])).toBe(false);
    for (const v of ['eco', 3, true, null]) expect(ok('boiler', 'operationMode', v)).toBe(true);
    expect(ok('boiler', 'operationMode', { a: 1 })).toBe(false);
    expect(ok('boiler', 'operationMode', [1])).toBe(false);
    expect(ok('inverter', 'gatewayId', 3)).toBe(true);
    expect(ok('inverter', 'manufacturer', 3)).toBe(false);
  });
});
