import type { Logger } from 'pino';
import { parseTelemetryMessage } from '../src/domain/event-parse.js';
import type { TelemetryEvent } from '../src/domain/events.js';
import type { DeviceStore } from '../src/read-model/device-store.js';
import type { Rejection } from './dead-letter.js';
import type { KafkaBatch, KafkaMessage } from './kafka/client.js';
import type { ConsumerMetrics } from './metrics.js';
import type { BatchOutcome, Projector } from './runner.js';
import { deviceFieldOf, planTelemetryBatch } from './telemetry-batch.js';

// device-telemetry.v1: parse, then apply the whole batch in one transaction, which also
// recomputes the flow of every installation it touched once.

export function createTelemetryProjector(deps: {
  topic: string;
  store: DeviceStore;
  clock: () => number;
  futureSkewSeconds: number;
  metrics: ConsumerMetrics;
  logger: Logger;
}): Projector {
  const { topic, metrics } = deps;
  return {
    async project(batch: KafkaBatch): Promise<BatchOutcome> {
      const rejections: Rejection[] = [];
      const accepted: Array<{ message: KafkaMessage; event: TelemetryEvent }> = [];
      let dropped = 0;
      let miskeyed = 0;
      for (const message of batch.messages) {
        const parsed = parseTelemetryMessage(message.value);
        if (!parsed.ok) {
          rejections.push({ message, reason: parsed.reason, detail: parsed.detail });
          continue;
        }
        dropped += parsed.droppedKeys.length;
        if (message.key?.toString('utf8') !== String(parsed.event.installationId)) miskeyed++;
        accepted.push({ message, event: parsed.event });
      }
      const events = accepted.map((a) => a.event);
      if (events.length === 0) return { rejections };
      const plan = await deps.store.transact(
        [...new Set(events.map(deviceFieldOf))],
        [...new Set(events.map((e) => e.installationId))],
        (view) =>
          planTelemetryBatch(view, events, {
            nowMs: deps.clock(),
            futureSkewSeconds: deps.futureSkewSeconds,
          }),
        deps.clock,
      );
      let applied = 0;
      let stale = 0;
      plan.outcomes.forEach((outcome, i) => {
        const message = accepted[i]?.message as KafkaMessage;
        if (outcome.kind === 'rejected') {
          rejections.push({ message, reason: outcome.reason, detail: outcome.detail });
        } else if (outcome.kind === 'stale') {
          stale++;
        } else {
          applied++;
          for (const field of outcome.nulledPercentFields) metrics.percentNulled.inc({ field });
          if (outcome.moved) metrics.deviceMoves.inc();
        }
      });
      metrics.applied.inc({ topic }, applied);
      metrics.stale.inc({ topic }, stale);
      metrics.droppedFields.inc({ topic }, dropped);
      if (miskeyed > 0) {
        metrics.miskeyed.inc({ topic }, miskeyed);
        deps.logger.warn(
          { topic, partition: batch.partition, miskeyed },
          'telemetry keyed by something other than installationId',
        );
      }
      rejections.sort((a, b) => Number(BigInt(a.message.offset) - BigInt(b.message.offset)));
      return { rejections };
    },
  };
}
