import type { Logger } from 'pino';
import { parseDateTime } from '../src/domain/date-time.js';
import { parseInstallationsMessage } from '../src/domain/event-parse.js';
import { expectedMessageKey } from '../src/domain/events.js';
import { addPair, noEffects } from '../src/read-model/access-fact-store.js';
import type { AccessWork } from '../src/read-model/access-store.js';
import type { InstallationStore } from '../src/read-model/installation-store.js';
import type { Rejection } from './dead-letter.js';
import type { KafkaBatch } from './kafka/client.js';
import type { ConsumerMetrics } from './metrics.js';
import type { BatchOutcome, Projector } from './projector.js';

// installations.v1: upserts (last-writer-wins by occurredAt) and deletions (event or tombstone).
// The access entries of every installation the batch changed are recorded for the access
// worker: application views embed the installation JSON, and the company decides company-owned
// access.

export function createInstallationsProjector(deps: {
  topic: string;
  store: InstallationStore;
  access: AccessWork;
  /** Wakes the access worker: the batch recorded work. */
  onWork: () => void;
  metrics: ConsumerMetrics;
  logger: Logger;
}): Projector {
  const { topic, metrics } = deps;
  return {
    async project(batch: KafkaBatch): Promise<BatchOutcome> {
      const rejections: Rejection[] = [];
      const changed = new Set<number>();
      let applied = 0;
      let stale = 0;
      let dropped = 0;
      for (const message of batch.messages) {
        const parsed = parseInstallationsMessage(message.decoded ?? message.value, message.key);
        if (!parsed.ok) {
          rejections.push({ message, reason: parsed.reason, detail: parsed.detail });
          continue;
        }
        const { event } = parsed;
        const key = message.key?.toString('utf8');
        if (key !== expectedMessageKey(event)) {
          // A compacted topic keyed wrongly would keep the wrong record: refuse it.
          rejections.push({
            message,
            reason: 'invalid_key',
            detail: `key must be ${expectedMessageKey(event)}`,
          });
          continue;
        }
        dropped += parsed.droppedKeys.length;
        // A tombstone has no occurredAt: its Kafka timestamp dates the deletion.
        const tombstone = event.occurredAt === null;
        const atMs =
          event.occurredAt === null
            ? message.timestampMs
            : (parseDateTime(event.occurredAt) as number);
        const result =
          event.type === 'installation.upserted'
            ? await deps.store.upsert(event.installation, event.companyId, atMs)
            : await deps.store.remove(event.installationId, atMs, tombstone);
        if (result.applied) {
          applied++;
          changed.add(
            event.type === 'installation.upserted' ? event.installation.id : event.installationId,
          );
        } else {
          stale++;
        }
      }
      const effects = noEffects();
      const ids = [...changed];
      const granted = await deps.access.applicationsGranted(ids);
      ids.forEach((id, i) => {
        for (const app of granted[i] ?? []) addPair(effects, app, id);
      });
      await deps.access.record(effects, batch);
      if (effects.pairs.size > 0) deps.onWork();
      metrics.applied.inc({ topic }, applied);
      metrics.stale.inc({ topic }, stale);
      metrics.droppedFields.inc({ topic }, dropped);
      return { rejections };
    },
  };
}
