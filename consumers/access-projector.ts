import type { Logger } from 'pino';
import { parseAccessMessage } from '../src/domain/event-parse.js';
import { type AccessEvent, expectedMessageKey } from '../src/domain/events.js';
import type { AccessFactStore } from '../src/read-model/access-fact-store.js';
import type { AccessWork } from '../src/read-model/access-store.js';
import type { Rejection } from './dead-letter.js';
import type { KafkaBatch } from './kafka/client.js';
import type { ConsumerMetrics } from './metrics.js';
import type { BatchOutcome, Projector } from './projector.js';

// access-changes.v1: store the batch's facts (statuses of keys and applications take effect
// here), then record the (application, installation) entries they may change for the access
// worker, which derives them off this path (src/read-model/access-store.ts). A batch costs what
// its facts touch, whatever the size of the applications they belong to.

export function createAccessProjector(deps: {
  topic: string;
  facts: AccessFactStore;
  work: AccessWork;
  /** Wakes the access worker: the batch recorded work. */
  onWork: () => void;
  metrics: ConsumerMetrics;
  logger: Logger;
}): Projector {
  const { topic, metrics } = deps;
  return {
    async project(batch: KafkaBatch): Promise<BatchOutcome> {
      const rejections: Rejection[] = [];
      const events: AccessEvent[] = [];
      for (const message of batch.messages) {
        const parsed = parseAccessMessage(message.value, message.key);
        if (!parsed.ok) {
          rejections.push({ message, reason: parsed.reason, detail: parsed.detail });
          continue;
        }
        const expected = expectedMessageKey(parsed.event);
        if (message.key?.toString('utf8') !== expected) {
          // Facts stay in order only under their identity key; compaction relies on it too.
          rejections.push({ message, reason: 'invalid_key', detail: `key must be ${expected}` });
          continue;
        }
        events.push(parsed.event);
      }
      const effects = await deps.facts.applyAll(events);
      await deps.work.record(effects, batch);
      if (effects.pairs.size > 0 || effects.sweeps.size > 0) deps.onWork();
      metrics.applied.inc({ topic }, events.length);
      return { rejections };
    },
  };
}
