import { describe, expect, it } from 'vitest';
import { normalizeSunSpecStatus } from '../../src/domain/sunspec.js';

describe('normalizeSunSpecStatus', () => {
  it.each([
    [1, 'OFF'],
    [2, 'SLEEPING'],
    [3, 'STARTING'],
    [4, 'MPPT'],
    [5, 'THROTTLED'],
    [6, 'SHUTTING_DOWN'],
    [7, 'FAULT'],
    [8, 'STANDBY'],
  ])('maps %i to %s', (raw, name) => {
    expect(normalizeSunSpecStatus(raw)).toEqual({ rawValue: raw, name });
  });

  it.each([0, 9, -1, 4.5, 100, null, undefined])('maps %s to null', (raw) => {
    expect(normalizeSunSpecStatus(raw)).toBeNull();
  });
});
