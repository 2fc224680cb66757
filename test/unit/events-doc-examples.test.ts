import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { WORKED_EXAMPLES, workedExamplePayload } from '../../infra/asyncapi/worked-examples.js';
import { loadConfig } from '../../src/config.js';
import { parseDateTime } from '../../src/domain/date-time.js';
import { DEVICE_CATEGORIES } from '../../src/domain/device-fields.js';
import { applyDeviceState, type DeviceRecord } from '../../src/domain/device-record.js';
import { computeEnergyFlow, type FlowDevice } from '../../src/domain/energy-flow.js';
import {
  FLOW_DERIVATION,
  flowDerivationTableRows,
} from '../../src/domain/energy-flow-derivation.js';
import { parseTelemetryMessage } from '../../src/domain/event-parse.js';

// docs/events.md "Sign conventions and units" by running it: every `#### Example:` there holds
// the message(s) a producer sends and the energy flow the service then serves, as two ```json
// blocks; each goes through the consumers' parser, the record update and the flow computation.
// A changed number in the doc, or a changed sign rule in the code, fails here.

const doc = readFileSync(new URL('../../docs/events.md', import.meta.url), 'utf8');
const SECTION = '### Sign conventions and units: what producers must send';
const { ingest } = loadConfig({});

// biome-ignore lint/suspicious/noExplicitAny: JSON read from the doc, checked by the parser
type Json = any;
interface DocExample {
  readonly heading: string;
  readonly messages: readonly Json[];
  readonly flow: Record<string, number>;
}

function section(): string {
  const start = doc.indexOf(SECTION);
  if (start === -1) throw new Error(`docs/events.md has no "${SECTION}"`);
  const end = doc.indexOf('\n### ', start + SECTION.length);
  return doc.slice(start, end === -1 ? undefined : end);
}

function docExamples(): DocExample[] {
  const parts = section()
    .split(/^#### /m)
    .slice(1);
  return parts
    .filter((p) => p.startsWith('Example: '))
    .map((p) => {
      const heading = p.slice('Example: '.length, p.indexOf('\n'));
      const blocks = [...p.matchAll(/^```json\n([\s\S]*?)^```$/gm)].map((m) =>
        JSON.parse(m[1] as string),
      );
      if (blocks.length !== 2)
        throw new Error(`"${heading}": two json blocks (message(s), flow), not ${blocks.length}`);
      const [messages, flow] = blocks;
      return { heading, messages: Array.isArray(messages) ? messages : [messages], flow };
    });
}

/** What the service serves for these messages: parsed, applied in order, the flow computed. */
function servedFlow(messages: readonly Json[]): Record<string, number | null> {
  const devices = new Map<string, FlowDevice>();
  let nowMs = Number.NEGATIVE_INFINITY;
  for (const message of messages) {
    const parsed = parseTelemetryMessage(JSON.stringify(message));
    if (!parsed.ok) throw new Error(`${parsed.reason}: ${parsed.detail}`);
    expect(parsed.droppedKeys, 'a key the category does not have').toEqual([]);
    const event = parsed.event;
    if (event.type !== 'device.state') throw new Error(`${event.type} is no observation`);
    const observedMs = parseDateTime(event.observedAt) as number;
    nowMs = Math.max(nowMs, observedMs);
    const id = `${event.category}:${event.deviceId}`;
    const current: DeviceRecord | null = devices.get(id)?.record ?? null;
    const applied = applyDeviceState(current, event, { ...ingest, nowMs: observedMs });
    if (applied.kind !== 'applied') throw new Error(`${id} ${applied.kind}`);
    expect(applied.nulledFields).toEqual([]);
    devices.set(id, { category: event.category, record: applied.record });
  }
  const { data } = computeEnergyFlow([...devices.values()], nowMs, ingest.onlineWindowSeconds);
  if (data === null) throw new Error('no device online');
  const { lastUpdated: _, ...values } = data;
  return values;
}

/** The doc's flow: the fields it lists, every other one null. */
function statedFlow(example: DocExample, served: Record<string, unknown>) {
  expect(Object.keys(served), 'a flow field the flow does not have').toEqual(
    expect.arrayContaining(Object.keys(example.flow)),
  );
  return { ...Object.fromEntries(Object.keys(served).map((k) => [k, null])), ...example.flow };
}

const examples = docExamples();

describe('docs/events.md worked examples', () => {
  it('are found: one per category and the checks over several devices', () => {
    expect(examples.length).toBeGreaterThanOrEqual(DEVICE_CATEGORIES.length + 2);
  });

  it.each(examples.map((e) => [e.heading, e] as const))(
    'serve the flow the doc states: %s',
    (_, example) => {
      const served = servedFlow(example.messages);
      expect(served).toEqual(statedFlow(example, served));
    },
  );

  it("are the AsyncAPI document's deviceState examples, one per category", () => {
    expect(WORKED_EXAMPLES.map((e) => e.category).sort()).toEqual([...DEVICE_CATEGORIES].sort());
    for (const worked of WORKED_EXAMPLES) {
      const inDoc = examples.find((e) => e.heading === worked.situation);
      expect(inDoc, `"#### Example: ${worked.situation}" in docs/events.md`).toBeDefined();
      expect(inDoc?.messages).toEqual([workedExamplePayload(worked)]);
      expect(inDoc?.flow, worked.situation).toEqual(worked.flow);
    }
  });

  it('fail on a flipped sign: the meter example with powerAc turned is another flow', () => {
    const meter = examples.find((e) => e.messages[0].category === 'energyMeter');
    if (!meter) throw new Error('no meter example');
    const flipped = structuredClone(meter.messages) as Json[];
    flipped[0].state.powerAc = -flipped[0].state.powerAc;
    const served = servedFlow(flipped);
    expect(served.gridPower).toBe(-(meter.flow.gridPower as number));
    expect(served).not.toEqual(statedFlow(meter, served));
  });

  it('state the derivation of every flow field, as the AsyncAPI document does', () => {
    const text = section();
    for (const row of flowDerivationTableRows()) expect(text).toContain(`\n${row}\n`);
    const served = Object.keys(servedFlow(examples[0]?.messages ?? []));
    expect(FLOW_DERIVATION.flatMap((r) => r.fields).sort()).toEqual(served.sort());
  });
});
