import { describe, expect, it } from 'vitest';
import { REJECT_REASONS } from '../../src/domain/dead-letter.js';
import {
  parseAccessMessage,
  parseInstallationsMessage,
  parseTelemetryMessage,
} from '../../src/domain/event-parse.js';
import { expectedMessageKey } from '../../src/domain/events.js';

const at = '2024-03-01T10:00:00Z';
const installation = {
  id: 42,
  name: 'Home',
  type: 'commercial',
  address: 'Main St 1',
  postalCode: '12345',
  city: 'Berlin',
  country: 'DE',
  timezone: 'Europe/Berlin',
  latitude: null,
  longitude: null,
  altitude: 34,
  creationDate: null,
};
const json = (v: unknown) => JSON.stringify(v);
const reasonOf = (r: { ok: boolean; reason?: string }) => (r.ok ? 'ok' : r.reason);

describe('parseInstallationsMessage', () => {
  it('parses an upsert and reports unknown installation keys it dropped', () => {
    const r = parseInstallationsMessage(
      json({
        type: 'installation.upserted',
        occurredAt: at,
        installation: { ...installation, secret: 1 },
        companyId: 7,
      }),
    );
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.event).toEqual({
      type: 'installation.upserted',
      occurredAt: at,
      installation,
      companyId: 7,
    });
    expect(r.droppedKeys).toEqual(['secret']);
  });

  it('accepts a null companyId but not a missing one', () => {
    const base = { type: 'installation.upserted', occurredAt: at, installation };
    expect(parseInstallationsMessage(json({ ...base, companyId: null })).ok).toBe(true);
    expect(reasonOf(parseInstallationsMessage(json(base)))).toBe('schema_violation');
  });

  it('parses a delete, from bytes too', () => {
    const r = parseInstallationsMessage(
      new TextEncoder().encode(
        json({ type: 'installation.deleted', occurredAt: at, installationId: 42 }),
      ),
    );
    expect(r.ok && r.event).toEqual({
      type: 'installation.deleted',
      occurredAt: at,
      installationId: 42,
    });
  });

  it('turns a tombstone into a delete of the installation named by the key', () => {
    const r = parseInstallationsMessage(null, '42');
    expect(r.ok && r.event).toEqual({
      type: 'installation.deleted',
      occurredAt: null,
      installationId: 42,
    });
    expect(reasonOf(parseInstallationsMessage(null, 'abc'))).toBe('invalid_key');
    expect(reasonOf(parseInstallationsMessage(null, '042'))).toBe('invalid_key');
    expect(reasonOf(parseInstallationsMessage(null, null))).toBe('invalid_key');
    expect(reasonOf(parseInstallationsMessage(null, '99999999999999999'))).toBe('invalid_key');
  });

  it('never quotes an invalid JSON value in the detail, which may hold a secret', () => {
    const value = '{"apiKey":"itk_secretsecretsecretsecretsecretsecret" oops';
    const result = parseInstallationsMessage(value);
    expect(result).toEqual({
      ok: false,
      reason: 'invalid_json',
      detail: `value is not valid JSON (${Buffer.byteLength(value)} bytes)`,
    });
  });

  it('rejects bad bytes, non-objects, unknown types and schema violations with a reason', () => {
    expect(reasonOf(parseInstallationsMessage('{'))).toBe('invalid_json');
    expect(reasonOf(parseInstallationsMessage(new Uint8Array([0xff, 0xfe])))).toBe('invalid_json');
    expect(reasonOf(parseInstallationsMessage('[1]'))).toBe('invalid_json');
    expect(reasonOf(parseInstallationsMessage('null'))).toBe('invalid_json');
    expect(reasonOf(parseInstallationsMessage(json({ type: 'device.state' })))).toBe(
      'unknown_event_type',
    );
    expect(reasonOf(parseInstallationsMessage(json({})))).toBe('unknown_event_type');
    const bad = parseInstallationsMessage(
      json({
        type: 'installation.upserted',
        occurredAt: at,
        installation: { ...installation, timezone: 'Mars/Base' },
        companyId: 7,
      }),
    );
    expect(bad.ok).toBe(false);
    if (!bad.ok) {
      expect(bad.reason).toBe('schema_violation');
      expect(bad.detail).toContain('installation.timezone');
    }
  });

  it('rejects timestamps without offset and non-positive or unsafe ids', () => {
    const del = (o: object) =>
      reasonOf(
        parseInstallationsMessage(
          json({ type: 'installation.deleted', occurredAt: at, installationId: 1, ...o }),
        ),
      );
    expect(del({ occurredAt: '2024-03-01T10:00:00' })).toBe('schema_violation');
    expect(del({ installationId: 0 })).toBe('schema_violation');
    expect(del({ installationId: -3 })).toBe('schema_violation');
    expect(del({ installationId: 2 ** 53 })).toBe('schema_violation');
    expect(del({ installationId: '1' })).toBe('schema_violation');
    expect(del({ occurredAt: '2024-03-01T12:00:00+02:00' })).toBe('ok');
  });

  it('only uses reasons from the documented list', () => {
    const reasons = [
      parseInstallationsMessage('{'),
      parseInstallationsMessage(json({ type: 'x' })),
      parseInstallationsMessage(json({ type: 'installation.deleted' })),
      parseInstallationsMessage(null, 'x'),
      parseTelemetryMessage(null),
    ].map(reasonOf);
    for (const r of reasons) expect(REJECT_REASONS).toContain(r);
  });
});

