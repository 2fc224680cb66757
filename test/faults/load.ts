import kafkajs, { type Producer } from 'kafkajs';

const { CompressionTypes, Kafka, logLevel } = kafkajs;

import { registerCodecs } from '../../consumers/kafka/codecs.js';
import {
  PRODUCER_METADATA_MAX_AGE_MS,
  partitionedSend,
} from '../../consumers/kafka/partitioned-send.js';
import { installation } from '../../tools/seed/records.js';
import {
  deviceState,
  grant,
  installationUpserted,
  type Keyed,
  membership,
} from '../e2e/support/events.js';

// Telemetry at a steady rate: every installation has an inverter, a battery and a meter with
// ids of their own; a few observations arrive late (older than the last), as in the field.

export interface Load {
  readonly produced: () => number;
  /** Messages the broker did not take (retried by the next tick). */
  readonly failures: () => number;
  setRate(perSecond: number): void;
  stop(): Promise<void>;
}

export const DEVICES = [
  {
    category: 'inverter',
    n: 1,
    state: (r: () => number) => ({
      powerAc: Math.round(r() * 5000),
      powerDcPvTotal: Math.round(r() * 6000),
      status: 4,
    }),
  },
  {
    category: 'battery',
    n: 2,
    state: (r: () => number) => ({
      soe: Math.round(r() * 100),
      ratedEnergy: 10000,
      powerDc: Math.round(r() * 4000 - 2000),
    }),
  },
  {
    category: 'energyMeter',
    n: 3,
    state: (r: () => number) => ({ powerAc: Math.round(r() * 6000 - 3000), options: '' }),
  },
] as const;

export function telemetryEvent(installationId: number, pick: number, observedMs: number): Keyed {
  const d = DEVICES[pick % DEVICES.length] as (typeof DEVICES)[number];
  return deviceState(
    installationId,
    d.category,
    installationId * 10 + d.n,
    observedMs,
    d.state(Math.random),
  );
}

/** `brokers`: host:port, comma-separated as KAFKA_BROKERS takes them. */
export function kafkaFor(brokers: string): InstanceType<typeof Kafka> {
  // The project's codecs, so the suite produces snappy and lz4 with the same code that decodes.
  registerCodecs();
  return new Kafka({
    brokers: brokers.split(','),
    clientId: 'fault-load',
    logLevel: logLevel.NOTHING,
    retry: { initialRetryTime: 200, maxRetryTime: 2_000, retries: 1_000 },
  });
}

/**
 * Idempotent, acks=all where sent; each request to one partition, as the service's own producer
 * (partitioned-send.ts: kafkajs otherwise acknowledges messages it skipped when a leader moves).
 */
export async function connectedProducer(kafka: InstanceType<typeof Kafka>): Promise<Producer> {
  const producer = kafka.producer({
    idempotent: true,
    maxInFlightRequests: 1,
    metadataMaxAge: PRODUCER_METADATA_MAX_AGE_MS,
  });
  await producer.connect();
  const partitioned = partitionedSend(kafka, producer);
  return {
    ...producer,
    send: async (record) => {
      await partitioned.send(record);
      return [];
    },
    disconnect: async () => {
      await partitioned.close();
      await producer.disconnect();
    },
  };
}

export async function send(
  producer: Producer,
  topic: string,
  messages: Keyed[],
  compression = CompressionTypes.None,
): Promise<void> {
  await producer.send({
    topic,
    acks: -1,
    compression,
    messages: messages.map((m) => ({ key: m.key, value: JSON.stringify(m.event) })),
  });
}

/**
 * The fleet before any load: the access facts (`facts`, then every installation granted to
 * application 1 and a member of user 9), the installations, and a first observation of each
 * installation's three devices. Resolves with the telemetry messages produced.
 */
export async function seedFleet(
  producer: Producer,
  topics: { readonly access: string; readonly installations: string; readonly telemetry: string },
  installations: readonly number[],
  facts: readonly Keyed[],
): Promise<number> {
  const access = [...facts];
  for (const id of installations) access.push(grant(true, 1, id), membership(true, 9, id));
  await send(producer, topics.access, access);
  await send(
    producer,
    topics.installations,
    installations.map((id) => installationUpserted(installation(id), null)),
  );
  const telemetry = installations.flatMap((id) =>
    DEVICES.map((_, pick) => telemetryEvent(id, pick, Date.now())),
  );
  await send(producer, topics.telemetry, telemetry);
  return telemetry.length;
}

export function startLoad(
  producer: Producer,
  topic: string,
  installations: readonly number[],
  perSecond: number,
): Load {
  let rate = perSecond;
  let produced = 0;
  let failures = 0;
  let stopped = false;
  let next = 0;
  const tickMs = 100;
  const loop = (async () => {
    let debt = 0;
    while (!stopped) {
      const started = Date.now();
      // Capped: after an outage the producer catches up over seconds, not in one request.
      debt = Math.min(debt + (rate * tickMs) / 1000, rate);
      const n = Math.floor(debt);
      const batch: Keyed[] = [];
      for (let i = 0; i < n; i++) {
        const inst = installations[next % installations.length] as number;
        const pick = Math.floor(next / installations.length);
        next++;
        // One in twenty arrives 2 s late: stale for the model, a firstSeen candidate.
        const late = Math.random() < 0.05 ? 2_000 : 0;
        batch.push(telemetryEvent(inst, pick, Date.now() - late));
      }
      try {
        if (batch.length > 0) await send(producer, topic, batch);
        produced += batch.length;
        debt -= n;
      } catch {
        failures++;
      }
      await new Promise((r) => setTimeout(r, Math.max(0, tickMs - (Date.now() - started))));
    }
  })();
  return {
    produced: () => produced,
    failures: () => failures,
    setRate: (r) => {
      rate = r;
    },
    async stop() {
      stopped = true;
      await loop;
    },
  };
}
