import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CODECS,
  type Codec,
  type JavaProducer,
  startJavaProducer,
} from '../../tools/java-producer.js';
import { newApiKey } from '../../tools/seed/records.js';
import { recordFigures } from '../support/figures.js';
import { kafkaBrokers, waitFor } from '../support/stack.js';
import { type TestApi, testApi } from '../support-api/api-harness.js';
import {
  devicesOf,
  type Harness,
  installation,
  iso,
  sha,
  startHarness,
} from './support/consumer-harness.js';

// Record batches as the Java client writes them, with every codec on every topic: each event is
// in the read model within 1 s of the producer's acknowledgment (acks=all). The table printed at
// the end is the codec table.

let h: Harness;
let java: JavaProducer;
let api: TestApi;
let nextId = 41_000;
const newId = () => nextId++;
const rows: string[] = [];

const VISIBLE_WITHIN_MS = 1_000;

/** Polls tightly (10 ms) so the measured time is close to when the write became visible. */
async function visibleAfterAck(what: string, probe: () => Promise<boolean>): Promise<number> {
  const acked = await java.flush();
  expect(acked.length).toBeGreaterThan(0);
  const t0 = performance.now();
  await waitFor(
    what,
    async () => {
      if (await probe()) return true;
      await new Promise((resolve) => setTimeout(resolve, 10));
      return undefined;
    },
    10_000,
  );
  return Math.round(performance.now() - t0);
}

const record = (codec: Codec, topic: string, ms: number) => {
  rows.push(`| ${codec} | ${topic} | applied | ${ms} ms |`);
  expect(ms).toBeLessThanOrEqual(VISIBLE_WITHIN_MS);
};

beforeAll(async () => {
  h = await startHarness('codecs');
  await waitFor('consumers in their groups', async () =>
    (await h.app.isReady()) ? true : undefined,
  );
  java = await startJavaProducer(kafkaBrokers());
  api = testApi({ env: { REDIS_KEY_PREFIX: h.config.redis.keyPrefix } });
  await api.ready();
});
afterAll(async () => {
  await java?.close();
  await h?.stop();
  await api?.close();
  if (rows.length > 0) {
    recordFigures(
      'consumers-codecs',
      [
        'codec × topic, Java producer (kafka-clients 4.4.0, acks=all) → read model:',
        '| codec | topic | result | visible after ack |',
        '| --- | --- | --- | --- |',
        ...rows,
      ].join('\n'),
    );
  }
});

describe.each(CODECS)('%s record batches from the Java producer', (codec) => {
  it('installations.v1: the upsert is applied', async () => {
    const id = newId();
    java.send(codec, h.config.topics.installations, String(id), {
      type: 'installation.upserted',
      occurredAt: iso(Date.now()),
      installation: installation(id, `plant ${codec}`),
      companyId: null,
    });
    const ms = await visibleAfterAck('installation stored', async () =>
      ((await h.redis.get(h.keys.installation(id))) ?? '').includes(`plant ${codec}`),
    );
    record(codec, 'installations', ms);
  });

  it('device-telemetry.v1: every event of the batch is applied', async () => {
    const inst = newId();
    const at = Date.now() - 1_000;
    for (let n = 1; n <= 3; n++) {
      java.send(codec, h.config.topics.telemetry, String(inst), {
        type: 'device.state',
        installationId: inst,
        category: 'inverter',
        deviceId: inst * 100 + n,
        observedAt: iso(at),
        state: { manufacturer: 'SMA', status: 4, powerAc: 100 * n, powerDcPvTotal: 200 },
      });
    }
    const ms = await visibleAfterAck('three devices stored', async () => {
      const devices = await devicesOf(h, inst);
      return [1, 2, 3].every((n) => devices[`inverter:${inst * 100 + n}`]?.powerAc === 100 * n);
    });
    record(codec, 'telemetry', ms);
  });

  it('access-changes.v1: a new key of a new application is live', async () => {
    const app = newId();
    const hash = sha(`itk_codec_${codec}_${app}`);
    java.send(codec, h.config.topics.access, `app:${app}`, {
      type: 'application.upserted',
      occurredAt: iso(Date.now()),
      applicationId: app,
      owner: { type: 'user', id: app },
      enabled: true,
    });
    java.send(codec, h.config.topics.access, `key:k${app}`, {
      type: 'apiKey.created',
      occurredAt: iso(Date.now()),
      keyId: `k${app}`,
      applicationId: app,
      keyHash: hash,
      expiresAt: null,
    });
    // Live as the API decides it: the key's status names the application, not revoked, and the
    // application's status is enabled.
    const ms = await visibleAfterAck('key and application statuses', async () => {
      const [keyApp, revoked] = await h.redis.hmget(h.keys.keyStatus(hash), 'app', 'revoked');
      const [enabled, deleted] = await h.redis.hmget(h.keys.appStatus(app), 'enabled', 'deleted');
      return keyApp === String(app) && revoked === '0' && enabled === '1' && deleted !== '1';
    });
    record(codec, 'access', ms);
  });
});

describe('access-changes.v1 revocation behind a compressed batch', () => {
  it.each(['lz4', 'snappy', 'zstd', 'gzip'] as const)(
    'an uncompressed apiKey.revoked after a %s access change on the same partition answers 401 within 1 s',
    async (codec) => {
      const [app, user, inst] = [newId(), newId(), newId()];
      const key = newApiKey();
      const fact = (k: string, event: object, c: Codec = 'none') =>
        java.send(c, h.config.topics.access, k, { occurredAt: iso(Date.now()), ...event }, 0);
      java.send('none', h.config.topics.installations, String(inst), {
        type: 'installation.upserted',
        occurredAt: iso(Date.now()),
        installation: installation(inst, 'home'),
        companyId: null,
      });
      fact(`app:${app}`, {
        type: 'application.upserted',
        applicationId: app,
        owner: { type: 'user', id: user },
        enabled: true,
      });
      fact(`key:k${app}`, {
        type: 'apiKey.created',
        keyId: `k${app}`,
        applicationId: app,
        keyHash: sha(key),
        expiresAt: null,
      });
      fact(`grant:${app}:${inst}`, {
        type: 'grant.added',
        applicationId: app,
        installationId: inst,
      });
      fact(`member:${user}:${inst}`, {
        type: 'membership.added',
        userId: user,
        installationId: inst,
      });
      const read = async () =>
        (
          await api.app.inject({
            method: 'GET',
            url: `${api.config.api.basePath}/getInstallations`,
            headers: { authorization: `Bearer ${key}` },
          })
        ).statusCode;
      await java.flush();
      await waitFor(
        'the key reads',
        async () => ((await read()) === 200 ? true : undefined),
        10_000,
      );

      // A second key of the same application (a rotation), compressed, then the revocation.
      fact(
        `key:k2${app}`,
        {
          type: 'apiKey.created',
          keyId: `k2${app}`,
          applicationId: app,
          keyHash: sha(newApiKey()),
          expiresAt: null,
        },
        codec,
      );
      await java.flush();
      fact(`key:k${app}`, { type: 'apiKey.revoked', keyId: `k${app}` });
      const ms = await visibleAfterAck(
        '401 for the revoked key',
        async () => (await read()) === 401,
      );
      rows.push(`| ${codec} then none | access (revocation) | 401 | ${ms} ms |`);
      expect(ms).toBeLessThanOrEqual(VISIBLE_WITHIN_MS);
    },
  );
});
