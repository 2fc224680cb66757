import type { DeviceCategory } from '../../src/domain/device-fields.js';
import type { EnergyFlowData } from '../../src/domain/energy-flow.js';

// One worked device.state example per category: the physical situation, the signs a producer
// sends for it, and the energy flow that device alone gives. They are the AsyncAPI document's
// deviceState examples; docs/events.md shows each under its situation as heading, and
// test/unit/events-doc-examples.test.ts holds the doc to these and both to the code.

/** The flow fields a worked example makes non-null; every other one is null. */
export type FlowValues = Partial<Record<Exclude<keyof EnergyFlowData, 'lastUpdated'>, number>>;

export interface WorkedExample {
  /** The AsyncAPI example's name. */
  readonly name: string;
  /** The physical situation: docs/events.md's heading of the example. */
  readonly situation: string;
  /** What the signs and units of the state say. */
  readonly signs: string;
  readonly category: DeviceCategory;
  readonly deviceId: number;
  /** A device's first state: with its category's required fields. */
  readonly state: Readonly<Record<string, unknown>>;
  readonly flow: FlowValues;
}

export const WORKED_EXAMPLE_INSTALLATION = 42;
const observedAt = '2024-03-01T10:00:00Z';

export const WORKED_EXAMPLES: readonly WorkedExample[] = [
  {
    name: 'meterImporting',
    situation: 'A meter while the house imports 1,200 W from the grid',
    signs:
      "powerAc -1200: negative is import, positive export; the flow's gridPower turns the sign (positive import).",
    category: 'energyMeter',
    deviceId: 1002,
    state: { powerAc: -1200, options: 'grid-connection' },
    flow: { gridPower: 1200, housePower: 1200 },
  },
  {
    name: 'batteryCharging',
    situation: 'A battery charging at 800 W, 55.5 % full',
    signs:
      'powerDc +800: positive is charging (discharging at 1,500 W is -1500); soe 55.5, a percentage, not 0.555.',
    category: 'battery',
    deviceId: 1001,
    state: { powerDc: 800, soe: 55.5 },
    flow: { batteryPower: 800, batterySoe: 56 },
  },
  {
    name: 'inverterFeedingAc',
    situation: 'An inverter feeding 2,900 W into the AC side from 3,000 W of PV',
    signs:
      'powerAc +2900: positive is supplied to the AC side (charging its battery from the grid at 1,000 W is -1000); powerDcPvTotal +3000, PV production.',
    category: 'inverter',
    deviceId: 1000,
    state: { powerAc: 2900, powerDcPvTotal: 3000 },
    flow: { inverterPower: 2900, solarPower: 3000 },
  },
  {
    name: 'evChargerCharging',
    situation: 'An EV charger charging a car at 7,400 W',
    signs: 'powerAc +7400: positive is power drawn to charge (consumption).',
    category: 'evCharger',
    deviceId: 1003,
    state: { powerAc: 7400, mode: 'SMART', supportsBiDirectionalCharging: false },
    flow: { evChargerPower: 7400 },
  },
  {
    name: 'boilerHeating',
    situation: 'A boiler heating water at 2,000 W',
    signs: 'powerAc +2000: positive is power drawn for heating (consumption).',
    category: 'boiler',
    deviceId: 1005,
    state: { powerAc: 2000, boilerMode: 'AUTO', operationState: 'HEATING' },
    flow: { boilerPower: 2000 },
  },
  {
    name: 'relaySwitched',
    situation: 'A two-channel relay, channel 1 on and channel 2 off',
    signs:
      'No power and no sign: currentState is what the channels are, desiredState what they were asked for (null: no request). A relay adds to no flow field.',
    category: 'relay',
    deviceId: 1004,
    state: { relayCount: 2, currentState: [true, false], desiredState: [true, null] },
    flow: {},
  },
];

/** The device.state event a producer sends for the example. */
export const workedExamplePayload = (e: WorkedExample) => ({
  type: 'device.state',
  installationId: WORKED_EXAMPLE_INSTALLATION,
  category: e.category,
  deviceId: e.deviceId,
  observedAt,
  state: e.state,
});

/** The flow values in words: `gridPower 1200, housePower 1200`. */
export const flowInWords = (flow: FlowValues): string =>
  Object.entries(flow)
    .map(([field, value]) => `${field} ${value}`)
    .join(', ');
