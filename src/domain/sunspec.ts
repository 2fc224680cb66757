// SunSpec inverter operating state (model 101-103 `St`), normalized for the API.

export interface SunSpecStatus {
  readonly rawValue: number;
  readonly name: string;
}

export const SUNSPEC_STATUS_NAMES = [
  'OFF',
  'SLEEPING',
  'STARTING',
  'MPPT',
  'THROTTLED',
  'SHUTTING_DOWN',
  'FAULT',
  'STANDBY',
] as const;

const NAMES: Readonly<Record<number, (typeof SUNSPEC_STATUS_NAMES)[number]>> = {
  1: 'OFF',
  2: 'SLEEPING',
  3: 'STARTING',
  4: 'MPPT',
  5: 'THROTTLED',
  6: 'SHUTTING_DOWN',
  7: 'FAULT',
  8: 'STANDBY',
};

/** The normalized status of a SunSpec operating-state integer; null when missing or unknown. */
export function normalizeSunSpecStatus(value: number | null | undefined): SunSpecStatus | null {
  if (value === null || value === undefined || !Object.hasOwn(NAMES, value)) return null;
  const name = NAMES[value];
  return name === undefined ? null : { rawValue: value, name };
}
