import type { Config } from '../src/config.js';
import { oversized } from '../src/domain/event-parse.js';
import { createRegistryClient } from '../src/registry/registry-client.js';
import { createRegistryDecoder, type RegistryDecoder } from '../src/registry/value-decoder.js';
import { isFramed } from '../src/registry/wire-format.js';
import type { Rejection } from './dead-letter.js';
import type { KafkaMessage } from './kafka/client.js';
import type { Projector } from './projector.js';

// The decode step before a topic's projector: registry-framed values (magic byte 0) are decoded
// with their writer's schema into the JSON form, which the projector then parses, validates
// and folds as it does a JSON value. A batch of JSON values passes through untouched (one byte
// read per message). While the registry is unreachable `load` throws a retriable error: the
// batch is retried with backoff and nothing of it is committed or dead-lettered. An unknown id
// or bytes that do not decode are dead-lettered with their own reasons.

export function withRegistryDecoding(
  projector: Projector,
  decoder: RegistryDecoder,
  maxBytes: number,
): Projector {
  return {
    async project(batch) {
      if (!batch.messages.some((m) => isFramed(m.value))) return projector.project(batch);
      await decoder.load(batch.messages.map((m) => m.value));
      const messages: KafkaMessage[] = [];
      const rejections: Rejection[] = [];
      for (const message of batch.messages) {
        if (!isFramed(message.value)) {
          messages.push(message);
          continue;
        }
        // Bounded as read from the topic, as a JSON value is: nothing over it is decoded.
        const big = oversized(message.value, maxBytes);
        if (big && !big.ok) {
          rejections.push({ message, reason: big.reason, detail: big.detail });
          continue;
        }
        const result = decoder.decode(message.value);
        if (result.ok) messages.push(withDecoded(message, result.value));
        else rejections.push({ message, reason: result.reason, detail: result.detail });
      }
      const outcome = await projector.project({ ...batch, messages });
      return { ...outcome, rejections: [...rejections, ...outcome.rejections] };
    },
  };
}

/**
 * The decode step for the configured registry, shared by the topics that take framed values
 * (installations, telemetry: one schema cache). No registry configured: the projector as it is.
 * The access topic never gets it: a registry outage must not hold a revocation back.
 */
export function registryDecoding(
  settings: Config['schemaRegistry'],
): (projector: Projector, maxBytes: number) => Projector {
  if (settings.url === null) return (projector) => projector;
  const decoder = createRegistryDecoder(
    createRegistryClient({ url: settings.url, timeoutMs: settings.timeoutMs }),
  );
  return (projector, maxBytes) => withRegistryDecoding(projector, decoder, maxBytes);
}

/** The message with its decoded value; the rest read through (a client's message is a view). */
function withDecoded(message: KafkaMessage, decoded: KafkaMessage['decoded']): KafkaMessage {
  return {
    decoded,
    get topic() {
      return message.topic;
    },
    get partition() {
      return message.partition;
    },
    get offset() {
      return message.offset;
    },
    get key() {
      return message.key;
    },
    get value() {
      return message.value;
    },
    get headers() {
      return message.headers;
    },
    get timestampMs() {
      return message.timestampMs;
    },
  };
}
