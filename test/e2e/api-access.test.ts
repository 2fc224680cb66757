import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/domain/access-rule.js';
import { createKeys } from '../../src/read-model/keys.js';
import { installation, newApiKey } from '../../tools/seed/records.js';
import { recordFigures } from '../support/figures.js';
import { testRedis, waitFor } from '../support/stack.js';
import { type E2eStack, msUntil, startE2eStack } from './support/e2e-stack.js';
import {
  apiKeyCreated,
  apiKeyRevoked,
  applicationDeleted,
  applicationUpserted,
  grant,
  installationDeleted,
  installationUpserted,
  type Keyed,
  membership,
} from './support/events.js';

// Access facts produced to Kafka, read back over HTTP; changes must reach the API within the
// documented bound (docs/api.md: 1 s from produce).
const BOUND_MS = 1_000;
const UNAUTHORIZED = { valid: false, error: 'UNAUTHORIZED' };

describe('e2e: access changes through Kafka to the API', () => {
  let stack: E2eStack;
  const userKey = newApiKey();
  const rotatedKey = newApiKey();
  const companyKey = newApiKey();
  const figures: Record<string, number> = {};
  const access = (k: Keyed) => stack.produce('access', k.key, k.event);
  const ids = (body: { installations: Array<{ id: number }> }) =>
    body.installations.map((i) => i.id);

  beforeAll(async () => {
    stack = await startE2eStack();
    await stack.produce('installations', ...spread(installationUpserted(installation(501), 7)));
    await stack.produce('installations', ...spread(installationUpserted(installation(502), 7)));
    for (const k of [
      applicationUpserted(17, { type: 'user', id: 5 }),
      apiKeyCreated('user-key', 17, userKey),
      apiKeyCreated('rotated-key', 17, rotatedKey),
      grant(true, 17, 501),
      grant(true, 17, 502),
      membership(true, 5, 501),
      applicationUpserted(18, { type: 'company', id: 7 }),
      apiKeyCreated('company-key', 18, companyKey),
      grant(true, 18, 501),
      grant(true, 18, 502),
    ]) {
      await access(k);
    }
  });
  afterAll(async () => {
    recordFigures(
      'api-access',
      `e2e propagation (produce -> API answer), ms: ${JSON.stringify(figures)}`,
    );
    await stack?.stop();
  });

  it('serves what the access facts allow: grant AND owner access', async () => {
    await msUntil('user key lists 501', Date.now(), async () => {
      const r = await stack.call('/getInstallations', userKey);
      return r.status === 200 && ids(r.body).join() === '501';
    });
    await msUntil('company key lists 501, 502', Date.now(), async () => {
      const r = await stack.call('/getInstallations', companyKey);
      return r.status === 200 && ids(r.body).join() === '501,502';
    });
    // Granted but the user owner is no member of 502: no access, same 404 as a missing one.
    expect((await stack.call('/getInstallationDevices?installationId=502', userKey)).status).toBe(
      404,
    );
    expect((await stack.call('/getInstallationDevices?installationId=999', userKey)).status).toBe(
      404,
    );
    const devices = await stack.call('/getInstallationDevices?installationId=501', userKey);
    expect(devices.status).toBe(200);
    expect(devices.body.installationId).toBe(501);
  });

  it('refuses keys expiring at the epoch, before it and the millisecond after; serves none and future', async () => {
    // No instant means "never" (src/read-model/key-status-codec.ts), the epoch included.
    const expiries: Array<[string, string | null, number]> = [
      ['epoch', '1970-01-01T00:00:00Z', 401],
      ['before the epoch', '1969-12-31T23:59:59Z', 401],
      ['the millisecond after', '1970-01-01T00:00:00.001Z', 401],
      ['no expiresAt', null, 200],
      ['future', new Date(Date.now() + 86_400_000).toISOString(), 200],
    ];
    const keys = expiries.map(() => newApiKey());
    await stack.produce('installations', ...spread(installationUpserted(installation(503), null)));
    await access(applicationUpserted(19, { type: 'user', id: 6 }));
    await access(grant(true, 19, 503));
    await access(membership(true, 6, 503));
    for (const [i, [name, expiresAt]] of expiries.entries())
      await access(apiKeyCreated(`expiry-${name}`, 19, keys[i] as string, expiresAt));
    // Asked only once the consumers wrote every key's status, so no answer predates its fact.
    const redis = testRedis();
    const readModel = createKeys(stack.config.redis.keyPrefix);
    try {
      await waitFor('every key status written', async () => {
        for (const key of keys)
          if ((await redis.exists(readModel.keyStatus(hashApiKey(key)))) === 0) return undefined;
        return true;
      });
    } finally {
      redis.disconnect();
    }
    await msUntil('the live keys read 503', Date.now(), async () => {
      const r = await stack.call('/getInstallationDevices?installationId=503', keys[3] as string);
      return r.status === 200;
    });
    for (const [i, [name, , status]] of expiries.entries()) {
      for (const path of [
        '/getInstallations',
        '/getInstallationDevices?installationId=503',
        '/getInstallationCurrentEnergyFlow?installationId=503',
      ]) {
        const r = await stack.call(path, keys[i] as string);
        expect(r.status, `${name} ${path}`).toBe(status);
        if (status === 401) expect(r.body, `${name} ${path}`).toEqual(UNAUTHORIZED);
      }
    }
  });

  it('stops a revoked key within the bound while the rotated one keeps working', async () => {
    await msUntil('rotated key live', Date.now(), async () => {
      return (await stack.call('/getInstallations', rotatedKey)).status === 200;
    });
    const t0 = Date.now();
    await access(apiKeyRevoked('rotated-key'));
    figures.revokedKey401 = await msUntil('revoked key refused', t0, async () => {
      return (await stack.call('/getInstallations', rotatedKey)).status === 401;
    });
    expect(figures.revokedKey401).toBeLessThan(BOUND_MS);
    expect((await stack.call('/getInstallations', userKey)).status).toBe(200);
  });

  it('applies a removed membership within the bound', async () => {
    expect((await stack.call('/getInstallationDevices?installationId=501', userKey)).status).toBe(
      200,
    );
    const t0 = Date.now();
    await access(membership(false, 5, 501));
    figures.membershipRemoved404 = await msUntil('membership removal', t0, async () => {
      return (
        (await stack.call('/getInstallationDevices?installationId=501', userKey)).status === 404
      );
    });
    expect(figures.membershipRemoved404).toBeLessThan(BOUND_MS);
    expect(ids((await stack.call('/getInstallations', userKey)).body)).toEqual([]);
  });

  it('applies a removed grant within the bound', async () => {
    const before = await stack.call(
      '/getInstallationCurrentEnergyFlow?installationId=502',
      companyKey,
    );
    expect(before.status).toBe(200);
    const t0 = Date.now();
    await access(grant(false, 18, 502));
    figures.grantRemoved404 = await msUntil('grant removal', t0, async () => {
      const r = await stack.call(
        '/getInstallationCurrentEnergyFlow?installationId=502',
        companyKey,
      );
      return r.status === 404;
    });
    expect(figures.grantRemoved404).toBeLessThan(BOUND_MS);
    expect(ids((await stack.call('/getInstallations', companyKey)).body)).toEqual([501]);
  });

  it('applies a deleted installation within the bound', async () => {
    const path = '/getInstallationDevices?installationId=501';
    expect((await stack.call(path, companyKey)).status).toBe(200);
    const t0 = Date.now();
    const deleted = installationDeleted(501);
    await stack.produce('installations', deleted.key, deleted.event);
    figures.installationDeleted404 = await msUntil('installation deletion', t0, async () => {
      return (await stack.call(path, companyKey)).status === 404;
    });
    figures.installationDeletedUnlisted = await msUntil(
      'deleted installation unlisted',
      t0,
      async () => {
        return ids((await stack.call('/getInstallations', companyKey)).body).length === 0;
      },
    );
    expect(figures.installationDeleted404).toBeLessThan(BOUND_MS);
    expect(figures.installationDeletedUnlisted).toBeLessThan(BOUND_MS);
  });

  it('applies a deleted application within the bound', async () => {
    expect((await stack.call('/getInstallations', userKey)).status).toBe(200);
    const t0 = Date.now();
    await access(applicationDeleted(17));
    figures.appDeleted401 = await msUntil('deleted application', t0, async () => {
      return (await stack.call('/getInstallations', userKey)).status === 401;
    });
    expect(figures.appDeleted401).toBeLessThan(BOUND_MS);
  });

  it('applies a disabled application within the bound', async () => {
    expect((await stack.call('/getInstallations', companyKey)).status).toBe(200);
    const t0 = Date.now();
    await access(applicationUpserted(18, { type: 'company', id: 7 }, false));
    figures.appDisabled401 = await msUntil('disabled application', t0, async () => {
      return (await stack.call('/getInstallations', companyKey)).status === 401;
    });
    expect(figures.appDisabled401).toBeLessThan(BOUND_MS);
  });
});

function spread(k: Keyed): [string, Record<string, unknown>] {
  return [k.key, k.event];
}
