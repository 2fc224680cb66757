import type { FastifyInstance } from 'fastify';
import type { StoredFlow } from '../read-model/api-reader.js';
import { currentFlowData } from '../read-model/flow-freshness.js';
import { energyFlowBody } from './envelopes.js';
import { registerInstallationRoute } from './installation-route.js';
import type { RouteContext } from './route-context.js';

export function registerEnergyFlowRoute(app: FastifyInstance, ctx: RouteContext): void {
  registerInstallationRoute<StoredFlow>(app, ctx, {
    url: '/getInstallationCurrentEnergyFlow',
    read: (c, keyHash, id, nowMs) => c.reader.flow(keyHash, id, nowMs),
    body: (c, id, flow, nowMs) =>
      energyFlowBody(id, currentFlowData(flow, nowMs, c.onlineWindowSeconds)),
  });
}
