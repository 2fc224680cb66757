import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isKeyLive } from '../../src/domain/access-rule.js';
import { accessFactKeys } from '../../src/read-model/access-facts.js';
import { decodeKeyExpiry } from '../../src/read-model/key-status-codec.js';
import { waitFor } from '../support/stack.js';
import { type Harness, installation, iso, sha, startHarness } from './support/consumer-harness.js';

// access-changes.v1 on real Kafka and Redis: facts in any order give the same key and
// application statuses, acl entries and application views, and every change of a fact or an
// installation keeps them in sync. A key reads an installation while its status and its
// application's status make it live (what the API checks), its application's acl entry for the
// installation is positive, and its application's view lists the installation.

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

const acl = (inst: number) => h.redis.hgetall(h.keys.acl(inst));
const keyStatus = (hash: string) => h.redis.hgetall(h.keys.keyStatus(hash));
const appStatus = (appId: number) => h.redis.hgetall(h.keys.appStatus(appId));

/** The application's acl entry for the installation: true granted, false refused, null none. */
async function granted(appId: number, inst: number): Promise<boolean | null> {
  const entry = await h.redis.hget(h.keys.acl(inst), String(appId));
  return entry === null ? null : Number(entry) > 0;
}

/** The installation as the application's view lists it (getInstallations): none or one. */
async function listed(appId: number, inst: number): Promise<{ id: number; name: string }[]> {
  const members = await h.redis.zrange(
    h.keys.appView(appId),
    String(inst),
    String(inst),
    'BYSCORE',
  );
  return members.map((json) => JSON.parse(json) as { id: number; name: string });
}

/** The key's application while the key works (statuses as the API reads them), else null. */
async function liveApp(hash: string): Promise<number | null> {
  const k = await keyStatus(hash);
  const expiresAtMs = decodeKeyExpiry(k.exp ?? null, k.v ?? null);
  if (k.app === undefined || expiresAtMs === undefined) return null;
  const a = await appStatus(Number(k.app));
  const live = isKeyLive(
    { revoked: k.revoked !== '0', expiresAtMs },
    a.enabled === undefined ? null : { enabled: a.enabled === '1', deleted: a.deleted === '1' },
    Date.now(),
  );
  return live ? Number(k.app) : null;
}

/** Probe: the key reads the installation (named `name`, if given); its JSON as listed. */
const reads = (hash: string, inst: number, name?: string) => async () => {
  const appId = await liveApp(hash);
  if (appId === null || (await granted(appId, inst)) !== true) return undefined;
  const [json] = await listed(appId, inst);
  return json && (name === undefined || json.name === name) ? json : undefined;
};

/** Probe: the application's entries for the installation say it may not read it. */
const refused = (appId: number, inst: number) => async () =>
  (await granted(appId, inst)) === false && (await listed(appId, inst)).length === 0
    ? true
    : undefined;

/** Probe: the key's status or its application's refuses the key. */
const keyRefused = (hash: string) => async () =>
  (await liveApp(hash)) === null ? true : undefined;