describe('parseTelemetryMessage', () => {
  const state = (category: string, s: object) =>
    json({
      type: 'device.state',
      installationId: 42,
      category,
      deviceId: 1001,
      observedAt: at,
      state: s,
    });

  it('keeps known fields, drops unknown and projection-owned keys and reports them', () => {
    const r = parseTelemetryMessage(
      state('battery', {
        manufacturer: 'BYD ',
        soe: 55.5,
        powerDc: -1200,
        vendorBlob: { x: 1 },
        id: 'whatever',
        installationId: 7,
        firstSeenDate: 'nonsense',
        lastSeenDate: null,
      }),
    );
    expect(r.ok).toBe(true);
    if (!r.ok || r.event.type !== 'device.state') return;
    expect(r.event).toEqual({
      type: 'device.state',
      installationId: 42,
      category: 'battery',
      deviceId: 1001,
      observedAt: at,
      state: { manufacturer: 'BYD ', soe: 55.5, powerDc: -1200 },
    });
    expect([...r.droppedKeys].sort()).toEqual(
      ['firstSeenDate', 'id', 'installationId', 'lastSeenDate', 'vendorBlob'].sort(),
    );
  });

  it('validates state per category: a field of another category is dropped, not typed', () => {
    const r = parseTelemetryMessage(state('relay', { soe: 'not a number', relayCount: 2 }));
    expect(r.ok && r.event.type === 'device.state' && r.event.state).toEqual({ relayCount: 2 });
    expect(r.ok && r.droppedKeys).toEqual(['soe']);
  });

  it('rejects a known field of the wrong type', () => {
    const r = parseTelemetryMessage(state('battery', { soe: '55' }));
    expect(reasonOf(r)).toBe('schema_violation');
    expect(!r.ok && r.detail).toContain('state.soe');
    expect(reasonOf(parseTelemetryMessage(state('evCharger', { mode: null })))).toBe(
      'schema_violation',
    );
    expect(reasonOf(parseTelemetryMessage(state('inverter', { status: 'MPPT' })))).toBe(
      'schema_violation',
    );
  });

  it('keeps an explicit null and accepts an empty state', () => {
    const r = parseTelemetryMessage(state('battery', { soe: null }));
    expect(r.ok && r.event.type === 'device.state' && r.event.state).toEqual({ soe: null });
    expect(parseTelemetryMessage(state('battery', {})).ok).toBe(true);
  });

  it('does not let a __proto__ key through', () => {
    const r = parseTelemetryMessage(
      `{"type":"device.state","installationId":1,"category":"battery","deviceId":2,"observedAt":"${at}","state":{"__proto__":{"soe":1},"soh":3}}`,
    );
    expect(r.ok && r.event.type === 'device.state' && r.event.state).toEqual({ soh: 3 });
    expect(r.ok && r.droppedKeys).toEqual(['__proto__']);
  });

  it('rejects an unknown category, a missing state and a non-object state', () => {
    expect(reasonOf(parseTelemetryMessage(state('heatPump', {})))).toBe('schema_violation');
    const noState = json({
      type: 'device.state',
      installationId: 1,
      category: 'battery',
      deviceId: 2,
      observedAt: at,
    });
    expect(reasonOf(parseTelemetryMessage(noState))).toBe('schema_violation');
    expect(reasonOf(parseTelemetryMessage(state('battery', [1] as unknown as object)))).toBe(
      'schema_violation',
    );
  });

  it('parses device.removed', () => {
    const msg = {
      type: 'device.removed',
      installationId: 42,
      category: 'relay',
      deviceId: 9,
      occurredAt: at,
    };
    const r = parseTelemetryMessage(json(msg));
    expect(r.ok && r.event).toEqual(msg);
    expect(reasonOf(parseTelemetryMessage(json({ ...msg, category: 'x' })))).toBe(
      'schema_violation',
    );
  });

  it('rejects tombstones and other topics’ events', () => {
    expect(reasonOf(parseTelemetryMessage(null))).toBe('unexpected_tombstone');
    expect(reasonOf(parseTelemetryMessage(json({ type: 'grant.added' })))).toBe(
      'unknown_event_type',
    );
  });
});

