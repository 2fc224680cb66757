import type { DeviceReleasedEvent } from '../projection/device-released.js';
import {
  type CarriedDevice,
  type DeviceIndexEntry,
  type InstallationState,
  NO_INDEX_ENTRY,
} from '../projection/installation-state.js';
import {
  type EventOutcome,
  type FoldContext,
  fieldOf,
  foldTelemetry,
  type ProjectionEvent,
} from '../projection/telemetry-fold.js';
import type { IndexOp, InstallationWrite } from '../projection/write-plan.js';
import { type PassTrace, type PhaseDone, untraced } from '../tracing/pass-trace.js';
import { type Loaded, loadForBatch } from './installation-load.js';
import {
  adoptDevices,
  applyIndexOps,
  type IndexResult,
  releasesFromIndex,
  writeInstallations,
} from './installation-write.js';
import type { ReadModelKeys } from './keys.js';
import type { RedisClient } from './redis-connection.js';
import { type ScriptedRedis, withScripts } from './scripts.js';

// One pass of the telemetry write path over a batch: load what the cache lacks (one pipeline;
// more only for devices their installations do not hold), fold, write to Redis: device index
// operations, then one script per installation (one pipeline), then the device.released events
// they imply (the caller sends them, acknowledged). Every command on one slot, no WATCH.
// The fold updates the cached states in place: a state whose write did not land (refused,
// failed, or the pass folds again) is dropped or read back, so memory never holds what Redis
// does not.

/** The states the caller keeps (a partition owner's memory; a plain Map in tools and tests). */
export interface StateCache {
  get(id: number): InstallationState | undefined;
  set(state: InstallationState): void;
  drop(id: number): void;
}

export interface PassResult {
  /** By index into the events: what became of each event settled by this pass (a hole: not). */
  readonly outcomes: readonly (EventOutcome | undefined)[];
  /** Indexes of events to fold again: their installation changed under this pass. */
  readonly redo: number[];
  /** Installations whose stored devices cannot be read back, with why; their events are left out. */
  readonly corrupt: Map<number, string>;
  readonly releases: number;
}

export interface TelemetryStore {
  pass(events: readonly ProjectionEvent[], ctx: FoldContext): Promise<PassResult>;
  /** Writes prepared outside a fold (flow ageing); returns the installations refused. */
  write(writes: readonly InstallationWrite[]): Promise<Set<number>>;
  load(ids: readonly number[]): Promise<Map<number, InstallationState>>;
}

export function createTelemetryStore(deps: {
  conn: RedisClient;
  keys: ReadModelKeys;
  cache: StateCache;
  /** Resolves once the events are durable in Kafka. */
  sendReleases(events: readonly DeviceReleasedEvent[]): Promise<void>;
  /** The partition's flow schedule (flowDueKey), kept beside the writes; none for tools. */
  dueKey?: string;
  /** The pass's load, fold and write as tracing spans; absent, tracing is off. */
  trace?: PassTrace;
}): TelemetryStore {
  const { keys, cache } = deps;
  const conn = withScripts(deps.conn);

  async function write(writes: readonly InstallationWrite[]): Promise<Set<number>> {
    // Traced: the sampled span writing them (the pass's `write`), announced with each change.
    const traceparent = deps.trace?.traceparent();
    const revisions = await writeInstallations(conn, keys, writes, deps.dueKey, traceparent);
    const refused = new Set<number>();
    for (const w of writes) {
      const revision = revisions.get(w.id);
      if (revision === null || revision === undefined) {
        cache.drop(w.id);
        refused.add(w.id);
      } else {
        // The script answers expectedRevision + 1, which `next` already holds: no copy then.
        cache.set(revision === w.next.revision ? w.next : { ...w.next, revision });
      }
    }
    return refused;
  }

  /** Memory's states of the events' installations, and the installations memory lacks. */
  function fromMemory(all: readonly ProjectionEvent[]) {
    const states = new Map<number, InstallationState>();
    const missing = new Set<number>();
    for (const event of all) {
      const id = event.installationId;
      if (states.has(id) || missing.has(id)) continue;
      const state = cache.get(id);
      if (state) states.set(id, state);
      else missing.add(id);
    }
    return { states, missing };
  }

  return {
    write,
    async load(ids) {
      const loaded = await loadForBatch(conn, keys, ids, []);
      for (const state of loaded.states.values()) cache.set(state);
      return loaded.states;
    },
    async pass(all, ctx) {
      const { states, missing } = fromMemory(all);
      const passDeps = {
        conn,
        keys,
        cache,
        states,
        missing,
        write,
        sendReleases: deps.sendReleases,
        trace: deps.trace ?? untraced,
      };
      try {
        return await passOver(passDeps, all, ctx);
      } catch (error) {
        // The fold may have updated these states for writes that did not land: read them again.
        for (const event of all) cache.drop(event.installationId);
        throw error;
      }
    },
  };
}

