import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  type AccessFacts,
  hashApiKey,
  isKeyLive,
  isWellFormedApiKey,
  mayAccess,
} from '../../src/domain/access-rule.js';

const userApp = { owner: { type: 'user' as const, id: 5 }, enabled: true };
const companyApp = { owner: { type: 'company' as const, id: 7 }, enabled: true };
const facts = (over: Partial<AccessFacts>): AccessFacts => ({
  application: userApp,
  hasGrant: true,
  ownerIsMember: true,
  installationCompanyId: 7,
  ...over,
});

describe('mayAccess', () => {
  it('lets a user-owned app read a granted installation its owner is a member of', () => {
    expect(mayAccess(facts({}))).toBe(true);
  });

  it('needs the grant', () => {
    expect(mayAccess(facts({ hasGrant: false }))).toBe(false);
    expect(mayAccess(facts({ application: companyApp, hasGrant: false }))).toBe(false);
  });

  it('needs the user owner to be a direct member; company membership does not count', () => {
    expect(mayAccess(facts({ ownerIsMember: false, installationCompanyId: 5 }))).toBe(false);
  });

  it('lets a company-owned app read granted installations of that company only', () => {
    expect(mayAccess(facts({ application: companyApp, ownerIsMember: false }))).toBe(true);
    expect(mayAccess(facts({ application: companyApp, installationCompanyId: 8 }))).toBe(false);
    expect(mayAccess(facts({ application: companyApp, installationCompanyId: null }))).toBe(false);
  });

  it('ignores membership for a company owner whose id equals a member user id', () => {
    const app = { owner: { type: 'company' as const, id: 5 }, enabled: true };
    expect(mayAccess(facts({ application: app, installationCompanyId: 7 }))).toBe(false);
  });

  it('refuses a disabled application', () => {
    expect(mayAccess(facts({ application: { ...userApp, enabled: false } }))).toBe(false);
  });
});

describe('isKeyLive', () => {
  const app = { enabled: true, deleted: false };
  const now = 1_700_000_000_000;

  it('is live when not revoked, not expired and the app is live', () => {
    expect(isKeyLive({ revoked: false, expiresAtMs: null }, app, now)).toBe(true);
    expect(isKeyLive({ revoked: false, expiresAtMs: now + 1 }, app, now)).toBe(true);
  });

  it('stops at revocation, at the expiry instant, and with a disabled, deleted or unknown app', () => {
    expect(isKeyLive({ revoked: true, expiresAtMs: null }, app, now)).toBe(false);
    expect(isKeyLive({ revoked: false, expiresAtMs: now }, app, now)).toBe(false);
    expect(isKeyLive({ revoked: false, expiresAtMs: now - 1 }, app, now)).toBe(false);
    expect(isKeyLive({ revoked: false, expiresAtMs: null }, { ...app, enabled: false }, now)).toBe(
      false,
    );
    expect(isKeyLive({ revoked: false, expiresAtMs: null }, { ...app, deleted: true }, now)).toBe(
      false,
    );
    expect(isKeyLive({ revoked: false, expiresAtMs: null }, null, now)).toBe(false);
  });

  it('treats the epoch and instants before it as instants, not as "never"', () => {
    for (const expiresAtMs of [0, -1_000, 1, Date.parse('1969-12-31T23:59:59Z')])
      expect(isKeyLive({ revoked: false, expiresAtMs }, app, now), String(expiresAtMs)).toBe(false);
    // Read at a moment before the epoch, an epoch key is still live: it is an ordinary instant.
    expect(isKeyLive({ revoked: false, expiresAtMs: 0 }, app, -1)).toBe(true);
    expect(isKeyLive({ revoked: false, expiresAtMs: 0 }, app, 0)).toBe(false);
  });
});

describe('isWellFormedApiKey', () => {
  it.each([`itk_${'a'.repeat(32)}`, `itk_${'Z9'.repeat(32)}`, `itk_${'aB3'.repeat(12)}`])(
    'accepts %s',
    (key) => {
      expect(isWellFormedApiKey(key)).toBe(true);
    },
  );

  it.each([
    `itk_${'a'.repeat(31)}`,
    `itk_${'a'.repeat(65)}`,
    `ITK_${'a'.repeat(32)}`,
    `itk-${'a'.repeat(32)}`,
    `itk_${'a'.repeat(31)}-`,
    `itk_${'a'.repeat(31)}é`,
    `itk_${'a'.repeat(32)}\n`,
    ` itk_${'a'.repeat(32)}`,
    '',
    undefined,
    42,
  ])('refuses %j', (key) => {
    expect(isWellFormedApiKey(key)).toBe(false);
  });
});

describe('hashApiKey', () => {
  it('is the lower-case hex SHA-256 of the whole key', () => {
    const key = `itk_${'a'.repeat(40)}`;
    expect(hashApiKey(key)).toBe(createHash('sha256').update(key).digest('hex'));
    expect(hashApiKey('abc')).toBe(
      'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
    );
  });
});
