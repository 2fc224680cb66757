import type { FastifyInstance } from 'fastify';
import { energyFlowBody } from '../http/envelopes.js';
import { flowLastUpdatedMs } from '../http/last-modified.js';
import { representationOf } from '../http/representation.js';
import type { StoredFlow } from '../reader/api-reader.js';
import { currentFlowData } from '../reader/flow-freshness.js';
import { registerInstallationRoute } from './installation-route.js';
import type { RouteContext } from './route-context.js';

export function registerEnergyFlowRoute(app: FastifyInstance, ctx: RouteContext): void {
  registerInstallationRoute<StoredFlow>(app, ctx, {
    url: '/getInstallationCurrentEnergyFlow',
    read: (c, keyHash, id, nowMs) => c.reader.flow(keyHash, id, nowMs),
    representation: (c, id, flow, nowMs) => {
      // An expired flow, recomputed for this instant, comes without a memo: never kept.
      const { memo } = flow;
      if (memo?.flow) return memo.flow;
      const body = energyFlowBody(id, currentFlowData(flow, nowMs, c.onlineWindowSeconds));
      // `data` closes the body: its `lastUpdated` is the last one in it.
      const rep = representationOf(body, flowLastUpdatedMs(body));
      if (memo) memo.flow = rep;
      return rep;
    },
  });
}
