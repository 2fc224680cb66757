import type { Logger } from 'pino';
import { parseAccessMessage } from '../src/domain/event-parse.js';
import { expectedMessageKey } from '../src/domain/events.js';
import type { AccessFactStore } from '../src/read-model/access-fact-store.js';
import type { AccessViewStore } from '../src/read-model/access-store.js';
import type { Rejection } from './dead-letter.js';
import type { KafkaBatch } from './kafka/client.js';
import type { ConsumerMetrics } from './metrics.js';
import type { BatchOutcome, Projector } from './runner.js';

// access-changes.v1: store each fact, then recompute the views of every application the batch
// affected, once per application.

export function createAccessProjector(deps: {
  topic: string;
  facts: AccessFactStore;
  views: AccessViewStore;
  metrics: ConsumerMetrics;
  logger: Logger;
}): Projector {
  const { topic, metrics } = deps;
  return {
    async project(batch: KafkaBatch): Promise<BatchOutcome> {
      const rejections: Rejection[] = [];
      const apps = new Set<number>();
      let applied = 0;
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
        const effect = await deps.facts.apply(parsed.event);
        applied++;
        for (const app of effect.applications) apps.add(app);
      }
      for (const app of apps) await deps.views.recomputeApplication(app);
      metrics.applied.inc({ topic }, applied);
      return { rejections };
    },
  };
}
