import { describe, expect, it } from 'vitest';
import { installationSchema, serializeInstallation } from '../../src/domain/installation.js';
import { isIanaTimeZone } from '../../src/domain/schema-primitives.js';

const sampleInstallation = {
  id: 42,
  name: 'Home',
  type: 'private',
  address: 'Main St 1',
  postalCode: '12345',
  city: 'Berlin',
  country: 'DE',
  timezone: 'Europe/Berlin',
  latitude: 52.5,
  longitude: 13.4,
  altitude: null,
  creationDate: '2024-03-01T12:00:00.250+02:00',
};

describe('installation schema', () => {
  it('accepts a full record', () => {
    expect(installationSchema.safeParse(sampleInstallation).success).toBe(true);
  });

  it.each([
    ['type', 'business'],
    ['timezone', 'Mars/Olympus'],
    ['timezone', 'europe/berlin'],
    ['timezone', '+01:00'],
    ['timezone', ''],
    ['creationDate', '2024-03-01T12:00:00'],
    ['id', 0],
    ['id', 1.5],
    ['latitude', 91],
    ['longitude', -181],
    ['name', null],
  ])('rejects %s = %j', (key, value) => {
    expect(installationSchema.safeParse({ ...sampleInstallation, [key]: value }).success).toBe(
      false,
    );
  });

  it.each(['latitude', 'longitude', 'altitude', 'creationDate'])('allows %s null', (key) => {
    expect(installationSchema.safeParse({ ...sampleInstallation, [key]: null }).success).toBe(true);
  });

  it('requires all twelve keys', () => {
    const { altitude: _, ...rest } = sampleInstallation;
    expect(installationSchema.safeParse(rest).success).toBe(false);
  });
});

describe('isIanaTimeZone', () => {
  it.each(['UTC', 'Etc/UTC', 'Etc/GMT+5', 'Europe/Berlin', 'America/Argentina/Buenos_Aires'])(
    'accepts %s',
    (tz) => {
      expect(isIanaTimeZone(tz)).toBe(true);
    },
  );
  it.each(['Nowhere/City', 'europe/berlin', '+01:00', 'CEST', 'Europe/Berlin '])(
    'rejects %j',
    (tz) => {
      expect(isIanaTimeZone(tz)).toBe(false);
    },
  );
});

describe('serializeInstallation', () => {
  it('writes the twelve keys in spec order and creationDate as UTC +00:00', () => {
    const parsed = installationSchema.parse({ ...sampleInstallation, extra: 'x' });
    const json = serializeInstallation(parsed);
    expect(Object.keys(JSON.parse(json))).toEqual([
      'id',
      'name',
      'type',
      'address',
      'postalCode',
      'city',
      'country',
      'timezone',
      'latitude',
      'longitude',
      'altitude',
      'creationDate',
    ]);
    expect(JSON.parse(json).creationDate).toBe('2024-03-01T10:00:00+00:00');
    expect(JSON.parse(json).altitude).toBeNull();
  });

  it('keeps a null creationDate', () => {
    const json = serializeInstallation(
      installationSchema.parse({ ...sampleInstallation, creationDate: null }),
    );
    expect(JSON.parse(json).creationDate).toBeNull();
  });
});
