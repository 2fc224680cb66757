import { Kafka, logLevel as KafkaLogLevel, type LogEntry, Partitioners } from 'kafkajs';
import type { Logger } from 'pino';
import type {
  Admin,
  BatchConsumer,
  BatchHandler,
  ConsumerOptions,
  KafkaClient,
  KafkaMessage,
  OutgoingMessage,
  Producer,
} from './client.js';

export interface KafkajsClientOptions {
  readonly brokers: readonly string[];
  readonly clientId: string;
  readonly logger: Logger;
}

export function createKafkajsClient(options: KafkajsClientOptions): KafkaClient {
  const kafka = new Kafka({
    clientId: options.clientId,
    brokers: [...options.brokers],
    logLevel: KafkaLogLevel.WARN,
    logCreator: () => (entry: LogEntry) => forwardLog(options.logger, entry),
    // An outage delays work: keep reconnecting instead of giving up after kafkajs' default 5 tries.
    retry: { initialRetryTime: 200, maxRetryTime: 5_000, retries: Number.MAX_SAFE_INTEGER },
  });

  return {
    createConsumer: (consumerOptions) => createConsumer(kafka, consumerOptions),
    createProducer: () => createProducer(kafka),
    createAdmin: async () => {
      const admin = kafka.admin();
      await admin.connect();
      return {
        async ensureTopics(specs) {
          const existing = new Set(await admin.listTopics());
          const missing = specs.filter((s) => !existing.has(s.topic));
          if (missing.length === 0) return;
          await admin.createTopics({
            waitForLeaders: true,
            topics: missing.map((s) => ({
              topic: s.topic,
              numPartitions: s.numPartitions,
              configEntries: [
                { name: 'cleanup.policy', value: s.cleanupPolicy },
                ...Object.entries(s.config ?? {}).map(([name, value]) => ({ name, value })),
              ],
            })),
          });
        },
        disconnect: () => admin.disconnect(),
      } satisfies Admin;
    },
  };
}

function createConsumer(kafka: Kafka, options: ConsumerOptions): BatchConsumer {
  const consumer = kafka.consumer({ groupId: options.groupId, allowAutoTopicCreation: false });
  return {
    async start(handler: BatchHandler) {
      await consumer.connect();
      await consumer.subscribe({
        topics: [...options.topics],
        fromBeginning: options.fromBeginning,
      });
      await consumer.run({
        // Offsets are committed by hand, only after the handler says the batch is durable.
        autoCommit: false,
        eachBatchAutoResolve: false,
        partitionsConsumedConcurrently: options.concurrentPartitions ?? 1,
        eachBatch: async ({ batch, heartbeat, isRunning, isStale, resolveOffset }) => {
          const last = batch.messages.at(-1);
          if (!last) return;
          const messages: KafkaMessage[] = batch.messages.map((m) => ({
            topic: batch.topic,
            partition: batch.partition,
            offset: m.offset,
            key: m.key,
            value: m.value,
            headers: toBufferHeaders(m.headers),
            timestampMs: Number(m.timestamp),
          }));
          await handler(
            {
              topic: batch.topic,
              partition: batch.partition,
              messages,
              highWatermark: batch.highWatermark,
            },
            { heartbeat, isStale: () => !isRunning() || isStale() },
          );
          // Without resolving, kafkajs fetches the same batch again (auto-resolve is off).
          resolveOffset(last.offset);
          const next = (BigInt(last.offset) + 1n).toString();
          await consumer.commitOffsets([
            { topic: batch.topic, partition: batch.partition, offset: next },
          ]);
        },
      });
    },
    stop: () => consumer.disconnect(),
  };
}

function createProducer(kafka: Kafka): Producer {
  // Idempotent producer: retries after a broker hiccup never duplicate or reorder a message.
  // The default partitioner hashes keys like the Java client, so producers in any language agree.
  const producer = kafka.producer({
    idempotent: true,
    maxInFlightRequests: 1,
    createPartitioner: Partitioners.DefaultPartitioner,
  });
  return {
    connect: () => producer.connect(),
    async send(topic, messages) {
      // One request per chunk, awaited in turn: order is kept and no request nears the broker's
      // 1 MiB default limit however many messages the caller hands over.
      for (const chunk of requestChunks(messages)) {
        await producer.send({
          topic,
          acks: -1,
          messages: chunk.map((m) => ({
            key: m.key,
            value: m.value,
            ...(m.headers ? { headers: { ...m.headers } } : {}),
          })),
        });
      }
    },
    disconnect: () => producer.disconnect(),
  };
}

export const MAX_REQUEST_BYTES = 512 * 1024;

const byteLength = (v: Buffer | string | null) =>
  v === null ? 0 : typeof v === 'string' ? Buffer.byteLength(v) : v.length;

function messageBytes(m: OutgoingMessage): number {
  let total = byteLength(m.key) + byteLength(m.value);
  for (const [name, value] of Object.entries(m.headers ?? {}))
    total += Buffer.byteLength(name) + Buffer.byteLength(value);
  return total;
}

/** Consecutive runs of messages of at most MAX_REQUEST_BYTES; a larger message goes alone. */
export function requestChunks(messages: readonly OutgoingMessage[]): OutgoingMessage[][] {
  const chunks: OutgoingMessage[][] = [];
  let current: OutgoingMessage[] = [];
  let size = 0;
  for (const m of messages) {
    const bytes = messageBytes(m);
    if (current.length > 0 && size + bytes > MAX_REQUEST_BYTES) {
      chunks.push(current);
      current = [];
      size = 0;
    }
    current.push(m);
    size += bytes;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

function toBufferHeaders(
  headers: Record<string, Buffer | string | (Buffer | string)[] | undefined> | undefined,
): Record<string, Buffer | undefined> {
  const out: Record<string, Buffer | undefined> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    const first = Array.isArray(value) ? value[0] : value;
    out[name] = typeof first === 'string' ? Buffer.from(first) : first;
  }
  return out;
}

function forwardLog(logger: Logger, entry: LogEntry): void {
  const { message, ...rest } = entry.log;
  const level = entry.level <= KafkaLogLevel.ERROR ? 'error' : 'warn';
  logger[level]({ kafka: { namespace: entry.namespace, ...rest } }, message);
}
