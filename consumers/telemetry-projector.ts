import type { Logger } from 'pino';
import { Counter, type Registry } from 'prom-client';
import { parseTelemetryMessage } from '../src/domain/event-parse.js';
import type { DeviceReleasedEvent } from '../src/projection/device-released.js';
import { flowExpired } from '../src/projection/flow-of-state.js';
import { type InstallationState, NO_FLOW } from '../src/projection/installation-state.js';
import {
  type EventOutcome,
  type ProjectionEvent,
  refreshFlow,
} from '../src/projection/telemetry-fold.js';
import type { InstallationWrite } from '../src/projection/write-plan.js';
import { flowDueKey, type ReadModelKeys } from '../src/read-model/keys.js';
import type { RedisClient } from '../src/read-model/redis-connection.js';
import { createTelemetryStore, type TelemetryStore } from '../src/read-model/telemetry-store.js';
import type { PassTrace } from '../src/tracing/pass-trace.js';
import type { Rejection } from './dead-letter.js';
import type { KafkaBatch, KafkaMessage } from './kafka/client.js';
import type { ConsumerMetrics } from './metrics.js';
import type { Pool } from './pool.js';
import type { BatchOutcome, Projector } from './projector.js';
import { ContentionError } from './retriable.js';
import type { OwnedState, PartitionState } from './telemetry-state.js';

// device-telemetry.v1, by the owner of each partition: load what memory lacks (one pipeline),
// fold the batch (pure, src/projection/), write to Redis: device index operations, the
// device.released messages they imply (Kafka, on the service's own moves topic, acknowledged;
// consumers/device-moves-projector.ts applies them), then one script per installation
// in its slot (one pipeline). A write refused because its revision moved (another writer: the
// deletion script, a former owner) drops that copy and refolds that installation's events.
// Only then does the runner commit. Between batches, a timer recomputes the flows that time
// alone changed, from memory.

export interface TelemetryProjector extends Projector {
  /** The group assigned these partitions: state of every other partition is forgotten. */
  assigned(partitions: readonly number[]): void;
  /** Recomputes every owned flow whose validity ended (a counted device went offline). */
  ageFlows(): Promise<void>;
}

/** Attempts before a batch is handed back to the runner's retry with backoff. */
const MAX_ATTEMPTS = 8;

/** ingest_device_releases_total: move-protocol events sent, and applied by the moves consumer. */
export const releasesCounter = (registry: Registry): Counter<'direction'> =>
  new Counter({
    name: 'ingest_device_releases_total',
    help: 'device.released / device.seen events of the move protocol, sent or applied',
    labelNames: ['direction'],
    registers: [registry],
  });

export interface TelemetryProjectorDeps {
  topic: string;
  /**
   * Connections lent to one partition's work at a time: a partition's round trips then wait
   * only for its own pipelines, not behind the other partitions' (one connection is FIFO).
   */
  conns: Pool<RedisClient>;
  keys: ReadModelKeys;
  owned: OwnedState;
  clock: () => number;
  futureSkewSeconds: number;
  onlineWindowSeconds: number;
  /** Sends device.released events keyed by their installation; resolves once acknowledged. */
  sendReleases(events: readonly DeviceReleasedEvent[]): Promise<void>;
  releases: Counter<'direction'>;
  metrics: ConsumerMetrics;
  logger: Logger;
  /** Load, fold and write of each pass as spans; absent, tracing is off. */
  trace?: PassTrace;
}

export function createTelemetryProjector(deps: TelemetryProjectorDeps): TelemetryProjector {
  return {
    assigned: (partitions) => assigned(deps, partitions),
    async project(batch: KafkaBatch): Promise<BatchOutcome> {
      const { events, messages, rejections, dropped, miskeyed } = parseBatch(batch.messages);
      const outcomes = await settle(deps, batch.partition, events);
      countOutcomes(deps, messages, outcomes, rejections);
      deps.metrics.droppedFields.inc({ topic: deps.topic }, dropped);
      if (miskeyed > 0) {
        deps.metrics.miskeyed.inc({ topic: deps.topic }, miskeyed);
        deps.logger.warn(
          { topic: deps.topic, partition: batch.partition, miskeyed },
          'telemetry keyed by something other than installationId',
        );
      }
      rejections.sort((a, b) => Number(BigInt(a.message.offset) - BigInt(b.message.offset)));
      return { rejections };
    },
    async ageFlows() {
      for (const partition of deps.owned.partitions()) {
        // Nothing due: no lock, so the partition's batches never queue behind an idle sweep.
        if ((deps.owned.held(partition)?.nextDueMs ?? Number.POSITIVE_INFINITY) >= deps.clock())
          continue;
        await deps.owned.lock(partition, () =>
          deps.conns.use((conn) => agePartition(deps, conn, partition)),
        );
      }
    },
  };
}

