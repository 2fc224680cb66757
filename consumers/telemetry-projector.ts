import type { Logger } from 'pino';
import { parseTelemetryMessage } from '../src/domain/event-parse.js';
import type { TelemetryEvent } from '../src/domain/events.js';
import { CorruptStoredDataError } from '../src/read-model/batch-flows.js';
import type { DeviceStore } from '../src/read-model/device-store.js';
import type { Rejection } from './dead-letter.js';
import type { KafkaBatch, KafkaMessage } from './kafka/client.js';
import type { ConsumerMetrics } from './metrics.js';
import { createPool } from './pool.js';
import type { BatchOutcome, Projector } from './runner.js';
import {
  deviceFieldOf,
  type EventOutcome,
  planTelemetryBatch,
  type TelemetryPlan,
} from './telemetry-batch.js';

// device-telemetry.v1: parse, then apply the whole batch in one transaction, which also
// recomputes the flow of every installation it touched once. Batches of different partitions
// run at once, each with a store (a Redis connection) of its own. An installation whose stored
// devices cannot be read back fails alone: the events that touched it are dead-lettered and the
// rest of the batch is applied.

export function createTelemetryProjector(deps: {
  topic: string;
  /** One per batch projected at once (each on a Redis connection of its own). */
  stores: readonly DeviceStore[];
  clock: () => number;
  futureSkewSeconds: number;
  metrics: ConsumerMetrics;
  logger: Logger;
}): Projector {
  const { topic, metrics } = deps;
  const stores = createPool(deps.stores);
  return {
    async project(batch: KafkaBatch): Promise<BatchOutcome> {
      const rejections: Rejection[] = [];
      const accepted: Accepted[] = [];
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
      let pending = accepted;
      const outcomes = new Map<KafkaMessage, EventOutcome>();
      while (pending.length > 0) {
        const events = pending.map((a) => a.event);
        // Where each device is looked for when it has no index entry: its events' installations.
        const origins = new Map<string, Set<number>>();
        for (const e of events) {
          const field = deviceFieldOf(e);
          origins.set(field, (origins.get(field) ?? new Set<number>()).add(e.installationId));
        }
        let last: TelemetryPlan | null = null;
        try {
          const plan = await stores.use((store) =>
            store.transact(
              [...origins.keys()],
              [...new Set(events.map((e) => e.installationId))],
              (view) => {
                last = planTelemetryBatch(view, events, {
                  nowMs: deps.clock(),
                  futureSkewSeconds: deps.futureSkewSeconds,
                });
                return last;
              },
              deps.clock,
              origins,
            ),
          );
          for (const [i, o] of plan.outcomes.entries())
            outcomes.set(pending[i]?.message as KafkaMessage, o);
          break;
        } catch (error) {
          if (!(error instanceof CorruptStoredDataError) || last === null) throw error;
          pending = dropCorrupt(pending, last, error, outcomes);
          metrics.corruptInstallations.inc({ topic }, error.installations.size);
          deps.logger.error(
            {
              topic,
              partition: batch.partition,
              installations: Object.fromEntries(error.installations),
            },
            'stored devices unreadable; dead-lettering the events that touch them',
          );
        }
      }
      let applied = 0;
      let stale = 0;
      for (const [message, outcome] of outcomes) {
        if (outcome.kind === 'rejected') {
          rejections.push({ message, reason: outcome.reason, detail: outcome.detail });
        } else if (outcome.kind === 'stale') {
          stale++;
        } else {
          applied++;
          for (const field of outcome.nulledPercentFields) metrics.percentNulled.inc({ field });
          if (outcome.moved) metrics.deviceMoves.inc();
        }
      }
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

type Accepted = { readonly message: KafkaMessage; readonly event: TelemetryEvent };

/** Records a processing_error for every event that wrote to a corrupt installation. */
function dropCorrupt(
  pending: readonly Accepted[],
  plan: TelemetryPlan,
  error: CorruptStoredDataError,
  outcomes: Map<KafkaMessage, EventOutcome>,
): Accepted[] {
  const culprits = new Map<number, number>();
  for (const inst of error.installations.keys())
    for (const i of plan.touchedBy.get(inst) ?? []) culprits.set(i, inst);
  return pending.filter((a, i) => {
    const inst = culprits.get(i);
    if (inst === undefined) return true;
    outcomes.set(a.message, {
      kind: 'rejected',
      reason: 'processing_error',
      detail: `stored devices of installation ${inst} are unreadable`,
    });
    return false;
  });
}
