import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../support/stack.js';
import { type Harness, installation, iso, sha, startHarness } from './support/consumer-harness.js';

// access-changes.v1 on real Kafka and Redis: facts in any order give the same acl and keyViews,
// and every change of a fact or an installation keeps them in sync.

let h: Harness;
let nextId = 9000;
const newId = () => nextId++;
const now = Date.now();
const until = <T>(what: string, probe: () => Promise<T | undefined>) =>
  waitFor(what, probe, 20_000);

const fact = (key: string, event: object) =>
  h.send(h.config.topics.access, key, { occurredAt: iso(now), ...event });
const app = (appId: number, owner: { type: string; id: number }, enabled = true) =>
  fact(`app:${appId}`, { type: 'application.upserted', applicationId: appId, owner, enabled });
const key = (keyId: string, appId: number, keyHash: string, expiresAt: string | null = null) =>
  fact(`key:${keyId}`, { type: 'apiKey.created', keyId, applicationId: appId, keyHash, expiresAt });
const grant = (appId: number, inst: number, type = 'grant.added') =>
  fact(`grant:${appId}:${inst}`, { type, applicationId: appId, installationId: inst });
const member = (userId: number, inst: number, type = 'membership.added') =>
  fact(`member:${userId}:${inst}`, { type, userId, installationId: inst });
const upsertInstallation = (id: number, name: string, companyId: number | null, atMs = now) =>
  h.send(h.config.topics.installations, String(id), {
    type: 'installation.upserted',
    occurredAt: iso(atMs),
    installation: installation(id, name),
    companyId,
  });

const view = (hash: string) => h.redis.hgetall(h.keys.keyView(hash));
const acl = (inst: number) => h.redis.hgetall(h.keys.acl(inst));
const viewHas = (hash: string, inst: number, name?: string) => async () => {
  const v = await view(hash);
  const json = v[`i:${inst}`];
  if (!json) return undefined;
  return name === undefined || (JSON.parse(json) as { name: string }).name === name ? v : undefined;
};
const viewLacks = (hash: string, inst: number) => async () =>
  (await view(hash))[`i:${inst}`] ? undefined : true;

beforeAll(async () => {
  h = await startHarness('access');
});
afterAll(async () => {
  await h?.stop();
});

describe('user-owned applications', () => {
  it('grants access whatever order the facts arrive in, and follows membership and revocation', async () => {
    const [appId, userId, inst] = [newId(), newId(), newId()];
    const hash = sha(`itk_user_${appId}`);
    // Key before app, grant before app, membership before grant, installation last.
    await key(`k${appId}`, appId, hash, '2999-01-01T00:00:00Z');
    await member(userId, inst);
    await grant(appId, inst);
    await app(appId, { type: 'user', id: userId });
    await upsertInstallation(inst, 'home', null);
    const v = await until('key view', viewHas(hash, inst));
    expect(v).toMatchObject({
      app: String(appId),
      exp: String(Date.parse('2999-01-01T00:00:00Z')),
    });
    expect(JSON.parse(v[`i:${inst}`] as string)).toMatchObject({ id: inst, name: 'home' });
    expect(await acl(inst)).toEqual({ [hash]: String(Date.parse('2999-01-01T00:00:00Z')) });

    await member(userId, inst, 'membership.removed');
    await until('membership removed', viewLacks(hash, inst));
    expect(await acl(inst)).toEqual({});
    expect(await view(hash)).toMatchObject({ app: String(appId) });

    await member(userId, inst);
    await until('membership back', viewHas(hash, inst));
    await fact(`key:k${appId}`, { type: 'apiKey.revoked', keyId: `k${appId}` });
    await until('view gone', async () =>
      (await h.redis.exists(h.keys.keyView(hash))) === 0 ? true : undefined,
    );
    expect(await acl(inst)).toEqual({});
  });

  it('does not let company membership stand in for a user owner', async () => {
    const [appId, userId, inst] = [newId(), newId(), newId()];
    const hash = sha(`itk_company_member_${appId}`);
    await upsertInstallation(inst, 'shop', userId);
    await app(appId, { type: 'user', id: userId });
    await key(`k${appId}`, appId, hash);
    await grant(appId, inst);
    await h.settled();
    expect(await view(hash)).toEqual({ app: String(appId), exp: '0' });
    expect(await acl(inst)).toEqual({});
    // The same facts plus a direct membership do grant access.
    await member(userId, inst);
    await until('membership grants', viewHas(hash, inst));
  });
});

describe('company-owned applications', () => {
  it('follows the installation company, refreshes the JSON, and the application state', async () => {
    const [appId, company, inst] = [newId(), newId(), newId()];
    const hash = sha(`itk_company_${appId}`);
    const rotated = sha(`itk_company_rotated_${appId}`);
    await grant(appId, inst);
    await key(`k${appId}`, appId, hash);
    await key(`k2${appId}`, appId, rotated);
    await app(appId, { type: 'company', id: company });
    await upsertInstallation(inst, 'plant', company, now - 10_000);
    await until('key view', viewHas(hash, inst));
    await until('rotated key view', viewHas(rotated, inst));

    await upsertInstallation(inst, 'plant renamed', company, now - 9_000);
    await until('JSON refreshed', viewHas(hash, inst, 'plant renamed'));

    await app(appId, { type: 'company', id: company }, false);
    await until('disabled', async () =>
      (await h.redis.exists(h.keys.keyView(hash))) === 0 ? true : undefined,
    );
    expect(await acl(inst)).toEqual({});
    await app(appId, { type: 'company', id: company }, true);
    await until('enabled again', viewHas(hash, inst));

    await upsertInstallation(inst, 'sold', company + 1, now - 8_000);
    await until('company changed', viewLacks(hash, inst));
    expect(await acl(inst)).toEqual({});
    await upsertInstallation(inst, 'bought back', company, now - 7_000);
    await until('company back', viewHas(hash, inst, 'bought back'));

    await h.send(h.config.topics.installations, String(inst), null);
    await until('installation deleted from views', viewLacks(hash, inst));
    expect(await view(rotated)).toEqual({ app: String(appId), exp: '0' });

    await h.send(h.config.topics.access, `app:${appId}`, null);
    await until('app tombstone', async () =>
      (await h.redis.exists(h.keys.keyView(rotated))) === 0 ? true : undefined,
    );
  });

  it('dead-letters a fact under the wrong key', async () => {
    const appId = newId();
    await h.send(h.config.topics.access, 'app:1', {
      type: 'application.upserted',
      occurredAt: iso(now),
      applicationId: appId,
      owner: { type: 'user', id: 1 },
      enabled: true,
    });
    const dead = await until('dead letter', async () => {
      const all = (await h.deadLetters()).filter((m) => m.key?.toString() === 'app:1');
      return all.length > 0 ? all : undefined;
    });
    expect(dead[0]?.headers['x-reason']?.toString()).toBe('invalid_key');
  });
});
