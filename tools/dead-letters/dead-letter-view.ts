import type { IHeaders, KafkaMessage } from 'kafkajs';
import { DEAD_LETTER_HEADERS, deadLetterId, REPLAY_HEADERS } from '../../src/domain/dead-letter.js';

// A dead letter as the operator sees it: where it came from, why, and its payload with anything
// secret masked. Pure functions: the filters and the masking are unit-tested without Kafka.

export interface DeadLetter {
  /** `<dead-letter topic>:<partition>:<offset>`: what list prints and replay takes. */
  readonly id: string;
  readonly partition: number;
  readonly offset: string;
  readonly timestampMs: number;
  readonly key: string | null;
  readonly value: Buffer | null;
  /** Every header as text, the dead-letter ones included. */
  readonly headers: Readonly<Record<string, string>>;
  /**
   * The headers the message had when it was refused (the dead-letter ones left out), as its
   * producer sent them: what show prints and what a replay sends back.
   */
  readonly producerHeaders: Readonly<Record<string, Buffer>>;
  readonly source: { readonly topic: string; readonly partition: number; readonly offset: string };
  readonly reason: string;
  readonly detail: string;
  /** How often the message was replayed before this dead letter (0: never). */
  readonly replayCount: number;
}

function headerText(headers: IHeaders | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (value === undefined) continue;
    const first = Array.isArray(value) ? value[0] : value;
    if (first !== undefined) out[name] = first.toString();
  }
  return out;
}

const DEAD_LETTER_HEADER_NAMES = new Set<string>(Object.values(DEAD_LETTER_HEADERS));

function producerHeaders(headers: IHeaders | undefined): Record<string, Buffer> {
  const out: Record<string, Buffer> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    const first = Array.isArray(value) ? value[0] : value;
    if (first === undefined || DEAD_LETTER_HEADER_NAMES.has(name)) continue;
    out[name] = typeof first === 'string' ? Buffer.from(first) : first;
  }
  return out;
}

export function toDeadLetter(topic: string, partition: number, m: KafkaMessage): DeadLetter {
  const headers = headerText(m.headers);
  const h = DEAD_LETTER_HEADERS;
  return {
    id: deadLetterId({ topic, partition, offset: m.offset }),
    partition,
    offset: m.offset,
    timestampMs: Number(m.timestamp),
    key: m.key === null ? null : m.key.toString('utf8'),
    value: m.value,
    headers,
    producerHeaders: producerHeaders(m.headers),
    source: {
      topic: headers[h.sourceTopic] ?? '',
      partition: Number(headers[h.sourcePartition] ?? -1),
      offset: headers[h.sourceOffset] ?? '',
    },
    reason: headers[h.reason] ?? '',
    detail: headers[h.detail] ?? '',
    replayCount: Number(headers[REPLAY_HEADERS.replayCount] ?? 0) || 0,
  };
}

/**
 * The message a dead letter holds, by where it was refused (`topic:partition:offset`): a
 * consumer that redelivers a batch can dead-letter one message twice, both share this. A dead
 * letter without source headers is its own.
 */
export const sourceId = (d: DeadLetter): string =>
  d.source.topic !== '' && d.source.partition >= 0 && d.source.offset !== ''
    ? deadLetterId(d.source)
    : d.id;

export interface Filter {
  readonly topic?: string;
  readonly reason?: string;
  readonly key?: string;
  readonly installation?: number;
  readonly sinceMs?: number;
  readonly untilMs?: number;
  /** Exact dead letters, by id. */
  readonly ids?: readonly string[];
}

export function matches(d: DeadLetter, f: Filter): boolean {
  if (f.topic !== undefined && d.source.topic !== f.topic) return false;
  if (f.reason !== undefined && d.reason !== f.reason) return false;
  if (f.key !== undefined && d.key !== f.key) return false;
  if (f.sinceMs !== undefined && d.timestampMs < f.sinceMs) return false;
  if (f.untilMs !== undefined && d.timestampMs >= f.untilMs) return false;
  if (f.ids !== undefined && !f.ids.includes(d.id)) return false;
  if (f.installation !== undefined && !installationsOf(d).includes(f.installation)) return false;
  return true;
}

