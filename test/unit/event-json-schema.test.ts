import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { eventJsonSchemas } from '../../src/domain/events.js';

const at = '2024-03-01T10:00:00+01:00';
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats.default(ajv);
const schemas = eventJsonSchemas();
const check = (topic: string, value: unknown) => {
  const schema = schemas[topic];
  if (!schema) throw new Error(`no schema for ${topic}`);
  return ajv.validate(schema, value);
};

describe('producer JSON Schemas', () => {
  it('covers the three input topics', () => {
    expect(Object.keys(schemas).sort()).toEqual(
      ['access-changes.v1', 'device-telemetry.v1', 'installations.v1'].sort(),
    );
  });

  it('accepts valid events and rejects wrong types, as the consumers do', () => {
    const state = {
      type: 'device.state',
      installationId: 1,
      category: 'battery',
      deviceId: 2,
      observedAt: at,
    };
    expect(check('device-telemetry.v1', { ...state, state: { soe: 5, vendorX: 1 } })).toBe(true);
    expect(check('device-telemetry.v1', { ...state, state: { soe: '5' } })).toBe(false);
    expect(
      check('device-telemetry.v1', { ...state, observedAt: '2024-03-01T10:00:00', state: {} }),
    ).toBe(false);
    expect(
      check('device-telemetry.v1', { ...state, category: 'relay', state: { relayCount: 1.5 } }),
    ).toBe(false);
    expect(
      check('access-changes.v1', { type: 'apiKey.revoked', occurredAt: at, keyId: 'k1' }),
    ).toBe(true);
    expect(
      check('access-changes.v1', {
        type: 'grant.added',
        occurredAt: at,
        applicationId: 0,
        installationId: 1,
      }),
    ).toBe(false);
    expect(
      check('installations.v1', {
        type: 'installation.deleted',
        occurredAt: at,
        installationId: 4,
      }),
    ).toBe(true);
  });

  it('matches the files written to docs/schemas', () => {
    for (const [topic, schema] of Object.entries(schemas)) {
      const url = new URL(`../../docs/schemas/${topic}.schema.json`, import.meta.url);
      expect(JSON.parse(readFileSync(url, 'utf8'))).toEqual(schema);
    }
  });
});
