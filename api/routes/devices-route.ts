import type { FastifyInstance } from 'fastify';
import { latestLastSeenMs } from '../http/last-modified.js';
import { representationOf } from '../http/representation.js';
import type { StoredDevices } from '../read-model/api-reader.js';
import { devicesBody } from './envelopes.js';
import { registerInstallationRoute } from './installation-route.js';
import type { RouteContext } from './route-context.js';

export function registerDevicesRoute(app: FastifyInstance, ctx: RouteContext): void {
  registerInstallationRoute<StoredDevices>(app, ctx, {
    url: '/getInstallationDevices',
    read: (c, keyHash, id, nowMs) => c.reader.devices(keyHash, id, nowMs),
    // A near-cache hit serves what the first hit built: the body depends on the stored bytes only.
    representation: (_c, id, { pairs, memo }) => {
      if (memo?.devices) return memo.devices;
      const rep = representationOf(devicesBody(id, pairs), latestLastSeenMs(pairs));
      if (memo) memo.devices = rep;
      return rep;
    },
  });
}
