import type { FastifyInstance } from 'fastify';
import { devicesBody } from '../http/envelopes.js';
import { latestLastSeenMs } from '../http/last-modified.js';
import { representationOf } from '../http/representation.js';
import type { StoredDevices } from '../reader/api-reader.js';
import { packed } from '../reader/packed.js';
import { registerInstallationRoute } from './installation-route.js';
import type { RouteContext } from './route-context.js';

export function registerDevicesRoute(app: FastifyInstance, ctx: RouteContext): void {
  registerInstallationRoute<StoredDevices>(app, ctx, {
    url: '/getInstallationDevices',
    read: (c, keyHash, id, nowMs) => c.reader.devices(keyHash, id, nowMs),
    // A near-cache hit serves what the first hit built: the body depends on the stored bytes only.
    representation: (_c, id, { pairs, memo }) => {
      if (memo?.devices) return memo.devices;
      const body = devicesBody(id, pairs);
      // Kept with the entry: in an allocation of its own (packed.ts), not in a slab of Node's
      // shared pool that a body under 4 KB would keep alive, with whatever else it holds.
      const kept = memo ? (packed([body])[0] as Buffer) : body;
      const rep = representationOf(kept, latestLastSeenMs(pairs));
      if (memo) memo.devices = rep;
      return rep;
    },
  });
}