/** What a pass works with: the store's connection, memory and writer. */
interface PassDeps {
  readonly conn: ScriptedRedis;
  readonly keys: ReadModelKeys;
  readonly cache: StateCache;
  readonly states: Map<number, InstallationState>;
  readonly missing: ReadonlySet<number>;
  write(writes: readonly InstallationWrite[]): Promise<Set<number>>;
  sendReleases(events: readonly DeviceReleasedEvent[]): Promise<void>;
  readonly trace: PassTrace;
}

/** Installation ids a write span lists, so a trace search finds the write of one installation. */
const TRACED_IDS = 64;

async function passOver(
  deps: PassDeps,
  all: readonly ProjectionEvent[],
  ctx: FoldContext,
): Promise<PassResult> {
  const { conn, keys, cache, states, trace } = deps;
  const { loaded, positions, events } = await trace.phase('load', async (done) => {
    const pass = await loadPass(conn, keys, all, deps.missing);
    done(() => ({
      installations: deps.missing.size,
      devices: pass.indexFields,
      redis_round_trips: deps.missing.size + pass.indexFields > 0 ? 1 : 0,
    }));
    return pass;
  });
  for (const state of loaded.states.values()) {
    cache.set(state);
    states.set(state.id, state);
  }
  const restore = (back: Loaded) => {
    // Unreadable since the pass began: retried, the pass's first read dead-letters its events.
    if (back.corrupt.size > 0)
      throw Object.assign(new Error('stored devices became unreadable during a pass'), {
        retriable: true,
      });
    for (const [id, state] of back.states) {
      cache.set(state);
      states.set(id, state);
    }
  };
  const settled = { states, index: loaded.index, restore };
  const folded = await trace.phase('fold', async (done) => {
    const f = await foldSettled(conn, keys, settled, events, ctx);
    done(() => ({
      events: events.length,
      installations: states.size,
      redis_round_trips: f.roundTrips,
    }));
    return f;
  });
  const outcomes: (EventOutcome | undefined)[] = new Array(all.length);
  const written = await trace.phase('write', (done) => writePass(deps, folded, done));
  if (written === null) {
    // The fold read an index entry another owner changed since: fold everything again, from
    // states read back (this fold updated them in place).
    for (const id of states.keys()) cache.drop(id);
    return { outcomes, redo: positions, corrupt: loaded.corrupt, releases: 0 };
  }
  const redo: number[] = [];
  events.forEach((event, j) => {
    const i = positions[j] as number;
    if (written.refused.has(event.installationId)) redo.push(i);
    else outcomes[i] = folded.result.outcomes[j];
  });
  return { outcomes, redo, corrupt: loaded.corrupt, releases: written.releases };
}

/**
 * The pass's writes: device index operations, then the installations (one pipeline), then the
 * releases they imply. Null when an index operation was refused (nothing else was written).
 */
async function writePass(
  deps: PassDeps,
  { result, adopted }: Awaited<ReturnType<typeof foldSettled>>,
  done: PhaseDone,
): Promise<{ refused: Set<number>; releases: number } | null> {
  const { plan } = result;
  const claims = new Map<string, readonly IndexOp[]>();
  plan.index.forEach((ops, field) => {
    if (!adopted.has(field)) claims.set(field, ops);
  });
  const indexResults = await applyIndexOps(deps.conn, deps.keys, claims);
  let roundTrips = claims.size > 0 ? 1 : 0;
  if (anyRefused(indexResults)) {
    done(() => ({ devices: claims.size, redis_round_trips: roundTrips, refused: claims.size }));
    return null;
  }
  const releases = [...plan.releases, ...releasesFromIndex(claims, indexResults, plan.releases)];
  // Released only once the writes landed: the moves consumer runs beside this one, and a
  // release applied before the write that put the device in its old installation would find
  // nothing to release. A crash in between replays the batch, whose claims send them again.
  const writes = [...plan.installations.values()];
  const refused = await deps.write(writes);
  if (writes.length > 0) roundTrips++;
  if (releases.length > 0) await deps.sendReleases(releases);
  done(() => ({
    installations: writes.length,
    devices: writes.reduce((n, w) => n + w.set.size + w.removed.size, 0),
    redis_round_trips: roundTrips,
    releases: releases.length,
    refused: refused.size,
    installation_ids: writes.slice(0, TRACED_IDS).map((w) => w.id),
  }));
  return { refused, releases: releases.length };
}