const foldContext = (deps: TelemetryProjectorDeps) => ({
  nowMs: deps.clock(),
  futureSkewSeconds: deps.futureSkewSeconds,
  onlineWindowSeconds: deps.onlineWindowSeconds,
});

const storeOf = (
  deps: TelemetryProjectorDeps,
  conn: RedisClient,
  part: PartitionState,
  partition: number,
) =>
  createTelemetryStore({
    conn,
    keys: deps.keys,
    cache: part,
    dueKey: flowDueKey(deps.keys, deps.topic, partition),
    sendReleases: deps.sendReleases,
    trace: deps.trace,
  });

/**
 * Flows of installations not yet in memory that time will change: reads each newly assigned
 * partition's schedule, so the owner recomputes them when due even if no event arrives.
 */
function assigned(deps: TelemetryProjectorDeps, partitions: readonly number[]): void {
  const { owned, keys, topic } = deps;
  const before = new Set(owned.partitions());
  owned.retain(partitions);
  for (const partition of partitions) {
    if (before.has(partition)) continue;
    void owned
      .lock(partition, async () => {
        const flat = await deps.conns.use((conn) =>
          conn.zrangebyscore(flowDueKey(keys, topic, partition), '-inf', '+inf', 'WITHSCORES'),
        );
        const part = owned.partition(partition);
        for (let i = 0; i + 1 < flat.length; i += 2)
          part.scheduleEvicted(Number(flat[i]), Number(flat[i + 1]));
      })
      .catch((error) =>
        deps.logger.warn(
          { err: error, partition },
          'could not read the flow schedule; retried at the next assignment',
        ),
      );
  }
}

/**
 * Each message parsed once: the events to fold and their messages (same positions), the
 * rejections, what was dropped or miskeyed.
 */
function parseBatch(all: readonly KafkaMessage[]) {
  const rejections: Rejection[] = [];
  const events: ProjectionEvent[] = [];
  const messages: KafkaMessage[] = [];
  let dropped = 0;
  let miskeyed = 0;
  for (const message of all) {
    const parsed = parseTelemetryMessage(message.decoded ?? message.value);
    if (!parsed.ok) {
      rejections.push({ message, reason: parsed.reason, detail: parsed.detail });
      continue;
    }
    dropped += parsed.droppedKeys.length;
    if (!sameKey(message.key, parsed.event.installationId)) miskeyed++;
    events.push(parsed.event);
    messages.push(message);
  }
  return { events, messages, rejections, dropped, miskeyed };
}

/** The key is the installation id in decimal (compared without decoding it to a string). */
function sameKey(key: Buffer | null, installationId: number): boolean {
  // Ids have at most 16 digits (event-parse): a longer key cannot name one.
  if (key === null || key.length === 0 || key.length > 16) return false;
  let n = 0;
  for (let i = 0; i < key.length; i++) {
    const digit = (key[i] as number) - 48;
    if (digit < 0 || digit > 9 || (i === 0 && digit === 0)) return false;
    n = n * 10 + digit;
  }
  return n === installationId;
}

/** What became of each event, by its position in the batch's events. */
type Outcomes = Array<EventOutcome | undefined>;

/** Folds and writes the events under the partition's lock, until every one settled. */
async function settle(
  deps: TelemetryProjectorDeps,
  partition: number,
  events: readonly ProjectionEvent[],
): Promise<Outcomes> {
  const outcomes: Outcomes = new Array(events.length);
  await deps.owned.lock(partition, () =>
    deps.conns.use(async (conn) => {
      const store = storeOf(deps, conn, deps.owned.partition(partition), partition);
      // Positions of the events still to settle; null: all of them (no copy for the usual pass).
      let pending: number[] | null = null;
      for (let i = 0; i < MAX_ATTEMPTS && pending?.length !== 0; i++)
        pending = await attempt(deps, store, events, pending, outcomes);
      if (pending?.length !== 0)
        throw new ContentionError(
          `installations kept changing under ${MAX_ATTEMPTS} attempts: ${[
            ...new Set((pending ?? []).map((p) => events[p]?.installationId)),
          ].join(', ')}`,
        );
    }),
  );
  return outcomes;
}

