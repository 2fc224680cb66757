import type { ChainableCommander } from 'ioredis';
import { changeChannel, type ReadModelKeys } from './keys.js';

// The change feed: every write of what an installation serves (flow data or validity, devices,
// installation record, acl entries, deletion) announces itself on the installation's sharded
// channel, queued in the same MULTI as the write (the Lua scripts SPUBLISH themselves). Redis
// sends the message once the transaction ran, so a receiver that re-reads on it sees the write;
// same hash tag, same slot, so it holds on Redis Cluster too. The payload only says what
// changed; receivers (api/change-feed/) re-read. A redesigned write path keeps this one step:
// after the installation's writes, announceChange in the same transaction.
//
// A write made beneath a sampled span (the consumers trace it) announces `<kind> <traceparent>`,
// the W3C trace context of that span, so the API can link what it does on the announcement to
// the write (docs/operations.md, "Tracing"). Untraced or not sampled, the kind alone, as ever:
// the scripts are given the traceparent as one more argument only when there is one.

/** What changed; receivers treat every kind alike (drop and re-read), the kind is for humans. */
export type ChangeKind = 'flow' | 'devices' | 'installation' | 'acl' | 'deleted';

/** The announcement's payload: the kind, then the write's traceparent when it has one. */
export const changeMessage = (kind: ChangeKind, traceparent?: string): string =>
  traceparent === undefined ? kind : `${kind} ${traceparent}`;

// 'installation', the longest kind: a longer payload carries a traceparent.
const LONGEST_KIND = 12;
const SPACE = 0x20;

/** The traceparent an announcement carries (unchecked: the receiver's propagator checks it). */
export function traceparentOf(message: Buffer): string | undefined {
  if (message.length <= LONGEST_KIND + 1) return undefined;
  const space = message.indexOf(SPACE);
  return space < 0 ? undefined : message.toString('latin1', space + 1);
}

export function announceChange(
  multi: ChainableCommander,
  keys: ReadModelKeys,
  installationId: number,
  kind: ChangeKind,
  traceparent?: string,
): void {
  multi.spublish(changeChannel(keys, installationId), changeMessage(kind, traceparent));
}
