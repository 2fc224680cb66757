import { createServer, type Server } from 'node:http';
import { gunzipSync } from 'node:zlib';

// An OTLP/HTTP trace receiver inside the test: what the processes' exporters really send
// (OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/json), decoded into flat spans. The raw bodies are
// kept too, for scanning every exported byte for secrets.

export interface ReceivedSpan {
  readonly service: string;
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string;
  readonly name: string;
  readonly kind: number;
  readonly startMs: number;
  readonly endMs: number;
  readonly attributes: Record<string, unknown>;
  readonly events: ReadonlyArray<{ name: string; attributes: Record<string, unknown> }>;
  readonly links: ReadonlyArray<{ traceId: string; spanId: string }>;
}

export interface OtlpReceiver {
  /** `http://127.0.0.1:<port>`: OTEL_EXPORTER_OTLP_ENDPOINT for the processes. */
  readonly endpoint: string;
  readonly spans: ReceivedSpan[];
  /** Every request body received, as text. */
  readonly bodies: string[];
  close(): Promise<void>;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: number | string;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: OtlpValue[] };
}
type OtlpAttributes = Array<{ key: string; value: OtlpValue }> | undefined;
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string | number;
  endTimeUnixNano: string | number;
  attributes?: OtlpAttributes;
  events?: Array<{ name: string; attributes?: OtlpAttributes }>;
  links?: Array<{ traceId: string; spanId: string }>;
}
interface ExportRequest {
  resourceSpans?: Array<{
    resource?: { attributes?: OtlpAttributes };
    scopeSpans?: Array<{ spans?: OtlpSpan[] }>;
  }>;
}

function decodeValue(v: OtlpValue): unknown {
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(decodeValue);
  if (v.intValue !== undefined) return Number(v.intValue);
  return v.stringValue ?? v.doubleValue ?? v.boolValue;
}

const attributesOf = (list: OtlpAttributes): Record<string, unknown> =>
  Object.fromEntries((list ?? []).map((a) => [a.key, decodeValue(a.value)]));

export function decodeExport(body: ExportRequest): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of body.resourceSpans ?? []) {
    const service = String(attributesOf(rs.resource?.attributes)['service.name']);
    for (const ss of rs.scopeSpans ?? [])
      for (const s of ss.spans ?? [])
        out.push({
          service,
          traceId: s.traceId,
          spanId: s.spanId,
          parentSpanId: s.parentSpanId ?? '',
          name: s.name,
          kind: s.kind,
          startMs: Number(BigInt(s.startTimeUnixNano) / 1_000_000n),
          endMs: Number(BigInt(s.endTimeUnixNano) / 1_000_000n),
          attributes: attributesOf(s.attributes),
          events: (s.events ?? []).map((e) => ({
            name: e.name,
            attributes: attributesOf(e.attributes),
          })),
          links: (s.links ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId })),
        });
  }
  return out;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const bodies: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let raw = Buffer.concat(chunks);
      if (req.headers['content-encoding'] === 'gzip') raw = gunzipSync(raw);
      const text = raw.toString('utf8');
      if (req.url === '/v1/traces' && req.headers['content-type']?.startsWith('application/json')) {
        bodies.push(text);
        spans.push(...decodeExport(JSON.parse(text) as ExportRequest));
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      } else {
        // Only traces, as JSON: anything else says the processes were configured otherwise.
        res.writeHead(415).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return {
    endpoint: `http://127.0.0.1:${address.port}`,
    spans,
    bodies,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
