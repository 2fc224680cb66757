import type { EnergyFlowData } from './energy-flow.js';

// How computeEnergyFlow (energy-flow.ts) derives each flow field from the devices' fields, in
// words a producer can check its own data with. Written once: the AsyncAPI telemetry channel's
// description is built from it, and docs/events.md's derivation table is tested to hold these rows.

type FlowField = Exclude<keyof EnergyFlowData, 'lastUpdated'>;

export const FLOW_DERIVATION: ReadonlyArray<{
  readonly fields: readonly FlowField[];
  readonly from: string;
}> = [
  { fields: ['inverterPower'], from: "sum of the inverters' `powerAc`" },
  {
    fields: ['solarPower'],
    from: 'sum over inverters of `powerDcPvTotal`, or where that is null of the non-null `powerDcPv1..6`',
  },
  { fields: ['batteryPower'], from: "sum of the batteries' `powerDc` (positive charging)" },
  {
    fields: ['batterySoe'],
    from: "mean of the batteries' `soe` weighted by `ratedEnergy` (a plain mean if one lacks a positive `ratedEnergy`)",
  },
  {
    fields: ['gridPower'],
    from: "**minus** the sum of the meters' `powerAc`: positive import, the opposite of the meter",
  },
  { fields: ['evChargerPower', 'boilerPower'], from: 'sums of their `powerAc`' },
  {
    fields: ['housePower'],
    from: '(`inverterPower` or 0) + `gridPower` − (`evChargerPower` or 0) − (`boilerPower` or 0), floored at 0; null when `gridPower` is null',
  },
];

/** What holds for every field: over online devices only, rounded, null without a reading. */
export const FLOW_DERIVATION_RULE =
  "Over the installation's online devices; every number is rounded to a whole number; a sum over no reporting device is `null`.";

const fieldList = (fields: readonly FlowField[]) => fields.map((f) => `\`${f}\``).join(', ');

/** The rows of docs/events.md's derivation table, `| flow field | from |`. */
export const flowDerivationTableRows = (): string[] =>
  FLOW_DERIVATION.map((row) => `| ${fieldList(row.fields)} | ${row.from} |`);

/** The derivation as a Markdown list (the AsyncAPI description's). */
export const flowDerivationList = (): string =>
  FLOW_DERIVATION.map((row) => `- ${fieldList(row.fields)}: ${row.from}`).join('\n');
