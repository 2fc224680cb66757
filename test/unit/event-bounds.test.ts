import { describe, expect, it } from 'vitest';
import { DEVICE_CATEGORIES, INGEST_FIELDS } from '../../src/domain/device-fields.js';
import {
  parseAccessMessage,
  parseInstallationsMessage,
  parseTelemetryMessage,
} from '../../src/domain/event-parse.js';
import { MAX_MESSAGE_BYTES, MAX_STRING_LENGTH } from '../../src/domain/limits.js';

// docs/events.md "Limits": a value over its topic's maximum size, or a string (a date-time too)
// over its field's maximum length, is rejected as `exceeds_limits`; and a missing field says it
// is missing.

const at = '2024-03-01T10:00:00Z';
const json = (v: unknown) => JSON.stringify(v);
const installation = {
  id: 42,
  name: 'Home',
  type: 'private',
  address: 'Main St 1',
  postalCode: '12345',
  city: 'Berlin',
  country: 'DE',
  timezone: 'Europe/Berlin',
  latitude: null,
  longitude: null,
  altitude: null,
  creationDate: null,
};
const upsert = (fields: object) =>
  json({
    type: 'installation.upserted',
    occurredAt: at,
    installation: { ...installation, ...fields },
    companyId: null,
  });
const state = (category: string, s: object) =>
  json({
    type: 'device.state',
    installationId: 42,
    category,
    deviceId: 1,
    observedAt: at,
    state: s,
  });
const rejection = (r: { ok: boolean; reason?: string; detail?: string }) =>
  r.ok ? 'ok' : `${r.reason}: ${r.detail}`;

describe('bounds on valid input', () => {
  it('accepts every string field at its maximum length and rejects one character more', () => {
    for (const category of DEVICE_CATEGORIES) {
      for (const spec of INGEST_FIELDS[category]) {
        if (spec.kind !== 'string' && spec.kind !== 'any') continue;
        const longest = 'x'.repeat(spec.maxLength);
        const ok = parseTelemetryMessage(state(category, { [spec.name]: longest }));
        expect(rejection(ok), `${category}.${spec.name}`).toBe('ok');
        const over = parseTelemetryMessage(state(category, { [spec.name]: `${longest}x` }));
        expect(rejection(over), `${category}.${spec.name}`).toMatch(
          new RegExp(`^exceeds_limits: state\\.${spec.name}: `),
        );
      }
    }
    const name = 'n'.repeat(MAX_STRING_LENGTH.name);
    expect(rejection(parseInstallationsMessage(upsert({ name })))).toBe('ok');
    expect(rejection(parseInstallationsMessage(upsert({ name: `${name}n` })))).toMatch(
      /^exceeds_limits: installation\.name: /,
    );
    const address = `${'a'.repeat(MAX_STRING_LENGTH.text)}a`;
    expect(rejection(parseInstallationsMessage(upsert({ address })))).toMatch(/^exceeds_limits/);
  });

  it('accepts every date-time at its maximum length and rejects one character more', () => {
    // 35 characters: nanoseconds and an offset. The pattern alone allows any number of digits.
    const longest = '2024-03-01T10:00:00.123456789+01:00';
    expect(longest).toHaveLength(MAX_STRING_LENGTH.dateTime);
    const over = longest.replace('789', '7890');
    const removal = (occurredAt: string) =>
      json({
        type: 'device.removed',
        installationId: 42,
        category: 'battery',
        deviceId: 1,
        occurredAt,
      });
    const observed = (observedAt: string) =>
      json({ ...JSON.parse(state('battery', { soe: 5 })), observedAt });
    const key = (expiresAt: string) =>
      json({
        type: 'apiKey.created',
        occurredAt: at,
        keyId: 'k1',
        applicationId: 17,
        keyHash: 'a'.repeat(64),
        expiresAt,
      });
    const cases: [string, (at: string) => { ok: boolean; reason?: string; detail?: string }][] = [
      ['observedAt', (v) => parseTelemetryMessage(observed(v))],
      ['occurredAt', (v) => parseTelemetryMessage(removal(v))],
      ['installation.creationDate', (v) => parseInstallationsMessage(upsert({ creationDate: v }))],
      ['expiresAt', (v) => parseAccessMessage(key(v), 'key:k1')],
    ];
    for (const [field, parse] of cases) {
      expect(rejection(parse(longest)), field).toBe('ok');
      expect(rejection(parse(over)), field).toMatch(new RegExp(`^exceeds_limits: ${field}: `));
      // However long, and whatever it holds: never read as a date.
      expect(rejection(parse(`${longest.slice(0, 20)}${'1'.repeat(30_000)}Z`)), field).toMatch(
        /^exceeds_limits/,
      );
    }
  });

  it("rejects a value over its topic's maximum size before parsing it", () => {
    // Unknown keys are dropped, but they still count: the bound is on the bytes read.
    const padded = (bytes: number) => state('battery', { soe: 5, vendorX: 'p'.repeat(bytes) });
    const fits = padded(MAX_MESSAGE_BYTES.telemetry - 200);
    expect(Buffer.byteLength(fits)).toBeLessThanOrEqual(MAX_MESSAGE_BYTES.telemetry);
    expect(rejection(parseTelemetryMessage(fits))).toBe('ok');
    const over = parseTelemetryMessage(Buffer.from(padded(MAX_MESSAGE_BYTES.telemetry)));
    expect(rejection(over)).toMatch(
      /^exceeds_limits: value is \d+ bytes, over this topic's maximum of 65536$/,
    );
    // Not JSON at all, but too large first: nothing of it is read.
    const junk = '{'.repeat(MAX_MESSAGE_BYTES.installations + 1);
    expect(rejection(parseInstallationsMessage(junk))).toMatch(/^exceeds_limits/);
    expect(rejection(parseAccessMessage(junk, 'app:1'))).toMatch(/^exceeds_limits/);
  });

  it('says a required field is missing, not that it has the wrong type', () => {
    const r = parseTelemetryMessage(
      json({ type: 'device.removed', category: 'battery', deviceId: 1, occurredAt: at }),
    );
    expect(rejection(r)).toBe('schema_violation: installationId: required field is missing');
    const noOwner = parseAccessMessage(
      json({ type: 'application.upserted', occurredAt: at, applicationId: 17, enabled: true }),
      'app:17',
    );
    expect(rejection(noOwner)).toBe('schema_violation: owner: required field is missing');
    const { city: _, ...withoutCity } = installation;
    const noCity = parseInstallationsMessage(
      json({
        type: 'installation.upserted',
        occurredAt: at,
        installation: withoutCity,
        companyId: 1,
      }),
    );
    expect(rejection(noCity)).toBe(
      'schema_violation: installation.city: required field is missing',
    );
    // A wrong type still reads as one.
    expect(rejection(parseTelemetryMessage(state('battery', { soe: '5' })))).toBe(
      'schema_violation: state.soe: Invalid input: expected number, received string',
    );
  });
});
