import type { DeviceCategory } from '../domain/device-fields.js';
import type { DeviceMeta, DeviceRecord } from '../domain/device-record.js';

// What the owner of a telemetry partition keeps in memory per installation: exactly what the
// fold needs, loaded from Redis once (src/read-model/installation-load.ts), so projecting a
// batch never reads Redis in the middle.

/**
 * One device as the installation holds it: the served record and what the fold derives from it.
 * Its JSON is not kept: the write edge serializes the devices a batch changed, and memory holds
 * one copy of each record instead of two; a flow is computed from the records themselves. The
 * fold updates a held device in place (its record and meta objects): nothing per event that
 * memory keeps, so nothing old to collect.
 */
export interface DeviceEntry {
  readonly category: DeviceCategory;
  readonly deviceId: number;
  record: DeviceRecord;
  /** Precise first/last observation (the record's date-times are whole seconds). */
  readonly meta: { firstSeenMs: number; lastSeenMs: number };
}

/**
 * The flow as the projection computes and stores it: `data` JSON (`null` when nothing is
 * online) and its validity.
 */
export interface ProjectedFlow {
  readonly data: string;
  /** Epoch ms until which the data stays right by time alone; 0 = never expires. */
  readonly validUntilMs: number;
}

export interface InstallationState {
  readonly id: number;
  /**
   * The installation's revision in Redis when this copy was read or last written. Every writer
   * of its devices and flow bumps it in the installation's slot; a write expecting another
   * revision is refused and the owner reloads (src/read-model/lua/write-installation-4.lua).
   */
  readonly revision: number;
  /** Epoch ms of the installation's latest deletion; events no newer are stale. */
  readonly deletedAtMs: number | null;
  /**
   * By device field `<category>:<deviceId>`, in the devices hash's order. A fold updates it in
   * place; its owner keeps a state only while Redis holds what the fold made of it
   * (src/read-model/telemetry-store.ts drops it otherwise).
   */
  readonly devices: Map<string, DeviceEntry>;
  readonly flow: ProjectedFlow;
}

export const NO_FLOW: ProjectedFlow = { data: 'null', validUntilMs: 0 };

/** An installation Redis holds nothing of: what a first event starts from. */
export const initialState = (id: number): InstallationState => ({
  id,
  revision: 0,
  deletedAtMs: null,
  devices: new Map(),
  flow: NO_FLOW,
});

/**
 * Where a device lives, from its entry in the device index (its own slot, one per device):
 * the installation that last claimed it, when, the one it was claimed from, and its latest
 * removal. Read only for devices an installation does not hold.
 */
export interface DeviceIndexEntry {
  readonly inst: number | null;
  /** observedAt (epoch ms) of the claim. */
  readonly lastMs: number | null;
  /** The installation the claim took the device from (so a replayed claim still releases it). */
  readonly prev: number | null;
  /** occurredAt of the latest applied removal: older observations must not resurrect it. */
  readonly removedMs: number | null;
}

export const NO_INDEX_ENTRY: DeviceIndexEntry = {
  inst: null,
  lastMs: null,
  prev: null,
  removedMs: null,
};

/** A device's record as another installation holds it, carried on when the device moves. */
export interface CarriedDevice {
  readonly record: DeviceRecord;
  readonly meta: DeviceMeta;
}
