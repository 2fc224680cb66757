import type { FastifyInstance } from 'fastify';
import { devicesBody } from './envelopes.js';
import { registerInstallationRoute } from './installation-route.js';
import type { RouteContext } from './route-context.js';

export function registerDevicesRoute(app: FastifyInstance, ctx: RouteContext): void {
  registerInstallationRoute<readonly Buffer[]>(app, ctx, {
    url: '/getInstallationDevices',
    read: (c, keyHash, id, nowMs) => c.reader.devices(keyHash, id, nowMs),
    body: (_c, id, pairs) => devicesBody(id, pairs),
  });
}
