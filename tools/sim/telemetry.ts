import type { DeviceStateEvent } from '../../src/domain/events.js';
import type { DeviceReading, Fields } from './readings.js';

// Turns readings into device.state events the way a gateway would: the first event of a device
// carries everything (identity, ratings, the non-nullable fields), later ones only the fields
// whose value changed since the device last reported.

export interface TelemetryTracker {
  event(installationId: number, reading: DeviceReading, observedAt: string): DeviceStateEvent;
}

export function createTelemetryTracker(): TelemetryTracker {
  const lastSent = new Map<string, Map<string, string>>();
  return {
    event(installationId, reading, observedAt) {
      const { category, deviceId } = reading.device;
      const id = `${category}:${deviceId}`;
      const previous = lastSent.get(id);
      let state: Fields;
      if (previous) {
        state = {};
        for (const [name, value] of Object.entries(reading.live)) {
          const encoded = JSON.stringify(value);
          if (previous.get(name) !== encoded) {
            state[name] = value;
            previous.set(name, encoded);
          }
        }
      } else {
        state = { ...reading.fixed, ...reading.live };
        lastSent.set(
          id,
          new Map(Object.entries(reading.live).map(([k, v]) => [k, JSON.stringify(v)])),
        );
      }
      return { type: 'device.state', installationId, category, deviceId, observedAt, state };
    },
  };
}