/** Every message sent so far is handled and every entry it may change is derived. */
async function accessSettled(appIds: readonly number[]): Promise<void> {
  await h.settled();
  const k = accessFactKeys(h.keys);
  await until('access entries derived', async () => {
    for (const appId of appIds) {
      if ((await h.redis.zcard(k.appPending(appId))) > 0) return undefined;
      if ((await h.redis.exists(k.appSweep(appId))) > 0) return undefined;
    }
    return true;
  });
}

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
    const expiresAt = Date.parse('2999-01-01T00:00:00Z');
    // Key before app, grant before app, membership before grant, installation last.
    await key(`k${appId}`, appId, hash, '2999-01-01T00:00:00Z');
    await member(userId, inst);
    await grant(appId, inst);
    await app(appId, { type: 'user', id: userId });
    await upsertInstallation(inst, 'home', null);
    const json = await until('the key reads the installation', reads(hash, inst));
    expect(json).toMatchObject({ id: inst, name: 'home' });
    expect(await keyStatus(hash)).toEqual({
      app: String(appId),
      exp: String(expiresAt),
      revoked: '0',
      v: '2',
    });
    expect(await appStatus(appId)).toEqual({
      ownerType: 'user',
      ownerId: String(userId),
      enabled: '1',
      deleted: '0',
    });
    expect(Object.keys(await acl(inst))).toEqual([String(appId)]);
    expect(await h.redis.zcard(h.keys.appView(appId))).toBe(1);

    await member(userId, inst, 'membership.removed');
    await until('membership removed', refused(appId, inst));
    // The key itself still works: it reads nothing.
    expect(await liveApp(hash)).toBe(appId);
    expect(await h.redis.zcard(h.keys.appView(appId))).toBe(0);

    await member(userId, inst);
    await until('membership back', reads(hash, inst));
    await fact(`key:k${appId}`, { type: 'apiKey.revoked', keyId: `k${appId}` });
    await until('key revoked', keyRefused(hash));
    expect(await keyStatus(hash)).toEqual({
      app: String(appId),
      exp: String(expiresAt),
      revoked: '1',
      v: '2',
    });
  });

  it('does not let company membership stand in for a user owner', async () => {
    const [appId, userId, inst] = [newId(), newId(), newId()];
    const hash = sha(`itk_company_member_${appId}`);
    await upsertInstallation(inst, 'shop', userId);
    await app(appId, { type: 'user', id: userId });
    await key(`k${appId}`, appId, hash);
    await grant(appId, inst);
    await accessSettled([appId]);
    expect(await keyStatus(hash)).toEqual({ app: String(appId), exp: '', revoked: '0', v: '2' });
    expect(await liveApp(hash)).toBe(appId);
    expect(await granted(appId, inst)).toBe(false);
    expect(await h.redis.zcard(h.keys.appView(appId))).toBe(0);
    // The same facts plus a direct membership do grant access.
    await member(userId, inst);
    await until('membership grants', reads(hash, inst));
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
    await until('the key reads the installation', reads(hash, inst));
    await until('the second key reads it', reads(rotated, inst));

    await upsertInstallation(inst, 'plant renamed', company, now - 9_000);
    await until('JSON refreshed', reads(hash, inst, 'plant renamed'));
    expect(await h.redis.zcard(h.keys.appView(appId))).toBe(1);

    await app(appId, { type: 'company', id: company }, false);
    await until('disabled', keyRefused(hash));
    expect(await liveApp(rotated)).toBeNull();
    expect(await appStatus(appId)).toMatchObject({ enabled: '0', deleted: '0' });
    await app(appId, { type: 'company', id: company }, true);
    await until('enabled again', reads(hash, inst, 'plant renamed'));

    await upsertInstallation(inst, 'sold', company + 1, now - 8_000);
    await until('company changed', refused(appId, inst));
    expect(await liveApp(hash)).toBe(appId);
    await upsertInstallation(inst, 'bought back', company, now - 7_000);
    await until('company back', reads(hash, inst, 'bought back'));

    await h.send(h.config.topics.installations, String(inst), null);
    await until('installation deleted from the view', refused(appId, inst));
    expect(await h.redis.zcard(h.keys.appView(appId))).toBe(0);
    expect(await keyStatus(rotated)).toEqual({ app: String(appId), exp: '', revoked: '0', v: '2' });
    expect(await liveApp(rotated)).toBe(appId);

    await h.send(h.config.topics.access, `app:${appId}`, null);
    await until('app tombstone', keyRefused(rotated));
    expect(await liveApp(hash)).toBeNull();
    expect(await appStatus(appId)).toMatchObject({ deleted: '1' });
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

describe('key expiry', () => {
  it('stores every instant as an instant: the epoch, before it and the millisecond after expire', async () => {
    const appId = newId();
    await app(appId, { type: 'user', id: newId() });
    const expiries: Array<[string, string | null, string, boolean]> = [
      ['epoch', '1970-01-01T00:00:00Z', '0', false],
      ['before the epoch', '1969-12-31T23:59:59Z', '-1000', false],
      ['the millisecond after', '1970-01-01T00:00:00.001Z', '1', false],
      ['never', null, '', true],
      ['future', '2999-01-01T00:00:00Z', String(Date.parse('2999-01-01T00:00:00Z')), true],
    ];
    for (const [name, expiresAt] of expiries)
      await key(`k${appId}-${name}`, appId, sha(name + appId), expiresAt);
    await accessSettled([appId]);
    for (const [name, , exp, live] of expiries) {
      const hash = sha(name + appId);
      expect(await keyStatus(hash), name).toEqual({
        app: String(appId),
        exp,
        revoked: '0',
        v: '2',
      });
      expect(await liveApp(hash), name).toBe(live ? appId : null);
    }
  });

  it('reads a status written before format 2 as meant (exp 0: never) until its fact is applied again', async () => {
    // What a consumer before format 2 left: `exp` 0 and no `v`, for a key without expiry and
    // for one expiring at the epoch alike. Neither is refused until the fact is applied again,
    // as a rebuild does (it empties the read model and replays access-changes.v1).
    const appId = newId();
    await app(appId, { type: 'user', id: newId() });
    const never = sha(`itk_legacy_never_${appId}`);
    const epoch = sha(`itk_legacy_epoch_${appId}`);
    await accessSettled([appId]);
    for (const hash of [never, epoch])
      await h.redis.hset(h.keys.keyStatus(hash), { app: String(appId), exp: '0', revoked: '0' });
    expect(await liveApp(never)).toBe(appId);
    expect(await liveApp(epoch)).toBe(appId);

    await key(`k${appId}-never`, appId, never, null);
    await key(`k${appId}-epoch`, appId, epoch, '1970-01-01T00:00:00Z');
    await until('the epoch key refused once its fact is applied again', keyRefused(epoch));
    expect(await keyStatus(epoch)).toEqual({ app: String(appId), exp: '0', revoked: '0', v: '2' });
    await accessSettled([appId]);
    expect(await keyStatus(never)).toEqual({ app: String(appId), exp: '', revoked: '0', v: '2' });
    expect(await liveApp(never)).toBe(appId);
  });
});
