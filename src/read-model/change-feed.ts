import type { ChainableCommander } from 'ioredis';
import { changeChannel, type ReadModelKeys } from './keys.js';

// The change feed: every write of what an installation serves (flow data or validity, devices,
// installation record, acl entries, deletion) announces itself on the installation's sharded
// channel, queued in the same MULTI as the write (the Lua scripts SPUBLISH themselves). Redis
// sends the message once the transaction ran, so a receiver that re-reads on it sees the write;
// same hash tag, same slot, so it holds on Redis Cluster too. The payload only says what
// changed; receivers (api/read-model/) re-read. A redesigned write path keeps this one step:
// after the installation's writes, announceChange in the same transaction.

/** What changed; receivers treat every kind alike (drop and re-read), the kind is for humans. */
export type ChangeKind = 'flow' | 'devices' | 'installation' | 'acl' | 'deleted';

export function announceChange(
  multi: ChainableCommander,
  keys: ReadModelKeys,
  installationId: number,
  kind: ChangeKind,
): void {
  multi.spublish(changeChannel(keys, installationId), kind);
}
