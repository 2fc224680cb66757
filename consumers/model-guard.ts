import type { Logger } from 'pino';
import { markEpochComplete, readEpoch, writeEpoch } from '../src/read-model/epoch.js';
import type { ReadModelKeys } from '../src/read-model/keys.js';
import type { RedisClient } from '../src/read-model/redis-connection.js';
import type { Admin, PartitionOffsets } from './kafka/client.js';
import { isRetriable } from './retriable.js';

// Notices a read model that lost its data (docs/reliability.md): the epoch marker is written
// when the model is built from the topics' start; missing later, or missing at start under
// groups that already committed offsets, means Redis was wiped. Projecting on would write
// partial records and dead-letter valid events as `missing_required_fields`, so the consumers
// stop instead and name the one command that rebuilds the model.

/** The command as this process runs: compiled (`npm run build`, the image) or from the sources. */
export const REBUILD_COMMAND = import.meta.url.endsWith('.js')
  ? 'node dist/tools/rebuild.js --execute'
  : 'node --import tsx tools/rebuild.ts --execute';

/** Retriable, so a batch about to dead-letter waits (uncommitted) until the process exits. */
export class ReadModelLostError extends Error {
  readonly retriable = true;
  constructor() {
    super(`the read model lost its data (epoch marker missing); run: ${REBUILD_COMMAND}`);
  }
}

export interface ModelGuard {
  /** True once the loss was seen; it never turns back (a rebuild restarts the process). */
  readonly lost: () => boolean;
  /** Throws ReadModelLostError when the marker is gone (one GET; used before dead-lettering). */
  assertIntact(): Promise<void>;
  stop(): void;
}

export async function startModelGuard(deps: {
  redis: RedisClient;
  keys: ReadModelKeys;
  admin: Admin;
  groups: ReadonlyArray<{ readonly topic: string; readonly groupId: string }>;
  intervalMs: number;
  clock: () => number;
  logger: Logger;
  onLost: () => void;
}): Promise<ModelGuard> {
  let lost = false;
  const declareLost = (why: string) => {
    if (lost) return;
    lost = true;
    deps.logger.fatal(
      { why, rebuild: REBUILD_COMMAND },
      `the read model lost its data (${why}); consuming stopped so no valid event is ` +
        `dead-lettered. Stop every consumer process, then run: ${REBUILD_COMMAND}`,
    );
    deps.onLost();
  };
  // A model being (re)built is complete, and the API serves, once every group committed up to
  // the ends its topic had when this process first saw the build unfinished. Not the ends of
  // the moment: under steady production those move on, and the build would never finish.
  let build: { epoch: string; ends: ReadonlyArray<readonly PartitionOffsets[]> } | null = null;
  const reachedBuildEnds = async (epoch: string) => {
    if (build?.epoch !== epoch) {
      const ends = await Promise.all(deps.groups.map((g) => deps.admin.endOffsets(g.topic)));
      build = { epoch, ends };
    }
    for (const [i, g] of deps.groups.entries()) {
      const committed = await deps.admin.committedOffsets(g.groupId, g.topic);
      for (const e of build.ends[i] ?? []) {
        const at = committed.find((c) => c.partition === e.partition)?.offset ?? e.start;
        if (BigInt(at) < BigInt(e.end)) return false;
      }
    }
    return true;
  };
  const check = async () => {
    const marker = await readEpoch(deps.redis, deps.keys);
    if (marker === null) declareLost('epoch marker missing');
    else if (!marker.complete && !lost && (await reachedBuildEnds(marker.id))) {
      await markEpochComplete(deps.redis, deps.keys, marker);
      deps.logger.info(
        { epoch: marker.id },
        'read model built: the consumers reached the topics end as of the build start',
      );
    }
  };

  const firstCheck = async () => {
    if ((await readEpoch(deps.redis, deps.keys)) === null) {
      const committed = await Promise.all(
        deps.groups.map((g) => deps.admin.committedOffsets(g.groupId, g.topic)),
      );
      if (committed.flat().some((c) => c.offset !== null && BigInt(c.offset) > 0n)) {
        declareLost('epoch marker missing while the consumer groups have committed offsets');
      } else {
        const marker = await writeEpoch(deps.redis, deps.keys, deps.clock());
        deps.logger.info({ epoch: marker.id }, 'building the read model from the topics start');
      }
    }
  };
  // At start Kafka may not know the group's coordinator yet, or Redis may be restarting: wait.
  for (let delayMs = 200; ; delayMs = Math.min(delayMs * 2, 5_000)) {
    try {
      await firstCheck();
      break;
    } catch (error) {
      if (!isRetriable(error)) throw error;
      deps.logger.warn({ err: error, delayMs }, 'could not check the read model epoch; retrying');
      await new Promise((resolve) => setTimeout(resolve, delayMs));
    }
  }
  await check().catch(() => undefined);
  const timer = setInterval(() => {
    check().catch(() => {
      // Redis unreachable: readiness and the runners' retries say so already.
    });
  }, deps.intervalMs);
  timer.unref();
  return {
    lost: () => lost,
    async assertIntact() {
      await check();
      if (lost) throw new ReadModelLostError();
    },
    stop: () => clearInterval(timer),
  };
}
