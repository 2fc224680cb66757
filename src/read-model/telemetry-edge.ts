import type { DeviceReleasedEvent } from '../projection/device-released.js';
import type { InstallationState } from '../projection/installation-state.js';
import {
  type EventOutcome,
  type FoldContext,
  fieldOf,
  foldTelemetry,
  type ProjectionEvent,
} from '../projection/telemetry-fold.js';
import type { InstallationWrite } from '../projection/write-plan.js';
import { execOrThrow } from './exec.js';
import { loadCarried, loadForBatch } from './installation-load.js';
import { applyIndexOps, releasesFromIndex, writeInstallations } from './installation-write.js';
import type { ReadModelKeys } from './keys.js';
import type { RedisClient } from './redis-connection.js';
import { withScripts } from './scripts.js';

// One pass of the telemetry write path over a batch: load what the cache lacks (one pipeline;
// more only for devices their installations do not hold), fold (pure), write at the edge: device
// index operations, then the device.released events they imply (the caller sends them,
// acknowledged), then one script per installation (one pipeline). Every command on one slot, no
// WATCH.

/** The states the caller keeps (a partition owner's memory; a plain Map in tools and tests). */
export interface StateCache {
  get(id: number): InstallationState | undefined;
  set(state: InstallationState): void;
  drop(id: number): void;
}

export interface PassResult {
  /** By index into the events: what became of each event settled by this pass. */
  readonly outcomes: Map<number, EventOutcome>;
  /** Indexes of events to fold again: their installation changed under this pass. */
  readonly redo: number[];
  /** Installations whose stored devices cannot be read back, with why; their events are left out. */
  readonly corrupt: Map<number, string>;
  readonly releases: number;
}

export interface TelemetryEdge {
  pass(events: readonly ProjectionEvent[], ctx: FoldContext): Promise<PassResult>;
  /** Writes prepared outside a fold (flow ageing); returns the installations refused. */
  write(writes: readonly InstallationWrite[]): Promise<Set<number>>;
  load(ids: readonly number[]): Promise<Map<number, InstallationState>>;
}

export function createTelemetryEdge(deps: {
  conn: RedisClient;
  keys: ReadModelKeys;
  cache: StateCache;
  /** Resolves once the events are durable in Kafka. */
  sendReleases(events: readonly DeviceReleasedEvent[]): Promise<void>;
  /** The partition's flow schedule (flowDueKey), kept beside the writes; none for tools. */
  dueKey?: string;
}): TelemetryEdge {
  const { keys, cache } = deps;
  const conn = withScripts(deps.conn);

  async function write(writes: readonly InstallationWrite[]): Promise<Set<number>> {
    const revisions = await writeInstallations(conn, keys, writes);
    if (deps.dueKey) await schedule(deps.dueKey, writes, revisions);
    const refused = new Set<number>();
    for (const w of writes) {
      const revision = revisions.get(w.id);
      if (revision === null || revision === undefined) {
        cache.drop(w.id);
        refused.add(w.id);
      } else {
        cache.set({ ...w.next, revision });
      }
    }
    return refused;
  }

  /** One command in the partition's slot: when each written flow stops being valid. */
  async function schedule(
    key: string,
    writes: readonly InstallationWrite[],
    revisions: ReadonlyMap<number, number | null>,
  ): Promise<void> {
    const due: Array<number | string> = [];
    const never: string[] = [];
    for (const w of writes) {
      if (w.flow === null || revisions.get(w.id) == null) continue;
      if (w.flow.validUntilMs > 0) due.push(w.flow.validUntilMs, String(w.id));
      else never.push(String(w.id));
    }
    const pipeline = conn.pipeline();
    if (due.length > 0) pipeline.zadd(key, ...due);
    if (never.length > 0) pipeline.zrem(key, ...never);
    if (due.length > 0 || never.length > 0) await execOrThrow(pipeline);
  }

  return {
    write,
    async load(ids) {
      const loaded = await loadForBatch(conn, keys, ids, []);
      for (const state of loaded.states.values()) cache.set(state);
      return loaded.states;
    },
    async pass(all, ctx) {
      const states = new Map<number, InstallationState>();
      const missing = new Set<number>();
      for (const event of all) {
        const id = event.installationId;
        if (states.has(id) || missing.has(id)) continue;
        const state = cache.get(id);
        if (state) states.set(id, state);
        else missing.add(id);
      }
      // Index entries of the devices the fold must locate: every one an event does not find in
      // its installation. Installations not in memory are read first; only the devices they turn
      // out not to hold (new ones, moves) cost a second read, not every device of a cold one.
      const indexFields = new Set<string>();
      for (const event of all) {
        const field = fieldOf(event.category, event.deviceId);
        const state = states.get(event.installationId);
        if (event.type !== 'device.state' || (state && !state.devices.has(field)))
          indexFields.add(field);
      }
      const loaded = await loadForBatch(conn, keys, [...missing], [...indexFields]);
      for (const state of loaded.states.values()) {
        cache.set(state);
        states.set(state.id, state);
      }
      const unheld = new Set<string>();
      for (const event of all) {
        if (!missing.has(event.installationId) || loaded.corrupt.has(event.installationId))
          continue;
        const field = fieldOf(event.category, event.deviceId);
        if (!indexFields.has(field) && !states.get(event.installationId)?.devices.has(field))
          unheld.add(field);
      }
      if (unheld.size > 0)
        for (const [field, entry] of (await loadForBatch(conn, keys, [], [...unheld])).index)
          loaded.index.set(field, entry);
      // Devices met in another installation than the one holding them: carry their records on.
      const wanted = new Map<string, number>();
      for (const event of all) {
        if (event.type !== 'device.state') continue;
        const field = fieldOf(event.category, event.deviceId);
        const owner = loaded.index.get(field)?.inst ?? null;
        const held = states.get(event.installationId)?.devices.has(field) ?? false;
        if (owner !== null && owner !== event.installationId && !held) wanted.set(field, owner);
      }
      const carried = await loadCarried(conn, keys, wanted);

      const positions: number[] = [];
      const events: ProjectionEvent[] = [];
      all.forEach((event, i) => {
        if (loaded.corrupt.has(event.installationId)) return;
        positions.push(i);
        events.push(event);
      });
      const result = foldTelemetry({ states, index: loaded.index, carried }, events, ctx);
      const { plan } = result;
      const outcomes = new Map<number, EventOutcome>();
      const indexResults = await applyIndexOps(conn, keys, plan.index);
      const outdated = new Set<number>();
      for (const [field, list] of plan.index)
        list.forEach((op, i) => {
          if (indexResults.get(field)?.[i]?.done === false) outdated.add(op.inst);
        });
      if (outdated.size > 0) {
        // The fold read an index entry another owner changed since: fold everything again.
        for (const id of outdated) cache.drop(id);
        return { outcomes, redo: positions, corrupt: loaded.corrupt, releases: 0 };
      }
      const releases = [
        ...plan.releases,
        ...releasesFromIndex(plan.index, indexResults, plan.releases),
      ];
      if (releases.length > 0) await deps.sendReleases(releases);
      const refused = await write([...plan.installations.values()]);
      const redo: number[] = [];
      events.forEach((event, j) => {
        const i = positions[j] as number;
        if (refused.has(event.installationId)) redo.push(i);
        else outcomes.set(i, result.outcomes[j] as EventOutcome);
      });
      return { outcomes, redo, corrupt: loaded.corrupt, releases: releases.length };
    },
  };
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