/** One pass over the pending events: records the outcomes it settled, returns those to redo. */
async function attempt(
  deps: TelemetryProjectorDeps,
  store: TelemetryStore,
  events: readonly ProjectionEvent[],
  pending: readonly number[] | null,
  outcomes: Outcomes,
): Promise<number[]> {
  const { topic } = deps;
  const at = (k: number) => (pending === null ? k : (pending[k] as number));
  const these = pending === null ? events : pending.map((p) => events[p] as ProjectionEvent);
  const result = await store.pass(these, foldContext(deps));
  if (result.corrupt.size > 0) {
    deps.metrics.corruptInstallations.inc({ topic }, result.corrupt.size);
    deps.logger.error(
      { topic, installations: Object.fromEntries(result.corrupt) },
      'stored devices unreadable; dead-lettering the events that touch them',
    );
    these.forEach((event, k) => {
      const detail = result.corrupt.get(event.installationId);
      if (detail !== undefined)
        outcomes[at(k)] = { kind: 'rejected', reason: 'processing_error', detail };
    });
  }
  result.outcomes.forEach((outcome, k) => {
    outcomes[at(k)] = outcome;
  });
  return result.redo.map(at);
}

function countOutcomes(
  deps: TelemetryProjectorDeps,
  messages: readonly KafkaMessage[],
  outcomes: Outcomes,
  rejections: Rejection[],
): void {
  const { metrics, topic } = deps;
  let applied = 0;
  let stale = 0;
  let releasesApplied = 0;
  outcomes.forEach((outcome, i) => {
    if (outcome === undefined) return;
    if (outcome.kind === 'rejected') {
      const message = messages[i] as KafkaMessage;
      rejections.push({ message, reason: outcome.reason, detail: outcome.detail });
    } else if (outcome.kind === 'stale') {
      stale++;
    } else if (outcome.kind === 'internal') {
      releasesApplied++;
    } else {
      applied++;
      for (const field of outcome.nulledFields) metrics.outOfRangeNulled.inc({ field });
      if (outcome.moved) metrics.deviceMoves.inc();
    }
  });
  metrics.applied.inc({ topic }, applied);
  metrics.stale.inc({ topic }, stale);
  if (releasesApplied > 0) deps.releases.inc({ direction: 'applied' }, releasesApplied);
}

/** Recomputes the partition's flows whose validity ended, in memory or scheduled (evicted). */
async function agePartition(
  deps: TelemetryProjectorDeps,
  conn: RedisClient,
  partition: number,
): Promise<void> {
  // Revoked while waiting for the lock: the new owner sweeps it.
  const part = deps.owned.held(partition);
  if (!part) return;
  const now = deps.clock();
  const store = storeOf(deps, conn, part, partition);
  // Loaded states are refreshed even if memory's bound evicted them again while loading.
  const candidates = await loadDue(deps, conn, partition, part, store, now);
  const at = { nowMs: now, onlineWindowSeconds: deps.onlineWindowSeconds };
  const writes: InstallationWrite[] = [];
  for (const state of part.values()) candidates.set(state.id, state);
  for (const state of candidates.values()) {
    if (!flowExpired(state.flow, now)) continue;
    const w = refreshFlow(state, at);
    if (w) writes.push(w);
  }
  if (writes.length > 0) {
    const refused = await store.write(writes);
    deps.metrics.flowRefreshes.inc({ trigger: 'ageing' }, writes.length - refused.size);
    // A refused write dropped its copy: the next sweep reads the installation again.
    for (const id of refused) part.scheduleEvicted(id, now);
  }
  // Only now: a failure above leaves the partition due, so the next tick tries again.
  part.recomputeDue();
}

/** Loads the evicted installations whose scheduled flow came due; unschedules the gone ones. */
async function loadDue(
  deps: TelemetryProjectorDeps,
  conn: RedisClient,
  partition: number,
  part: PartitionState,
  store: TelemetryStore,
  now: number,
): Promise<Map<number, InstallationState>> {
  const candidates = new Map<number, InstallationState>();
  const due: number[] = [];
  for (const [id, until] of part.evictedDue) if (until < now) due.push(id);
  if (due.length === 0) return candidates;
  // What loads leaves the schedule for memory (set()); a failed load leaves it due.
  const loaded = await store.load(due);
  for (const [id, state] of loaded) candidates.set(id, state);
  for (const id of due) if (!loaded.has(id)) part.scheduleEvicted(id, 0);
  // Scheduled but no longer expiring (deleted, or written since by another owner).
  const gone = due.filter((id) => !flowExpired(loaded.get(id)?.flow ?? NO_FLOW, now));
  if (gone.length > 0)
    await conn.zrem(flowDueKey(deps.keys, deps.topic, partition), ...gone.map(String));
  return candidates;
}
