import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

// Drives infra/java-producer/Producer.java: the record batches Java clients really write, for
// the tests of other producers' codecs and the bench's lz4 ingest case.

export const CODECS = ['none', 'gzip', 'snappy', 'lz4', 'zstd'] as const;
export type Codec = (typeof CODECS)[number];

export interface Acked {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
}

export interface JavaProducer {
  send(codec: Codec, topic: string, key: string | null, value: unknown, partition?: number): void;
  begin(codec: Codec, transactionalId: string): void;
  commit(): void;
  abort(): void;
  /** Resolves once every record sent so far is acknowledged (acks=all), with their offsets. */
  flush(): Promise<Acked[]>;
  close(): Promise<void>;
}

const SCRIPT = fileURLToPath(new URL('../infra/java-producer/run.sh', import.meta.url));

export async function startJavaProducer(brokers: readonly string[]): Promise<JavaProducer> {
  const child: ChildProcessWithoutNullStreams = spawn('bash', [SCRIPT, brokers.join(',')]);
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    stderr = (stderr + String(chunk)).slice(-4000);
  });
  const lines = createInterface({ input: child.stdout });
  let acked: Acked[] = [];
  const errors: string[] = [];
  const waiting = new Map<string, () => void>();
  let ready: () => void = () => undefined;
  const isReady = new Promise<void>((resolve) => {
    ready = resolve;
  });
  lines.on('line', (line) => {
    const [kind, a = '', b = '', c = ''] = line.split('\t');
    if (kind === 'ready') ready();
    else if (kind === 'acked') acked.push({ topic: a, partition: Number(b), offset: c });
    else if (kind === 'error') errors.push(a);
    else if (kind === 'flushed') waiting.get(a)?.();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const failed = exited.then((code) => {
    throw new Error(
      `the Java producer exited (${code}); needs java 17 and Maven (see infra/java-producer/run.sh): ${stderr}`,
    );
  });
  failed.catch(() => undefined);
  await Promise.race([isReady, failed]);

  const write = (...fields: string[]) => child.stdin.write(`${fields.join('\t')}\n`);
  const field = (v: unknown) =>
    v === null ? '\\N' : typeof v === 'string' ? v : JSON.stringify(v);
  let token = 0;
  return {
    send(codec, topic, key, value, partition) {
      write(
        'send',
        codec,
        topic,
        partition === undefined ? '-' : String(partition),
        field(key),
        field(value),
      );
    },
    begin: (codec, id) => write('begin', codec, id),
    commit: () => write('commit'),
    abort: () => write('abort'),
    async flush() {
      const id = String(++token);
      const done = new Promise<void>((resolve) => waiting.set(id, resolve));
      write('flush', id);
      await Promise.race([done, failed]);
      waiting.delete(id);
      if (errors.length > 0) throw new Error(`the Java producer failed: ${errors.join('; ')}`);
      const out = acked;
      acked = [];
      return out;
    },
    async close() {
      child.stdin.end();
      await exited;
    },
  };
}
