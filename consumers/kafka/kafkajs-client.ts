import {
  type Consumer,
  type ConsumerRunConfig,
  type EachBatchHandler,
  Kafka,
  type Admin as KafkaAdmin,
  type KafkaMessage as KafkajsMessage,
  logLevel as KafkaLogLevel,
  type LogEntry,
  Partitioners,
} from 'kafkajs';
import type { Logger } from 'pino';
import { groupRejoinCause } from '../retriable.js';
import type {
  Admin,
  BatchConsumer,
  BatchHandler,
  ConsumerEvents,
  ConsumerOptions,
  KafkaClient,
  KafkaMessage,
  OutgoingMessage,
  Producer,
} from './client.js';
import { registerCodecs } from './codecs.js';
import { forwardLog } from './kafkajs-log.js';
import { dropNegativeTimeoutWarning } from './negative-timeout.js';
import { PRODUCER_METADATA_MAX_AGE_MS, partitionedSend } from './partitioned-send.js';

export interface KafkajsClientOptions {
  readonly brokers: readonly string[];
  readonly clientId: string;
  readonly logger: Logger;
  /**
   * The trace context of the active span as headers (traceparent), added to every message the
   * producers send (dead letters, the internal moves topic); absent, tracing is off.
   */
  readonly traceHeaders?: () => Readonly<Record<string, string>> | undefined;
}

/** kafkajs as every process here sets it up; for a tool that needs kafkajs itself (transactions). */
export function createKafkajs(
  options: Pick<KafkajsClientOptions, 'brokers' | 'clientId' | 'logger'>,
): Kafka {
  registerCodecs();
  dropNegativeTimeoutWarning();
  return new Kafka({
    clientId: options.clientId,
    brokers: [...options.brokers],
    logLevel: KafkaLogLevel.WARN,
    logCreator: () => (entry: LogEntry) => forwardLog(options.logger, entry),
    // An outage delays work: keep reconnecting instead of giving up after kafkajs' default 5 tries.
    retry: { initialRetryTime: 200, maxRetryTime: 5_000, retries: Number.MAX_SAFE_INTEGER },
  });
}

export function createKafkajsClient(options: KafkajsClientOptions): KafkaClient {
  const kafka = createKafkajs(options);

  return {
    createConsumer: (consumerOptions) => createConsumer(kafka, consumerOptions),
    createProducer: () => createProducer(kafka, options.traceHeaders),
    createAdmin: async () => {
      const admin = kafka.admin();
      await admin.connect();
      return {
        async ensureTopics(specs) {
          const existing = new Set(await admin.listTopics());
          const missing = specs.filter((s) => !existing.has(s.topic));
          if (missing.length === 0) return;
          const { brokers } = await admin.describeCluster();
          const replication = replicationFor(brokers.length);
          // Leaders are waited for below: kafkajs's own wait asks any broker and gives up on
          // UNKNOWN_TOPIC_OR_PARTITION from one that has not heard of the new topic yet.
          await admin.createTopics({
            waitForLeaders: false,
            topics: missing.map((s) => ({
              topic: s.topic,
              numPartitions: s.numPartitions,
              replicationFactor: replication.factor,
              configEntries: Object.entries({
                'cleanup.policy': s.cleanupPolicy,
                'min.insync.replicas': String(replication.minInSync),
                ...s.config,
              }).map(([name, value]) => ({ name, value })),
            })),
          });
          await waitForLeaders(
            admin,
            missing.map((s) => s.topic),
          );
        },
        async endOffsets(topic) {
          // kafkajs's admin lists offsets read_committed: `high` is the last stable offset.
          const offsets = await admin.fetchTopicOffsets(topic);
          return offsets.map((o) => ({ partition: o.partition, end: o.high, start: o.low }));
        },
        async committedOffsets(groupId, topic) {
          const [found] = await admin.fetchOffsets({ groupId, topics: [topic] });
          return (found?.partitions ?? []).map((p) => ({
            partition: p.partition,
            offset: BigInt(p.offset) < 0n ? null : p.offset,
          }));
        },
        setCommittedOffset: (groupId, topic, partition, offset) =>
          admin.setOffsets({ groupId, topic, partitions: [{ partition, offset }] }),
        resetToStart: (groupId, topic) => admin.resetOffsets({ groupId, topic, earliest: true }),
        async describeGroup(groupId) {
          const { groups } = await admin.describeGroups([groupId]);
          const group = groups.find((g) => g.groupId === groupId);
          return { state: group?.state ?? 'Dead', members: group?.members.length ?? 0 };
        },
        disconnect: () => admin.disconnect(),
      } satisfies Admin;
    },
  };
}

const LEADERS_DEADLINE_MS = 60_000;

/**
 * Resolves once every partition of `topics` has a leader and the leaders serve it (they answer
 * for its offsets): a consumer that joins earlier can be told the partition does not exist.
 */
