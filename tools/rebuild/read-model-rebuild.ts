import type { Logger } from 'pino';
import type { KafkaClient } from '../../consumers/kafka/client.js';
import { writeEpoch } from '../../src/read-model/epoch.js';
import { createKeys } from '../../src/read-model/keys.js';
import { type RedisClient, scanKeys } from '../../src/read-model/redis-connection.js';
import { type GroupState, groupStates } from '../destructive.js';

// The operator's one command for a read model that lost its data (docs/operations.md,
// "Rebuilding the read model"): empties the key prefix, moves every consumer group to the
// start of its topic, then writes a new epoch marker. The consumers started afterwards replay
// every event still retained into the empty model; replaying is idempotent.

export interface RebuildDeps {
  readonly kafka: KafkaClient;
  readonly redis: RedisClient;
  readonly keyPrefix: string;
  readonly groups: ReadonlyArray<{ readonly topic: string; readonly groupId: string }>;
}

export interface RebuildPlan {
  /** Keys under the prefix now, all of which a rebuild deletes. */
  readonly keys: number;
  /** Events the consumers will replay, per topic. */
  readonly toReplay: Readonly<Record<string, string>>;
  readonly groups: readonly GroupState[];
}

export interface RebuildResult {
  readonly keysDeleted: number;
  /** Events the consumers will replay, per topic. */
  readonly toReplay: Readonly<Record<string, string>>;
}

const scanPattern = (prefix: string) => `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`;

/** What a rebuild would do, read only: the keys it deletes, the events replayed, the groups. */
export async function planRebuild(deps: RebuildDeps): Promise<RebuildPlan> {
  const admin = await deps.kafka.createAdmin();
  try {
    const toReplay: Record<string, string> = {};
    for (const { topic } of deps.groups) toReplay[topic] = await retained(admin, topic);
    let keys = 0;
    for await (const found of scanKeys(deps.redis, scanPattern(deps.keyPrefix)))
      keys += found.length;
    const groups = await groupStates(
      admin,
      deps.groups.map((g) => g.groupId),
    );
    return { keys, toReplay, groups };
  } finally {
    await admin.disconnect();
  }
}

async function retained(
  admin: Awaited<ReturnType<KafkaClient['createAdmin']>>,
  topic: string,
): Promise<string> {
  let total = 0n;
  for (const end of await admin.endOffsets(topic)) total += BigInt(end.end) - BigInt(end.start);
  return total.toString();
}

export async function rebuildReadModel(
  deps: RebuildDeps & { readonly clock: () => number; readonly logger: Logger },
): Promise<RebuildResult> {
  const admin = await deps.kafka.createAdmin();
  try {
    // Offsets first: a group with members makes the broker refuse, before anything is deleted
    // (the command checks the groups before, this holds when a consumer joined since).
    const toReplay: Record<string, string> = {};
    for (const { topic, groupId } of deps.groups) {
      const total = await retained(admin, topic);
      await admin.resetToStart(groupId, topic);
      toReplay[topic] = total;
    }
    // One key per command, so each touches one slot; on a cluster, every master is scanned.
    let keysDeleted = 0;
    for await (const found of scanKeys(deps.redis, scanPattern(deps.keyPrefix)))
      for (const key of found) keysDeleted += await deps.redis.unlink(key);
    // Last: a rebuild interrupted before this point leaves the marker missing, so the
    // consumers still refuse to start and the command is simply run again.
    const marker = await writeEpoch(deps.redis, createKeys(deps.keyPrefix), deps.clock(), {
      replace: true,
    });
    deps.logger.warn({ keysDeleted, toReplay, epoch: marker.id }, 'read model reset for a rebuild');
    return { keysDeleted, toReplay };
  } finally {
    await admin.disconnect();
  }
}
