import { createHash, randomInt } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { isWellFormedApiKey } from '../../src/domain/access-rule.js';
import { parseAccessMessage } from '../../src/domain/event-parse.js';
import {
  installationListSchema,
  keyGrantEvents,
  ownerSchema,
  toAccessMessages,
} from '../../tools/access/access-grants.js';
import { generateApiKey, issueKey } from '../../tools/access/api-key.js';

afterEach(() => vi.restoreAllMocks());

describe('API key generation', () => {
  it('has the form itk_ + 40 letters or digits, accepted by the domain', () => {
    for (let i = 0; i < 200; i++) {
      const key = generateApiKey();
      expect(key).toMatch(/^itk_[A-Za-z0-9]{40}$/);
      expect(isWellFormedApiKey(key)).toBe(true);
    }
  });

  it('publishes the lower-case hex SHA-256 of the whole key, never the key', () => {
    const issued = issueKey();
    expect(issued.keyHash).toBe(createHash('sha256').update(issued.apiKey).digest('hex'));
    expect(issued.keyHash).toMatch(/^[0-9a-f]{64}$/);
    expect(issued.keyId).not.toContain(issued.apiKey.slice(4));
  });

  it('draws from node:crypto, never Math.random', () => {
    const mathRandom = vi.spyOn(Math, 'random').mockImplementation(() => {
      throw new Error('Math.random must not be used for keys');
    });
    const draws: number[] = [];
    const key = generateApiKey((max) => {
      const n = randomInt(max);
      draws.push(n);
      return n;
    });
    expect(draws).toHaveLength(40);
    expect(isWellFormedApiKey(key)).toBe(true);
    expect(() => issueKey()).not.toThrow();
    expect(mathRandom).not.toHaveBeenCalled();
    // The default source is the CSPRNG itself: a constant source gives a constant key, the default does not.
    expect(generateApiKey(() => 0)).toBe(`itk_${'A'.repeat(40)}`);
    expect(new Set(Array.from({ length: 1000 }, () => generateApiKey())).size).toBe(1000);
  });

  it('uses the whole alphabet about evenly', () => {
    const counts = new Map<string, number>();
    for (let i = 0; i < 2000; i++) {
      for (const c of generateApiKey().slice(4)) counts.set(c, (counts.get(c) ?? 0) + 1);
    }
    expect(counts.size).toBe(62);
    const expected = (2000 * 40) / 62;
    for (const n of counts.values()) {
      expect(n).toBeGreaterThan(expected * 0.8);
      expect(n).toBeLessThan(expected * 1.2);
    }
  });
});

describe('issue-key arguments', () => {
  it('parses owners', () => {
    expect(ownerSchema.parse('user:5')).toEqual({ type: 'user', id: 5 });
    expect(ownerSchema.parse('company:7')).toEqual({ type: 'company', id: 7 });
    for (const bad of [
      'user:0',
      'team:1',
      'user:',
      'user:1.5',
      'user:-2',
      'user:99999999999999999',
    ]) {
      expect(ownerSchema.safeParse(bad).success, bad).toBe(false);
    }
  });

  it('parses installation lists and ranges', () => {
    expect(installationListSchema.parse('1,2,3')).toEqual([1, 2, 3]);
    expect(installationListSchema.parse('1-5')).toEqual([1, 2, 3, 4, 5]);
    expect(installationListSchema.parse('9,1-3,2')).toEqual([1, 2, 3, 9]);
    for (const bad of ['', '0', '5-1', '1,,2', '1-', 'a', '1-200000', '1.5']) {
      expect(installationListSchema.safeParse(bad).success, bad).toBe(false);
    }
  });
});

describe('issue-key events', () => {
  const base = {
    applicationId: 17,
    installations: [41, 42],
    keyId: 'key-1',
    keyHash: 'a'.repeat(64),
    nowMs: Date.UTC(2025, 0, 1),
    upsertApplication: true,
  };

  it('publishes app, memberships, grants and the key hash for a user owner, each under its fact key', () => {
    const events = keyGrantEvents({ ...base, owner: { type: 'user', id: 5 }, expiresAtMs: null });
    const messages = toAccessMessages(events);
    expect(messages.map((m) => m.key)).toEqual([
      'app:17',
      'member:5:41',
      'member:5:42',
      'grant:17:41',
      'grant:17:42',
      'key:key-1',
    ]);
    for (const m of messages) {
      const parsed = parseAccessMessage(m.value as string, m.key as string);
      if (!parsed.ok) throw new Error(`${parsed.reason}: ${parsed.detail}`);
    }
    expect(events[0]).toMatchObject({
      type: 'application.upserted',
      enabled: true,
      owner: { type: 'user', id: 5 },
    });
    expect(events.at(-1)).toMatchObject({
      type: 'apiKey.created',
      keyHash: base.keyHash,
      expiresAt: null,
    });
  });

  it('publishes no memberships for a company owner, and carries the expiry', () => {
    const expiresAtMs = base.nowMs + 86_400_000;
    const events = keyGrantEvents({ ...base, owner: { type: 'company', id: 7 }, expiresAtMs });
    expect(events.map((e) => e.type)).toEqual([
      'application.upserted',
      'grant.added',
      'grant.added',
      'apiKey.created',
    ]);
    expect(events.at(-1)).toMatchObject({ expiresAt: '2025-01-02T00:00:00.000Z' });
  });

  it('leaves the application alone unless asked, so a rotation key never re-enables it', () => {
    const events = keyGrantEvents({
      ...base,
      upsertApplication: false,
      owner: { type: 'company', id: 7 },
      expiresAtMs: null,
    });
    expect(events.map((e) => e.type)).toEqual(['grant.added', 'grant.added', 'apiKey.created']);
  });

  it('never puts the plaintext key on the topic', () => {
    const issued = issueKey();
    const events = keyGrantEvents({
      ...base,
      ...issued,
      owner: { type: 'user', id: 5 },
      expiresAtMs: null,
    });
    for (const m of toAccessMessages(events)) {
      expect(String(m.value)).not.toContain(issued.apiKey.slice(4));
      expect(String(m.key)).not.toContain(issued.apiKey.slice(4));
    }
  });
});
