import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { inject } from 'vitest';

// Corrupts a record batch in the broker's own log segment, as a bad disk or a producer bug
// would: the broker accepted the batch, but its compressed payload no longer decodes. Works on
// the test stack (native, or TEST_STACK=containers with its log directory bind-mounted), whose
// data directory the global setup provides.

function segmentOf(topic: string, partition: number): string {
  const dataDir = inject('kafkaDataDir');
  if (!dataDir) {
    throw new Error(
      'this test corrupts a Kafka segment on disk: not possible with KAFKA_BROKERS or TEST_KAFKA=cluster',
    );
  }
  return join(dataDir, `${topic}-${partition}`, '00000000000000000000.log');
}

/** Overwrites the first bytes of the payload of the batch that starts at `baseOffset`. */
export async function corruptBatch(topic: string, partition: number, baseOffset: bigint) {
  const path = segmentOf(topic, partition);
  const file = await open(path, 'r+').catch((error: unknown) => {
    throw new Error(
      `cannot open ${path} (${String(error)}): this test corrupts a segment of the project's own ` +
        'Kafka, started by `npm run stack:start` (STACK_DIR if moved)',
    );
  });
  try {
    const head = Buffer.alloc(12);
    let at = 0;
    for (;;) {
      const { bytesRead } = await file.read(head, 0, 12, at);
      if (bytesRead < 12) throw new Error(`no batch at offset ${baseOffset} in ${path}`);
      const base = head.readBigInt64BE(0);
      const length = head.readInt32BE(8);
      if (base === baseOffset) {
        // 61 bytes of batch header; the compressed records follow (an lz4 frame starts with
        // its magic number, which is what goes).
        await file.write(Buffer.alloc(8, 0xee), 0, 8, at + 61);
        return;
      }
      at += 12 + length;
    }
  } finally {
    await file.close();
  }
}
