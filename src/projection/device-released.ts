import { z } from 'zod';
import { type DeviceCategory, deviceCategorySchema } from '../domain/device-fields.js';

// device.released: the internal event of the device-move protocol (docs/projection.md). When a
// device is met in another installation than its last one, the new owner sends this, keyed by
// the OLD installation, on the service's internal moves topic (never the producers' telemetry
// topic); the moves consumer applies it: the installation drops the device unless it holds a
// newer observation of it.

export const DEVICE_RELEASED = 'device.released';
/**
 * device.seen: the other internal event of the protocol. An observation found stale because the
 * device lives in another installation (which holds a newer one) still proves the device existed
 * then: sent keyed by that installation, it lowers the device's firstSeenDate there.
 */
export const DEVICE_SEEN = 'device.seen';

/** The two internal event types, a named enum of the contracts (`DeviceMoveType`). */
export const deviceMoveTypeSchema = z.enum([DEVICE_RELEASED, DEVICE_SEEN]);

const int64 = () => z.int().meta({ format: 'int64' });

export const deviceReleasedSchema = z
  .object({
    type: deviceMoveTypeSchema.meta({
      description:
        'device.released: the installation must let the device go; device.seen: an older observation lowers its firstSeenDate there.',
    }),
    installationId: int64().meta({
      description: 'The installation that must let the device go; also the message key.',
    }),
    category: deviceCategorySchema.meta({ description: 'The device category.' }),
    deviceId: int64().meta({ description: 'The device id, unique within its category.' }),
    atMs: int64().meta({
      description: 'The observation (or removal) that took the device, epoch milliseconds.',
    }),
    to: int64().nullable().meta({
      description: 'Where the device went; null when it was removed (and for device.seen).',
    }),
  })
  .meta({
    description:
      "Internal: the device-move protocol between the service's own consumers (docs/projection.md); producers never send it.",
  });

export interface DeviceReleasedEvent {
  readonly type: typeof DEVICE_RELEASED | typeof DEVICE_SEEN;
  readonly installationId: number;
  readonly category: DeviceCategory;
  readonly deviceId: number;
  readonly atMs: number;
  readonly to: number | null;
}

/** Null when the value is not an internal event of the moves topic. */
export function parseDeviceReleased(value: Buffer | null): DeviceReleasedEvent | null {
  if (value === null) return null;
  try {
    const result = deviceReleasedSchema.safeParse(JSON.parse(value.toString('utf8')));
    return result.success ? (result.data as DeviceReleasedEvent) : null;
  } catch {
    return null;
  }
}

export const serializeDeviceReleased = (event: DeviceReleasedEvent): string =>
  JSON.stringify(event);
