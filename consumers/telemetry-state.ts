import { Counter, Gauge, type Registry } from 'prom-client';
import type { InstallationState } from '../src/projection/installation-state.js';

// The state a telemetry consumer owns: per assigned partition, the installations keyed to it,
// least recently used first out beyond a bound. Loaded on first sight after an assignment,
// dropped with the partition on revocation. A stale copy is harmless (every write is refused
// unless the installation's revision still matches); keeping it exact is only about speed.
// Batches of one partition and its flow ageing run one at a time (lock).

export interface PartitionState {
  /** Counts a hit or a miss; a hit becomes the most recently used. */
  get(id: number): InstallationState | undefined;
  set(state: InstallationState): void;
  drop(id: number): void;
  values(): IterableIterator<InstallationState>;
  readonly size: number;
  /** Expiring flows of installations evicted from memory: installationId -> validUntil (ms). */
  readonly evictedDue: ReadonlyMap<number, number>;
  /** Schedules the flow of an installation not in memory (or drops it from the schedule: 0). */
  scheduleEvicted(id: number, validUntilMs: number): void;
  /**
   * No flow held or scheduled here expires before this (epoch ms, a lower bound), so the flow
   * sweep passes the partition by, without its lock, until then.
   */
  readonly nextDueMs: number;
  /** Sets nextDueMs to the earliest flow held or scheduled (a sweep, once its writes are done). */
  recomputeDue(): void;
}

export interface OwnedState {
  /** The partition's state, created on first use (a batch of an assigned partition). */
  partition(partition: number): PartitionState;
  /** The partition's state if it is still assigned. */
  held(partition: number): PartitionState | undefined;
  /** Keeps the partitions of the new assignment, forgets every other. */
  retain(partitions: readonly number[]): void;
  /** Runs `work` after the partition's previous work finished. */
  lock<T>(partition: number, work: () => Promise<T>): Promise<T>;
  partitions(): number[];
}

export function createOwnedState(deps: {
  installationsPerPartition: number;
  registry: Registry;
}): OwnedState {
  const registers = [deps.registry];
  const lookups = new Counter({
    name: 'ingest_state_lookups_total',
    help: 'Installation state looked up in the partition owner memory: hit, or miss (read from Redis)',
    labelNames: ['result'],
    registers,
  });
  const evictions = new Counter({
    name: 'ingest_state_evictions_total',
    help: 'Installation states evicted from memory (least recently used beyond the bound)',
    registers,
  });
  const partitions = new Map<number, PartitionState>();
  const locks = new Map<number, Promise<unknown>>();
  new Gauge({
    name: 'ingest_state_installations',
    help: 'Installation states held in memory by this consumer',
    registers,
    collect() {
      let total = 0;
      for (const p of partitions.values()) total += p.size;
      this.set(total);
    },
  });

  const create = () =>
    createPartitionState(deps.installationsPerPartition, {
      hit: () => lookups.inc({ result: 'hit' }),
      miss: () => lookups.inc({ result: 'miss' }),
      evicted: () => evictions.inc(),
    });

  return {
    partition(partition) {
      let p = partitions.get(partition);
      if (!p) {
        p = create();
        partitions.set(partition, p);
      }
      return p;
    },
    held: (partition) => partitions.get(partition),
    retain(assigned) {
      const keep = new Set(assigned);
      for (const partition of partitions.keys())
        if (!keep.has(partition)) partitions.delete(partition);
    },
    lock(partition, work) {
      const previous = locks.get(partition) ?? Promise.resolve();
      const next = previous.then(work, work);
      locks.set(
        partition,
        next.catch(() => undefined),
      );
      return next;
    },
    partitions: () => [...partitions.keys()],
  };
}

/** One partition's installations, least recently used first out beyond `bound`. */
function createPartitionState(
  bound: number,
  count: { hit(): void; miss(): void; evicted(): void },
): PartitionState {
  const states = new Map<number, InstallationState>();
  const evictedDue = new Map<number, number>();
  let nextDueMs = Number.POSITIVE_INFINITY;
  const due = (validUntilMs: number) => {
    if (validUntilMs > 0 && validUntilMs < nextDueMs) nextDueMs = validUntilMs;
  };
  return {
    get(id) {
      const state = states.get(id);
      if (state === undefined) {
        count.miss();
        return undefined;
      }
      count.hit();
      states.delete(id);
      states.set(id, state);
      return state;
    },
    set(state) {
      states.delete(state.id);
      states.set(state.id, state);
      evictedDue.delete(state.id);
      due(state.flow.validUntilMs);
      while (states.size > bound) {
        const [oldest] = states.values();
        if (!oldest) break;
        states.delete(oldest.id);
        count.evicted();
        // Its flow already bounds nextDueMs: set() lowered it, and only recomputeDue() raises it.
        if (oldest.flow.validUntilMs > 0) evictedDue.set(oldest.id, oldest.flow.validUntilMs);
      }
    },
    drop(id) {
      states.delete(id);
    },
    values: () => states.values(),
    get size() {
      return states.size;
    },
    evictedDue,
    scheduleEvicted(id, validUntilMs) {
      if (validUntilMs > 0) {
        evictedDue.set(id, validUntilMs);
        due(validUntilMs);
      } else evictedDue.delete(id);
    },
    get nextDueMs() {
      return nextDueMs;
    },
    recomputeDue() {
      nextDueMs = Number.POSITIVE_INFINITY;
      for (const state of states.values()) due(state.flow.validUntilMs);
      for (const until of evictedDue.values()) due(until);
    },
  };
}