async function waitForLeaders(admin: KafkaAdmin, topics: readonly string[]): Promise<void> {
  const deadline = Date.now() + LEADERS_DEADLINE_MS;
  for (;;) {
    const led = await admin
      .fetchTopicMetadata({ topics: [...topics] })
      .then((m) => m.topics.every((t) => t.partitions.every((p) => p.leader >= 0)))
      .then(
        async (all) => all && (await Promise.all(topics.map((t) => admin.fetchTopicOffsets(t)))),
      )
      .then(Boolean)
      .catch(() => false);
    if (led) return;
    if (Date.now() > deadline)
      throw new Error(
        `topics ${topics.join(', ')} have no leaders after ${LEADERS_DEADLINE_MS} ms`,
      );
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/**
 * Replicas of a topic the service creates: three where the cluster has them, two of which must
 * hold a write before an acks=all producer hears back, so one broker down (a restart, a rolling
 * upgrade) neither loses an acknowledged event nor refuses a write. A single broker gets 1 / 1.
 */
export function replicationFor(brokers: number): { factor: number; minInSync: number } {
  const factor = Math.max(1, Math.min(3, brokers));
  return { factor, minInSync: factor >= 3 ? 2 : 1 };
}

function createConsumer(kafka: Kafka, options: ConsumerOptions): BatchConsumer {
  const consumer = kafkajsConsumer(kafka, options);
  const events = options.events;
  let stopping = false;
  let restartTimer: NodeJS.Timeout | undefined;
  let runConfig: ConsumerRunConfig | null = null;
  const isStopping = () => stopping;
  const commitNext: CommitNext = (topic, partition, lastOffset) =>
    consumer.commitOffsets([{ topic, partition, offset: (BigInt(lastOffset) + 1n).toString() }]);
  // Rethrows a group-protocol error as kafkajs raised it: its fetch loop rejoins the group on
  // UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION or NOT_COORDINATOR_FOR_GROUP,
  // but only while the error still carries its type, which its commit retrier wraps away.
  const unwrapGroupError = (error: unknown): never => {
    const group = groupRejoinCause(error);
    if (!group) throw error;
    // kafkajs says REBALANCING for the others it rejoins on, but not for an unknown member.
    if (!stopping && (group as { type?: string }).type === 'UNKNOWN_MEMBER_ID')
      events?.onRejoining();
    throw group;
  };
  if (events) reportGroupEvents(consumer, events, isStopping);
  consumer.on(consumer.events.CRASH, (e) => {
    if (stopping) return;
    const { error, restart } = e.payload;
    // kafkajs crashed for good on an answer of the group protocol (it rejoins only when the
    // error reaches its fetch loop unwrapped): the group is still there, so join it afresh.
    const rejoin = !restart && groupRejoinCause(error) !== null && runConfig !== null;
    events?.onCrash(error, restart || rejoin);
    if (!rejoin || !runConfig) return;
    const config = runConfig;
    clearTimeout(restartTimer);
    restartTimer = setTimeout(() => {
      if (!stopping) void consumer.run(config);
    }, REJOIN_DELAY_MS);
  });
  commitEmptyFetches(consumer, commitNext, isStopping);
  return {
    async start(handler: BatchHandler) {
      await consumer.connect();
      await consumer.subscribe({
        topics: [...options.topics],
        fromBeginning: options.fromBeginning,
      });
      runConfig = {
        // Offsets are committed by hand, only after the handler says the batch is durable.
        autoCommit: false,
        eachBatchAutoResolve: false,
        partitionsConsumedConcurrently: options.concurrentPartitions ?? 1,
        eachBatch: committingAfter(handler, commitNext, unwrapGroupError),
      };
      await consumer.run(runConfig);
    },
    async stop() {
      stopping = true;
      clearTimeout(restartTimer);
      await consumer.disconnect();
    },
    pause: (topic, partition) => consumer.pause([{ topic, partitions: [partition] }]),
  };
}

type CommitNext = (topic: string, partition: number, lastOffset: string) => Promise<void>;

function kafkajsConsumer(kafka: Kafka, options: ConsumerOptions): Consumer {
  // read_committed is kafkajs's default; said here because events.md promises it to producers.
  return kafka.consumer({
    groupId: options.groupId,
    allowAutoTopicCreation: false,
    readUncommitted: false,
    // Partitions added to a topic are seen at the next metadata refresh, which makes the group
    // rebalance onto them: every 5 minutes by kafkajs's default, every few seconds here. A
    // fetch refreshes when it starts, and an idle one waits up to maxWaitTimeInMs (kafkajs: 5 s;
    // the Java client's fetch.max.wait.ms is 500 ms): so new partitions are read within 10 s.
    metadataMaxAge: 3_000,
    maxWaitTimeInMs: 1_000,
    // Heartbeats at a third of the session, as kafkajs recommends; kafkajs 2.2.4 has no static
    // membership (no group.instance.id), so a short session is what bounds a crash's stall.
    ...(options.sessionTimeoutMs
      ? {
          sessionTimeout: options.sessionTimeoutMs,
          heartbeatInterval: Math.min(3_000, Math.floor(options.sessionTimeoutMs / 3)),
        }
      : {}),
  });
}

/** Tells the runner of assignments, rebalances and stops it did not ask for. */
function reportGroupEvents(
  consumer: Consumer,
  events: ConsumerEvents,
  isStopping: () => boolean,
): void {
  consumer.on(consumer.events.GROUP_JOIN, (e) => {
    const assigned = Object.values(e.payload.memberAssignment).flat();
    events.onAssigned(assigned);
  });
  consumer.on(consumer.events.REBALANCING, () => {
    if (!isStopping()) events.onRejoining();
  });
  consumer.on(consumer.events.STOP, () => {
    if (!isStopping()) events.onStopped();
  });
}

// A fetch of nothing but transaction markers or aborted records never reaches eachBatch;
// kafkajs moves past it in memory only. Commit that too, or the committed offset stays
// before the marker and offset-based lag never reads 0 on a transactional topic.
function commitEmptyFetches(
  consumer: Consumer,
  commitNext: CommitNext,
  isStopping: () => boolean,
): void {
  consumer.on(consumer.events.END_BATCH_PROCESS, (e) => {
    const { topic, partition, batchSize, lastOffset } = e.payload;
    if (batchSize > 0 || isStopping()) return;
    commitNext(topic, partition, lastOffset).catch(() => {
      // A rebalance or stop in between: the next batch or member commits it.
    });
  });
}

/** kafkajs' eachBatch: hands the batch to the handler, then commits past it. */
function committingAfter(
  handler: BatchHandler,
  commitNext: CommitNext,
  unwrapGroupError: (error: unknown) => never,
): EachBatchHandler {
  return async ({ batch, heartbeat, isRunning, isStale, resolveOffset }) => {
    if (batch.messages.length === 0) return;
    const messages: KafkaMessage[] = batch.messages.map(
      (m) => new MessageView(batch.topic, batch.partition, m),
    );
    const handled = handler(
      {
        topic: batch.topic,
        partition: batch.partition,
        messages,
        highWatermark: batch.highWatermark,
      },
      { heartbeat, isStale: () => !isRunning() || isStale() },
    );
    await handled.catch(unwrapGroupError);
    // The batch's last offset counts transaction markers and aborted records after the
    // last message too, so the committed offset passes them. Without resolving, kafkajs
    // fetches the same batch again (auto-resolve is off).
    const last = batch.lastOffset();
    resolveOffset(last);
    await commitNext(batch.topic, batch.partition, last).catch(unwrapGroupError);
  };
}

/** Wait before joining afresh after kafkajs gave up on a group error (as its own restarts do). */
const REJOIN_DELAY_MS = 1_000;

function createProducer(
  kafka: Kafka,
  traceHeaders: KafkajsClientOptions['traceHeaders'],
): Producer {
  // Idempotent producer: retries after a broker hiccup never duplicate or reorder a message.
  // The default partitioner hashes keys like the Java client, so producers in any language agree.
  const producer = kafka.producer({
    idempotent: true,
    maxInFlightRequests: 1,
    createPartitioner: Partitioners.DefaultPartitioner,
    metadataMaxAge: PRODUCER_METADATA_MAX_AGE_MS,
  });
  const partitioned = partitionedSend(kafka, producer);
  return {
    connect: () => producer.connect(),
    async send(topic, messages) {
      // Once per send: every message of it carries the context of the span that sends them,
      // in place of any a forwarded message (a dead letter) carried from its own producer.
      const trace = traceHeaders?.();
      // One request per chunk, awaited in turn: order is kept and no request nears the broker's
      // 1 MiB default limit however many messages the caller hands over.
      for (const chunk of requestChunks(messages)) {
        await partitioned.send({
          topic,
          acks: -1,
          messages: chunk.map((m) => ({
            key: m.key,
            value: m.value,
            ...(m.headers || trace ? { headers: { ...m.headers, ...trace } } : {}),
          })),
        });
      }
    },
    async disconnect() {
      await partitioned.close();
      await producer.disconnect();
    },
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

/**
 * A KafkaMessage over kafkajs' own message: one small object per message, its headers converted
 * only when read (dead-lettering, the Java codecs' tests), not for every message of a batch.
 */
class MessageView implements KafkaMessage {
  private converted: Record<string, Buffer | undefined> | undefined;

  constructor(
    readonly topic: string,
    readonly partition: number,
    private readonly m: KafkajsMessage,
  ) {}

  get offset(): string {
    return this.m.offset;
  }
  get key(): Buffer | null {
    return this.m.key;
  }
  get value(): Buffer | null {
    return this.m.value;
  }
  get headers(): Readonly<Record<string, Buffer | undefined>> {
    this.converted ??= toBufferHeaders(this.m.headers);
    return this.converted;
  }
  get timestampMs(): number {
    return Number(this.m.timestamp);
  }
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
