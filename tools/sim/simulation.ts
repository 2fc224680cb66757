import type { DeviceStateEvent, InstallationUpsertedEvent } from '../../src/domain/events.js';
import {
  createInstallationProfile,
  type InstallationProfile,
  installationUpserted,
} from './installations.js';
import { createRng, deriveSeed, type Rng } from './random.js';
import { siteReadings } from './readings.js';
import { initialSiteState, type SiteSnapshot, type SiteState, stepSite } from './site.js';
import { createSitePlan, type SitePlan } from './site-plan.js';
import { createTelemetryTracker } from './telemetry.js';

// The whole simulated fleet, without I/O: the caller supplies the clock, so a seeded run with
// the same timestamps yields the same events.

export interface SimulationOptions {
  readonly installations: number;
  readonly seed: number;
  readonly offlineFraction: number;
  readonly startMs: number;
}

export interface SimulatedSite {
  readonly profile: InstallationProfile;
  readonly plan: SitePlan;
  readonly state: SiteState;
  readonly rng: Rng;
}

export interface Round {
  readonly installationId: number;
  readonly snapshot: SiteSnapshot;
  /** One event per device still reporting. */
  readonly events: readonly DeviceStateEvent[];
}

export interface Simulation {
  readonly sites: readonly SimulatedSite[];
  /** Number of devices across all sites. */
  readonly deviceCount: number;
  installationEvents(nowMs: number): InstallationUpsertedEvent[];
  /** Steps the next site (round robin) to `nowMs` and returns its devices' events. */
  nextRound(nowMs: number): Round;
  /** Devices that have stopped reporting at `nowMs`. */
  silentDevices(nowMs: number): number;
}

export function createSimulation(options: SimulationOptions): Simulation {
  const sites: SimulatedSite[] = [];
  for (let id = 1; id <= options.installations; id++) {
    const profile = createInstallationProfile(options.seed, id);
    const plan = createSitePlan(profile, options);
    const rng = createRng(deriveSeed(options.seed, id, 3));
    sites.push({ profile, plan, rng, state: initialSiteState(plan, rng) });
  }
  const tracker = createTelemetryTracker();
  const isSilent = (silentAfterMs: number | null, nowMs: number) =>
    silentAfterMs !== null && nowMs - options.startMs >= silentAfterMs;
  let cursor = 0;

  return {
    sites,
    deviceCount: sites.reduce((n, s) => n + s.plan.devices.length, 0),
    installationEvents: (nowMs) => sites.map((s) => installationUpserted(s.profile, nowMs)),
    nextRound(nowMs) {
      const site = sites[cursor % sites.length];
      if (!site) throw new RangeError('the simulation has no installations');
      cursor = (cursor + 1) % sites.length;
      const snapshot = stepSite(site.plan, site.state, nowMs, site.rng);
      const observedAt = new Date(nowMs).toISOString();
      const events = siteReadings(site.plan, snapshot, site.rng)
        .filter((r) => !isSilent(r.device.silentAfterMs, nowMs))
        .map((r) => tracker.event(site.plan.installationId, r, observedAt));
      return { installationId: site.plan.installationId, snapshot, events };
    },
    silentDevices: (nowMs) =>
      sites.reduce(
        (n, s) => n + s.plan.devices.filter((d) => isSilent(d.silentAfterMs, nowMs)).length,
        0,
      ),
  };
}
