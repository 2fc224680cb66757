import { writeFileSync } from 'node:fs';
import {
  type CommitOptionsPartition,
  Consumer,
  type Message,
  MessagesStreamFallbackModes,
  MessagesStreamModes,
} from '@platformatic/kafka';

// bare-consumer.ts on @platformatic/kafka instead of kafkajs: consumes and discards the topic in a
// consumer group, committing by hand after each batch, times itself from joining the group to the
// commit that completes `total`, writes the result and exits.
//
// The client has no batch callback: its stream pushes the messages of one fetch response
// synchronously, so a tick queued at a fetch's first message runs once all of them are in. That is
// the batch, committed in one OffsetCommit for the partitions it touched. The stream keeps
// fetching while the commit is in flight (the client's fastest mode); commits go one at a time,
// in order, each only after its messages were handled.
// Usage: bare-consumer-platformatic.ts <brokers> <topic> <groupId> <total> <result.json>

const [brokers, topic, groupId, totalArg, outFile] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
];
const total = Number(totalArg);

const consumer = new Consumer({
  clientId: 'bench-bare-platformatic',
  bootstrapBrokers: brokers.split(','),
  groupId,
  autocommit: false,
  // kafkajs' fetch sizes (10 MiB per fetch, 1 MiB per partition). The client's default per
  // partition is the whole 10 MiB, which measured slower here: bigger buffers, more GC.
  maxBytes: 10 * 1024 * 1024,
  maxBytesPerPartition: 1024 * 1024,
});
let joinedMs = 0;
consumer.once('consumer:group:join', () => {
  joinedMs = performance.now();
});
const stream = await consumer.consume({
  topics: [topic],
  // The group's committed offsets, or the beginning for a new group (kafkajs' fromBeginning).
  mode: MessagesStreamModes.COMMITTED,
  fallbackMode: MessagesStreamFallbackModes.EARLIEST,
  autocommit: false,
});

/** Next offset per partition of the messages received since the last batch was cut. */
let pending = new Map<number, bigint>();
let pendingCount = 0;
let committed = 0;
let commits: Promise<void> = Promise.resolve();
let done = false;

function finish(): void {
  if (done) return;
  done = true;
  const seconds = (performance.now() - joinedMs) / 1000;
  const cpu = process.cpuUsage();
  writeFileSync(
    outFile,
    JSON.stringify({
      rate: committed / seconds,
      seconds,
      cpuSeconds: (cpu.user + cpu.system) / 1e6,
    }),
  );
  // Forced: closes the stream as well, then leaves the group.
  consumer.close(true, () => process.exit(0));
}

async function commit(offsets: CommitOptionsPartition[], count: number): Promise<void> {
  await consumer.commit({ offsets });
  committed += count;
  if (committed >= total) finish();
}

function endBatch(): void {
  // The messages are discarded: the batch is handled once it is here.
  const offsets = [...pending].map(([partition, offset]) => ({
    topic,
    partition,
    offset,
    // Unknown: the broker stores it as such, like kafkajs' commits, which send no epoch.
    leaderEpoch: -1,
  }));
  const count = pendingCount;
  pending = new Map();
  pendingCount = 0;
  commits = commits.then(() => commit(offsets, count));
  commits.catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}

stream.on('data', (message: Message) => {
  if (pendingCount === 0) process.nextTick(endBatch);
  pendingCount++;
  pending.set(message.partition, message.offset + 1n);
});
stream.on('error', (error: Error) => {
  console.error(error);
  process.exit(1);
});
