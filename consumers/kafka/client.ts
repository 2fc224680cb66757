// The project's own Kafka interface: projectors and the runner see only these types, so another
// client (e.g. @platformatic/kafka) can be measured against kafkajs without touching them.

export interface KafkaMessage {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers: Readonly<Record<string, Buffer | undefined>>;
  readonly timestampMs: number;
  /**
   * A registry-framed value decoded (consumers/registry-decoding.ts): what the topic's parser
   * reads instead of `value`, which keeps the original bytes for a dead letter.
   */
  readonly decoded?: Readonly<Record<string, unknown>> | Uint8Array;
}

export interface KafkaBatch {
  readonly topic: string;
  readonly partition: number;
  readonly messages: readonly KafkaMessage[];
  /** Offset of the next message the broker will write; lag = highWatermark - last offset - 1. */
  readonly highWatermark: string;
}

export interface BatchContext {
  heartbeat(): Promise<void>;
  /** True once the partition was revoked or the consumer is stopping: abandon, do not commit. */
  isStale(): boolean;
}

/** Must resolve only when the batch's effects are durable; the client then commits its offsets. */
export type BatchHandler = (batch: KafkaBatch, ctx: BatchContext) => Promise<void>;

export interface ConsumerOptions {
  readonly groupId: string;
  readonly topics: readonly string[];
  readonly fromBeginning: boolean;
  /**
   * Batches of different partitions handed to the handler at once (default 1). Batches of one
   * partition always come one after the other, in order.
   */
  readonly concurrentPartitions?: number;
  /**
   * How long the group waits for a member that stopped heartbeating (a crash) before handing
   * its partitions on; kafkajs's default is 30 s, which a restarted process would sit out.
   */
  readonly sessionTimeoutMs?: number;
  /** What the client reports about its own life; the runner turns it into readiness and exits. */
  readonly events?: ConsumerEvents;
}

export interface ConsumerEvents {
  /** The group assigned these partitions of the topic; a rebalance replaces the whole set. */
  onAssigned(partitions: readonly number[]): void;
  /** The member lost its place in the group (rebalance, unknown member) and joins it again. */
  onRejoining(): void;
  /** Consuming stopped on an error; `restart` says whether the client tries again by itself. */
  onCrash(error: unknown, restart: boolean): void;
  /** The client left its group although nobody called stop(). */
  onStopped(): void;
}

export interface BatchConsumer {
  start(handler: BatchHandler): Promise<void>;
  stop(): Promise<void>;
  /** Stops fetching one partition of a topic (it stays assigned: nothing moves past it). */
  pause(topic: string, partition: number): void;
}

export interface OutgoingMessage {
  readonly key: Buffer | string | null;
  readonly value: Buffer | string | null;
  readonly headers?: Readonly<Record<string, string>>;
}

export interface Producer {
  connect(): Promise<void>;
  /** Sends in order, split into requests of at most about 512 KiB (one larger message alone). */
  send(topic: string, messages: readonly OutgoingMessage[]): Promise<void>;
  disconnect(): Promise<void>;
}

export interface TopicSpec {
  readonly topic: string;
  readonly numPartitions: number;
  readonly cleanupPolicy: 'compact' | 'delete';
  /** Further topic configs, e.g. `{ 'max.message.bytes': '2097152' }`. */
  readonly config?: Readonly<Record<string, string>>;
}

export interface PartitionOffsets {
  readonly partition: number;
  /** First offset a read_committed consumer cannot read yet (the last stable offset). */
  readonly end: string;
  /** Log start offset: where a group without a committed offset begins. */
  readonly start: string;
}

export interface Admin {
  /** Creates the topics that do not exist yet; existing ones are left as they are. */
  ensureTopics(specs: readonly TopicSpec[]): Promise<void>;
  endOffsets(topic: string): Promise<readonly PartitionOffsets[]>;
  /** The group's committed offset per partition of the topic, null where it has none. */
  committedOffsets(
    groupId: string,
    topic: string,
  ): Promise<ReadonlyArray<{ partition: number; offset: string | null }>>;
  /** Moves the group's committed offset; the broker refuses while the group has members. */
  setCommittedOffset(
    groupId: string,
    topic: string,
    partition: number,
    offset: string,
  ): Promise<void>;
  /** Moves the group to the start of every partition of the topic, in one step (same refusal). */
  resetToStart(groupId: string, topic: string): Promise<void>;
  /** The group's state (`Empty`, `Stable`, `Dead` for none) and how many members it has. */
  describeGroup(groupId: string): Promise<{ state: string; members: number }>;
  disconnect(): Promise<void>;
}

export interface KafkaClient {
  createConsumer(options: ConsumerOptions): BatchConsumer;
  createProducer(): Producer;
  createAdmin(): Promise<Admin>;
}