/** The installations a dead letter names: by its key (`42`, `grant:17:42`) or its payload. */
export function installationsOf(d: DeadLetter): number[] {
  const found = new Set<number>();
  const key = d.key ?? '';
  if (/^[1-9][0-9]*$/.test(key)) found.add(Number(key));
  const pair = /^(?:grant|member):[0-9]+:([1-9][0-9]*)$/.exec(key);
  if (pair?.[1]) found.add(Number(pair[1]));
  const payload = jsonOf(d.value);
  if (payload && typeof payload === 'object') {
    const p = payload as { installationId?: unknown; installation?: { id?: unknown } };
    if (typeof p.installationId === 'number') found.add(p.installationId);
    if (typeof p.installation?.id === 'number') found.add(p.installation.id);
  }
  return [...found];
}

function jsonOf(value: Buffer | null): unknown {
  if (value === null) return undefined;
  try {
    return JSON.parse(value.toString('utf8'));
  } catch {
    return undefined;
  }
}

// An API key (`itk_` + 32-64 characters) may reach a topic by mistake; its hash is key material
// too. Neither is ever printed: names that hold secrets are masked whole, and the key form and
// 64-hex strings wherever they appear, in JSON or not.
const SECRET_NAMES = /^(keyhash|apikey|api-key|key|secret|password|token|authorization)$/i;
const SECRET_TEXT = /itk_[A-Za-z0-9]{8,}|\b[0-9a-fA-F]{64}\b/g;
const MASK = '[redacted]';

export const maskText = (text: string): string => text.replace(SECRET_TEXT, MASK);

function maskJson(value: unknown): unknown {
  if (typeof value === 'string') return maskText(value);
  if (Array.isArray(value)) return value.map(maskJson);
  if (value && typeof value === 'object')
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [
        k,
        SECRET_NAMES.test(k) && v !== null ? MASK : maskJson(v),
      ]),
    );
  return value;
}

/** The payload as printed: JSON with secrets masked, else the text masked, else its size. */
export function printablePayload(value: Buffer | null): unknown {
  if (value === null) return null;
  const parsed = jsonOf(value);
  if (parsed !== undefined) return maskJson(parsed);
  const text = new TextDecoder('utf-8', { fatal: false }).decode(value);
  return maskText(text);
}

// A header named like a credential is masked whole (x-api-key, authorization, x-auth-token, …);
// any other is printed as text where it is text, the key form and hashes masked in it.
const SECRET_HEADER =
  /authorization|api[-_]?key|token|secret|password|cookie|credential|signature/i;
const PRINTABLE = /^[^\p{Cc}]*$/u;

/** The producer's headers as printed: text (masked) where printable, else their size. */
export function printableHeaders(
  headers: Readonly<Record<string, Buffer>>,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (SECRET_HEADER.test(name)) {
      out[name] = MASK;
      continue;
    }
    let text: string | null;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(value);
    } catch {
      text = null;
    }
    out[name] =
      text !== null && PRINTABLE.test(text.replace(/\t/g, ' '))
        ? maskText(text)
        : `[${value.length} bytes, not text]`;
  }
  return out;
}

/** What `show --json` and `list --json` print for one dead letter. */
export function printable(d: DeadLetter, replayedBy: string | null): Record<string, unknown> {
  return {
    id: d.id,
    at: new Date(d.timestampMs).toISOString(),
    reason: d.reason,
    detail: maskText(d.detail),
    source: d.source,
    key: d.key === null ? null : maskText(d.key),
    headers: printableHeaders(d.producerHeaders),
    replayCount: d.replayCount,
    replayed: replayedBy,
    payload: printablePayload(d.value),
  };
}

export function listLine(d: DeadLetter, replayed: boolean): string {
  const s = d.source;
  return [
    d.id,
    new Date(d.timestampMs).toISOString(),
    d.reason,
    `${s.topic}:${s.partition}:${s.offset}`,
    `key=${d.key === null ? '-' : maskText(d.key)}`,
    d.replayCount > 0 ? `replays=${d.replayCount}` : '',
    replayed ? 'REPLAYED' : '',
    maskText(d.detail),
  ]
    .filter((part) => part !== '')
    .join('  ');
}

export function countsByReason(letters: readonly DeadLetter[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const d of letters) counts[d.reason] = (counts[d.reason] ?? 0) + 1;
  return Object.fromEntries(Object.entries(counts).sort(([, a], [, b]) => b - a));
}
