import type { DeviceReleasedEvent } from './device-released.js';
import type { DeviceEntry, InstallationState, ProjectedFlow } from './installation-state.js';

// What a batch writes, per slot: each installation's changes (applied by one script in its slot,
// refused unless its revision is still `expectedRevision`), the device index operations (one
// per device slot) and the device.released messages for other installations.

export interface InstallationWrite {
  readonly id: number;
  readonly expectedRevision: number;
  /** Devices written, by field. */
  readonly set: ReadonlyMap<string, DeviceEntry>;
  /** Device fields deleted. */
  readonly removed: ReadonlySet<string>;
  /** The new flow, or null when it did not change. */
  readonly flow: ProjectedFlow | null;
  /** The state once the write is acknowledged (its revision is expectedRevision + 1). */
  readonly next: InstallationState;
}

/**
 * An operation on a device's index entry. `claim`: the device now lives in `inst`, observed at
 * `atMs`, unless a newer claim or removal is recorded. `remove`: removed at `atMs`.
 */
export interface IndexOp {
  readonly kind: 'claim' | 'remove';
  readonly inst: number;
  readonly atMs: number;
}

export interface WritePlan {
  readonly installations: ReadonlyMap<number, InstallationWrite>;
  /** By device field, in the order the fold decided them. */
  readonly index: ReadonlyMap<string, readonly IndexOp[]>;
  readonly releases: readonly DeviceReleasedEvent[];
}

export const isEmptyWrite = (w: InstallationWrite): boolean =>
  w.set.size === 0 && w.removed.size === 0 && w.flow === null;
