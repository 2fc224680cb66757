import { buildApi } from '../../../api/app.js';
import { createApiRedis } from '../../../api/redis-client.js';
import { type ConsumerApp, startConsumers } from '../../../consumers/app.js';
import type { Producer } from '../../../consumers/kafka/client.js';
import { type Config, loadConfig } from '../../../src/config.js';
import {
  dropPrefix,
  isolatedEnv,
  testKafkaClient,
  testLogger,
  testRedis,
  uniqueId,
} from '../../support/stack.js';
import { createResponseValidator } from '../../support-api/openapi-validator.js';

// The real processes: consumers reading their own topics into their own Redis prefix, and the
// API listening on a free port. Every response read over HTTP is checked against the OpenAPI.

export interface E2eStack {
  readonly config: Config;
  readonly origin: string;
  produce(topic: keyof Config['topics'], key: string, event: unknown): Promise<void>;
  /** GET over HTTP; the body is validated against the OpenAPI document before it is returned. */
  // biome-ignore lint/suspicious/noExplicitAny: the body's shape is checked at runtime, by the OpenAPI schema
  call(path: string, apiKey: string): Promise<{ status: number; body: any }>;
  stop(): Promise<void>;
}

export async function startE2eStack(): Promise<E2eStack> {
  const id = uniqueId('e2e');
  const config = loadConfig(isolatedEnv(id));
  const kafka = testKafkaClient();
  const consumerRedis = testRedis();
  const consumers: ConsumerApp = await startConsumers({
    config,
    logger: testLogger,
    kafka,
    redis: consumerRedis,
  });
  const apiRedis = createApiRedis(config.redis, config.api.redisCommandTimeoutMs);
  apiRedis.on('error', () => undefined);
  const app = buildApi({ config, logger: testLogger, redis: apiRedis });
  const origin = await app.listen({ host: '127.0.0.1', port: 0 });
  const producer: Producer = kafka.createProducer();
  await producer.connect();
  const validator = createResponseValidator(config.api.basePath);

  return {
    config,
    origin,
    async produce(topic, key, event) {
      await producer.send(config.topics[topic], [{ key, value: JSON.stringify(event) }]);
    },
    async call(path, apiKey) {
      const url = `${config.api.basePath}${path}`;
      const res = await fetch(`${origin}${url}`, { headers: { 'api-key': apiKey } });
      const body = await res.json();
      validator.assertValid(url, 'GET', res.status, body);
      return { status: res.status, body };
    },
    async stop() {
      await producer.disconnect();
      await consumers.stop();
      await app.close();
      apiRedis.disconnect();
      await dropPrefix(consumerRedis, config.redis.keyPrefix);
      consumerRedis.disconnect();
    },
  };
}

/** Polls as fast as the API answers until `done`; returns ms elapsed since `sinceMs`. */
export async function msUntil(
  what: string,
  sinceMs: number,
  probe: () => Promise<boolean>,
  timeoutMs = 10_000,
): Promise<number> {
  while (Date.now() - sinceMs < timeoutMs) {
    if (await probe()) return Date.now() - sinceMs;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}
