import { describe, expect, it } from 'vitest';
import { flowEvent, KEEP_ALIVE, revokedEvent } from '../../api/streams/sse.js';
import { changeMessage, traceparentOf } from '../../src/read-model/change-feed.js';
import { changeChannel, createKeys, parseChangeChannel } from '../../src/read-model/keys.js';

// The change feed's channel names (the API subscribes by them and reads the installation back
// from each message), its payload (the kind, and a traced write's traceparent) and the stream's
// Server-Sent Events framing.
describe('change channel', () => {
  const keys = createKeys('rm:');

  it('carries the installation hash tag, so it shares the slot of its keys', () => {
    expect(changeChannel(keys, 42)).toMatch(/\{i42\}/);
    expect(changeChannel(keys, 42).match(/\{[^}]*\}/)?.[0]).toBe(
      keys.flow(42).match(/\{[^}]*\}/)?.[0],
    );
  });

  it('reads the installation back, for negative ids too, and only under its own prefix', () => {
    for (const id of [0, 7, -3, 9_007_199_254_740_991]) {
      expect(parseChangeChannel(keys, changeChannel(keys, id))).toBe(id);
    }
    expect(parseChangeChannel(keys, changeChannel(createKeys('other:'), 7))).toBeNull();
    expect(parseChangeChannel(keys, keys.flow(7))).toBeNull();
    expect(parseChangeChannel(keys, 'rm:{i7}:x:changed:extra')).toBeNull();
  });
});

describe('change message', () => {
  const traceparent = `00-${'a1'.repeat(16)}-${'b2'.repeat(8)}-01`;

  it('is the kind alone for an untraced write, and the kind then its traceparent for a traced one', () => {
    for (const kind of ['flow', 'devices', 'installation', 'acl', 'deleted'] as const) {
      expect(changeMessage(kind)).toBe(kind);
      expect(traceparentOf(Buffer.from(changeMessage(kind)))).toBeUndefined();
      expect(changeMessage(kind, traceparent)).toBe(`${kind} ${traceparent}`);
      expect(traceparentOf(Buffer.from(changeMessage(kind, traceparent)))).toBe(traceparent);
    }
  });

  it('reads no traceparent out of a payload of another shape', () => {
    expect(traceparentOf(Buffer.from(''))).toBeUndefined();
    expect(traceparentOf(Buffer.from('installation-without-a-space'))).toBeUndefined();
  });
});

describe('Server-Sent Events framing', () => {
  it('writes one energyFlow event: event, id, one data line, blank line', () => {
    expect(flowEvent('"abc"', '{"valid":true}')).toBe(
      'event: energyFlow\nid: "abc"\ndata: {"valid":true}\n\n',
    );
  });

  it('gives the revoked event data, which EventSource needs to dispatch it', () => {
    expect(revokedEvent('{"valid":false,"error":"UNAUTHORIZED"}')).toBe(
      'event: revoked\ndata: {"valid":false,"error":"UNAUTHORIZED"}\n\n',
    );
  });

  it('keeps the stream alive with a comment line', () => {
    expect(KEEP_ALIVE.startsWith(':')).toBe(true);
    expect(KEEP_ALIVE.endsWith('\n\n')).toBe(true);
  });
});
