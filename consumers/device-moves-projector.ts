import type { Logger } from 'pino';
import type { Counter } from 'prom-client';
import {
  type DeviceReleasedEvent,
  parseDeviceReleased,
} from '../src/projection/device-released.js';
import type { EventOutcome, FoldContext } from '../src/projection/telemetry-fold.js';
import type { ReadModelKeys } from '../src/read-model/keys.js';
import type { RedisClient } from '../src/read-model/redis-connection.js';
import { createTelemetryStore, mapCache } from '../src/read-model/telemetry-store.js';
import type { Rejection } from './dead-letter.js';
import type { KafkaBatch } from './kafka/client.js';
import type { BatchOutcome, Projector } from './projector.js';
import { ContentionError } from './retriable.js';

// The device-move protocol's own topic (docs/projection.md, docs/events.md: internal): the
// device.released and device.seen events the telemetry owners send each other. Its consumer
// reads every installation a batch names afresh and writes it like any other writer: guarded
// by the installation's revision, so the telemetry owner's copy of it is refused and reloaded
// at its next write. The protocol decides by observation times, not by the order of delivery.

/** Attempts before a batch is handed back to the runner's retry with backoff. */
const MAX_ATTEMPTS = 8;

export function createDeviceMovesProjector(deps: {
  conn: RedisClient;
  keys: ReadModelKeys;
  ctx: () => FoldContext;
  /** Sends device.released / device.seen events keyed by their installation; acknowledged. */
  sendReleases(events: readonly DeviceReleasedEvent[]): Promise<void>;
  /** ingest_device_releases_total, by direction. */
  releases: Counter<'direction'>;
  logger: Logger;
}): Projector {
  return {
    async project(batch: KafkaBatch): Promise<BatchOutcome> {
      const rejections: Rejection[] = [];
      const events: DeviceReleasedEvent[] = [];
      const messages = [];
      for (const message of batch.messages) {
        const event = parseDeviceReleased(message.value);
        if (event) {
          events.push(event);
          messages.push(message);
        } else
          rejections.push({
            message,
            reason: 'schema_violation',
            detail: 'not a device.released or device.seen event',
          });
      }
      // Nothing kept between batches: every installation read afresh, every write guarded.
      const store = createTelemetryStore({
        conn: deps.conn,
        keys: deps.keys,
        cache: mapCache(),
        sendReleases: deps.sendReleases,
      });
      const outcomes = new Map<number, EventOutcome>();
      let pending = events.map((_, i) => i);
      for (let i = 0; i < MAX_ATTEMPTS && pending.length > 0; i++) {
        const result = await store.pass(
          pending.map((j) => events[j] as DeviceReleasedEvent),
          deps.ctx(),
        );
        result.outcomes.forEach((outcome, k) => {
          if (outcome) outcomes.set(pending[k] as number, outcome);
        });
        for (const [id, detail] of result.corrupt)
          deps.logger.error({ installationId: id, detail }, 'stored devices unreadable');
        pending = result.redo.map((k) => pending[k] as number);
      }
      if (pending.length > 0)
        throw new ContentionError(`installations kept changing under ${MAX_ATTEMPTS} attempts`);
      deps.releases.inc({ direction: 'applied' }, outcomes.size);
      return { rejections };
    },
  };
}