describe('parseAccessMessage', () => {
  const hash = 'a'.repeat(64);
  const events = [
    {
      type: 'application.upserted',
      occurredAt: at,
      applicationId: 17,
      owner: { type: 'user', id: 5 },
      enabled: true,
    },
    {
      type: 'application.upserted',
      occurredAt: at,
      applicationId: 17,
      owner: { type: 'company', id: 7 },
      enabled: false,
    },
    { type: 'application.deleted', occurredAt: at, applicationId: 17 },
    {
      type: 'apiKey.created',
      occurredAt: at,
      keyId: 'k1',
      applicationId: 17,
      keyHash: hash,
      expiresAt: null,
    },
    {
      type: 'apiKey.created',
      occurredAt: at,
      keyId: 'k1',
      applicationId: 17,
      keyHash: hash,
      expiresAt: at,
    },
    { type: 'apiKey.revoked', occurredAt: at, keyId: 'k1' },
    { type: 'grant.added', occurredAt: at, applicationId: 17, installationId: 42 },
    { type: 'grant.removed', occurredAt: at, applicationId: 17, installationId: 42 },
    { type: 'membership.added', occurredAt: at, userId: 5, installationId: 42 },
    { type: 'membership.removed', occurredAt: at, userId: 5, installationId: 42 },
  ];

  it.each(events)('parses $type', (event) => {
    const r = parseAccessMessage(json(event));
    expect(r.ok && r.event).toEqual(event);
  });

  it.each([
    [{ keyHash: 'A'.repeat(64) }],
    [{ keyHash: 'a'.repeat(63) }],
    [{ keyHash: 'g'.repeat(64) }],
    [{ keyId: '' }],
    [{ keyId: 5 }],
    [{ expiresAt: '2024-03-01T10:00:00' }],
    [{ applicationId: 0 }],
  ])('rejects apiKey.created with %j', (over) => {
    expect(reasonOf(parseAccessMessage(json({ ...events[3], ...over })))).toBe('schema_violation');
  });

  it('rejects an unknown owner type', () => {
    const e = { ...events[0], owner: { type: 'team', id: 5 } };
    expect(reasonOf(parseAccessMessage(json(e)))).toBe('schema_violation');
  });

  it('maps tombstones to the removal of the fact the key names', () => {
    const ev = (key: string) => {
      const r = parseAccessMessage(null, key);
      return r.ok ? r.event : r.reason;
    };
    expect(ev('app:17')).toEqual({
      type: 'application.deleted',
      occurredAt: null,
      applicationId: 17,
    });
    expect(ev('key:k:1')).toEqual({ type: 'apiKey.revoked', occurredAt: null, keyId: 'k:1' });
    expect(ev('grant:17:42')).toEqual({
      type: 'grant.removed',
      occurredAt: null,
      applicationId: 17,
      installationId: 42,
    });
    expect(ev('member:5:42')).toEqual({
      type: 'membership.removed',
      occurredAt: null,
      userId: 5,
      installationId: 42,
    });
    for (const bad of [
      'app',
      'app:',
      'app:x',
      'app:1:2',
      'grant:17',
      'member:5:x',
      'key:',
      'foo:1',
      '',
    ]) {
      expect(ev(bad)).toBe('invalid_key');
    }
    expect(reasonOf(parseAccessMessage(null))).toBe('invalid_key');
  });

  it('names the key a producer should use for each event', () => {
    const keys = events.map((e) => {
      const r = parseAccessMessage(json(e));
      return r.ok ? expectedMessageKey(r.event) : null;
    });
    expect(keys).toEqual([
      'app:17',
      'app:17',
      'app:17',
      'key:k1',
      'key:k1',
      'key:k1',
      'grant:17:42',
      'grant:17:42',
      'member:5:42',
      'member:5:42',
    ]);
  });
});
