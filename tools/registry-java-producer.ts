import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import {
  type RegistryFormat,
  schemaEntryOf,
  toRegistryForm,
} from '../src/registry/event-encoder.js';
import { subjectName } from '../src/registry/event-schemas.js';
import { registrySchemaFiles } from '../src/registry/schema-files.js';

// Drives infra/registry-producer/RegistryProducer.java: values serialized by Apicurio
// Registry's own Java serdes (Avro, Protobuf, JSON Schema) in the Confluent-compatible id mode,
// sent by the Java client with zstd, for the tests of what Java producers on a registry write.

export interface Acked {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
}

export interface RegistryJavaProducer {
  /**
   * Sends an event (its JSON form) serialized in `format` against the latest version of its
   * subject, `<topic>-readmodel.v1.<Record>` as tools/register-schemas.ts names it, unless given.
   */
  send(
    format: RegistryFormat,
    topic: string,
    key: string | null,
    event: Record<string, unknown>,
    subject?: string,
  ): void;
  /** Resolves once every record sent so far is acknowledged (acks=all), with their offsets. */
  flush(): Promise<Acked[]>;
  close(): Promise<void>;
}

const SCRIPT = fileURLToPath(new URL('../infra/registry-producer/run.sh', import.meta.url));
const HOW_TO_FIX =
  'needs Java 17+ and Maven with access to Maven Central (or a mirror in ~/.m2/settings.xml); ' +
  'run `bash infra/registry-producer/run.sh < /dev/null` to see the failure; ' +
  'a stale classpath is cleared by removing $STACK_DIR/registry-producer/classpath.txt';

/** Apicurio's core API (v3), which its 3.x serdes use, from its Confluent-compatible API's URL. */
export function coreApiUrl(ccompatUrl: string): string {
  const base = ccompatUrl.replace(/\/+$/, '');
  if (!/\/apis\/ccompat\/v\d+$/.test(base)) {
    throw new Error(
      `${ccompatUrl} is not an Apicurio Registry ccompat URL (…/apis/ccompat/v7): its serdes need Apicurio's own API`,
    );
  }
  return base.replace(/\/apis\/ccompat\/v\d+$/, '/apis/registry/v3');
}

export async function startRegistryJavaProducer(
  brokers: readonly string[],
  registryUrl: string,
): Promise<RegistryJavaProducer> {
  const child: ChildProcessWithoutNullStreams = spawn('bash', [
    SCRIPT,
    brokers.join(','),
    coreApiUrl(registryUrl),
  ]);
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
      `the Apicurio-serde Java producer exited (${code}): ${stderr.trim()}\n${HOW_TO_FIX}`,
    );
  });
  failed.catch(() => undefined);
  // The first run resolves the classpath from Maven Central: minutes, not seconds.
  await Promise.race([isReady, failed]);

  const schemas = new Map(
    registrySchemaFiles().map((f) => [`${f.format}/${f.entry.name}`, f.text]),
  );
  const write = (command: Record<string, unknown>) =>
    child.stdin.write(`${JSON.stringify(command)}\n`);
  let token = 0;
  return {
    send(format, topic, key, event, subject) {
      const entry = schemaEntryOf(event);
      write({
        format,
        topic,
        key,
        subject: subject ?? subjectName(topic, entry),
        schema: schemas.get(`${format}/${entry.name}`),
        value: toRegistryForm(event, format),
      });
    },
    async flush() {
      const id = String(++token);
      const done = new Promise<void>((resolve) => waiting.set(id, resolve));
      write({ flush: id });
      await Promise.race([done, failed]);
      waiting.delete(id);
      if (errors.length > 0) {
        throw new Error(`the Apicurio-serde Java producer failed: ${errors.splice(0).join('; ')}`);
      }
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
