import type { DeviceIndexEntry } from '../projection/installation-state.js';
import type { IndexOp } from '../projection/write-plan.js';

// A device's index entry as stored (deviceIndexKey): one string `<inst>;<last>;<prev>;<removed>`,
// each an integer or '' for none. The Lua scripts read and write the same text
// (claim-device-1.lua, release-device-1.lua).

const num = (v: string | undefined): number | null =>
  v === undefined || v === '' ? null : Number(v);

const text = (v: number | null): string => (v === null ? '' : String(v));

/** Null for a missing key; throws on text that is not an entry (never written by this code). */
export function decodeIndexEntry(value: string | null): DeviceIndexEntry | null {
  if (value === null) return null;
  const parts = value.split(';');
  if (parts.length !== 4) throw new TypeError('stored device index entry is not four fields');
  const [inst, last, prev, removed] = parts;
  return { inst: num(inst), lastMs: num(last), prev: num(prev), removedMs: num(removed) };
}

/** The entry of a device first claimed by `op` (no earlier owner, no removal). */
export const claimedEntry = (op: IndexOp): string => `${op.inst};${op.atMs};;`;

export function encodeIndexEntry(entry: DeviceIndexEntry): string {
  return `${text(entry.inst)};${text(entry.lastMs)};${text(entry.prev)};${text(entry.removedMs)}`;
}
