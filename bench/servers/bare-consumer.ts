import { writeFileSync } from 'node:fs';
import { Kafka, logLevel } from 'kafkajs';
import { dropNegativeTimeoutWarning } from '../../consumers/kafka/negative-timeout.js';

// The ingest baseline: a bare kafkajs eachBatch consumer that consumes and discards the topic,
// committing after each batch like the project's consumer does. It times itself from joining the
// group to the commit that completes `total` (the bench times the consumer process from its
// readiness, i.e. after joining, to the same commit), writes the result and exits.
// Usage: bare-consumer.ts <brokers> <topic> <groupId> <total> <result.json>

const [brokers, topic, groupId, totalArg, outFile] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
];
const total = Number(totalArg);
dropNegativeTimeoutWarning();
const kafka = new Kafka({
  clientId: 'bench-bare',
  brokers: brokers.split(','),
  logLevel: logLevel.ERROR,
});
const consumer = kafka.consumer({ groupId, allowAutoTopicCreation: false });
await consumer.connect();
await consumer.subscribe({ topics: [topic], fromBeginning: true });
let consumed = 0;
let joinedMs = 0;
consumer.on(consumer.events.GROUP_JOIN, () => {
  joinedMs = performance.now();
});
await consumer.run({
  autoCommit: false,
  eachBatchAutoResolve: false,
  eachBatch: async ({ batch, resolveOffset }) => {
    const last = batch.messages.at(-1);
    if (!last) return;
    resolveOffset(last.offset);
    await consumer.commitOffsets([
      {
        topic: batch.topic,
        partition: batch.partition,
        offset: (BigInt(last.offset) + 1n).toString(),
      },
    ]);
    consumed += batch.messages.length;
    if (consumed >= total) {
      const seconds = (performance.now() - joinedMs) / 1000;
      const cpu = process.cpuUsage();
      writeFileSync(
        outFile,
        JSON.stringify({
          rate: consumed / seconds,
          seconds,
          cpuSeconds: (cpu.user + cpu.system) / 1e6,
        }),
      );
      setImmediate(() => void consumer.disconnect().then(() => process.exit(0)));
    }
  },
});