/**
 * The first read of a pass: the installations memory lacks and the index entries of removals
 * and internal events (a device.state event's device is claimed without a read, adoptDevices,
 * its entry read only if taken). Events of unreadable installations are left out.
 */
async function loadPass(
  conn: ScriptedRedis,
  keys: ReadModelKeys,
  all: readonly ProjectionEvent[],
  missing: ReadonlySet<number>,
) {
  const indexFields = new Set<string>();
  for (const event of all)
    if (event.type !== 'device.state') indexFields.add(fieldOf(event.category, event.deviceId));
  const loaded = await loadForBatch(conn, keys, [...missing], [...indexFields]);
  for (const field of indexFields)
    if (!loaded.index.has(field)) loaded.index.set(field, NO_INDEX_ENTRY);
  const positions: number[] = [];
  const events: ProjectionEvent[] = [];
  all.forEach((event, i) => {
    if (loaded.corrupt.has(event.installationId)) return;
    positions.push(i);
    events.push(event);
  });
  return { loaded, positions, events, indexFields: indexFields.size };
}

/** Whether a newer claim or removal refused one of the index operations. */
function anyRefused(results: ReadonlyMap<string, readonly IndexResult[]>): boolean {
  for (const list of results.values()) if (list.some((r) => !r.done)) return true;
  return false;
}

/**
 * Folds until every device the plan claims without having read its index entry is settled:
 * adopted (it was new), or found elsewhere, whose entry and carried record the fold then gets.
 * A device claimed more than once in the batch is read instead (its claims then go as usual).
 */
async function foldSettled(
  conn: ScriptedRedis,
  keys: ReadModelKeys,
  given: {
    readonly states: ReadonlyMap<number, InstallationState>;
    readonly index: Map<string, DeviceIndexEntry>;
    /** Puts installations read back into `states` (and memory). */
    restore(back: Loaded): void;
  },
  events: readonly ProjectionEvent[],
  ctx: FoldContext,
) {
  const { states, index } = given;
  const adopted = new Set<string>();
  const carried = new Map<string, CarriedDevice>();
  let roundTrips = 0;
  for (;;) {
    const result = foldTelemetry({ states, index, carried }, events, ctx);
    const single = new Map<string, IndexOp>();
    const read: string[] = [];
    // forEach: no [field, ops] array per device.
    result.plan.index.forEach((ops, field) => {
      if (index.has(field) || adopted.has(field)) return;
      const [op] = ops;
      if (ops.length === 1 && op?.kind === 'claim') single.set(field, op);
      else read.push(field);
    });
    if (single.size === 0 && read.length === 0) return { result, adopted, roundTrips };
    const [found, loaded] = await Promise.all([
      adoptDevices(conn, keys, single),
      loadForBatch(conn, keys, [], read),
    ]);
    roundTrips += (single.size > 0 ? 1 : 0) + (read.length > 0 ? 1 : 0);
    let again = read.length > 0;
    for (const field of read) index.set(field, loaded.index.get(field) ?? NO_INDEX_ENTRY);
    for (const field of single.keys()) {
      const entry = found.get(field);
      if (entry === undefined) adopted.add(field);
      else {
        index.set(field, entry);
        again = true;
      }
    }
    if (!again) return { result, adopted, roundTrips };
    // The fold updated what it wrote in place: fold again from the states as stored, with the
    // records of devices found elsewhere. Rare: a move, or a device claimed twice in a batch.
    const touched = [...result.plan.installations.keys()];
    const back = await loadForBatch(conn, keys, touched, [], wantedCarried(events, index));
    roundTrips++;
    given.restore(back);
    for (const [field, device] of back.carried) carried.set(field, device);
  }
}

/**
 * Devices met in another installation than the one the index names: their records carry on
 * (read also where the installation still holds the device: the fold then keeps its own).
 */
function wantedCarried(
  events: readonly ProjectionEvent[],
  index: ReadonlyMap<string, DeviceIndexEntry>,
): Map<string, number> {
  const wanted = new Map<string, number>();
  for (const event of events) {
    if (event.type !== 'device.state') continue;
    const field = fieldOf(event.category, event.deviceId);
    const owner = index.get(field)?.inst ?? null;
    if (owner !== null && owner !== event.installationId) wanted.set(field, owner);
  }
  return wanted;
}

/** A StateCache over a plain Map (tools, tests, the seed of API tests). */
export function mapCache(): StateCache & { readonly states: Map<number, InstallationState> } {
  const states = new Map<number, InstallationState>();
  return {
    states,
    get: (id) => states.get(id),
    set: (state) => void states.set(state.id, state),
    drop: (id) => void states.delete(id),
  };
}
