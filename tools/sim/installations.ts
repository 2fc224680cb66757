import type { InstallationUpsertedEvent } from '../../src/domain/events.js';
import type { Installation } from '../../src/domain/installation.js';
import { BUSINESSES, PLACES, type Place, SURNAMES } from './places.js';
import { createRng, deriveSeed, type Rng } from './random.js';

// Installation metadata. Each installation draws from its own seeded stream, so installation 7
// looks the same whether the run simulates 10 installations or 10 000.

export interface InstallationProfile {
  readonly installation: Installation;
  readonly companyId: number | null;
  readonly place: Place;
}

const COMPANY_COUNT = 5;
const FIRST_CREATION_MS = Date.UTC(2019, 0, 1);
const CREATION_SPAN_MS = Date.UTC(2025, 0, 1) - FIRST_CREATION_MS;

export function createInstallationProfile(seed: number, id: number): InstallationProfile {
  const rng = createRng(deriveSeed(seed, id, 1));
  const place = rng.pick(PLACES);
  const type = rng.chance(0.2) ? 'commercial' : 'private';
  const surname = rng.pick(SURNAMES);
  const name =
    type === 'commercial' ? `${surname} ${rng.pick(BUSINESSES)}` : `${surname} Residence`;
  // Installers and fleet operators own commercial sites, and some private ones they service.
  const companyId = type === 'commercial' || rng.chance(0.3) ? rng.int(1, COMPANY_COUNT) : null;
  const creationMs = FIRST_CREATION_MS + Math.floor(rng.next() * CREATION_SPAN_MS);
  return {
    place,
    companyId,
    installation: {
      id,
      name,
      type,
      address: `${rng.pick(place.streets)} ${rng.int(1, 180)}`,
      postalCode: fillPattern(place.postalCode, rng),
      city: place.city,
      country: place.country,
      timezone: place.timezone,
      // Spread sites over roughly 10 km around the city centre.
      latitude: round(place.latitude + rng.between(-0.05, 0.05), 5),
      longitude: round(place.longitude + rng.between(-0.07, 0.07), 5),
      altitude: Math.max(0, Math.round(place.altitude + rng.between(-15, 40))),
      creationDate: new Date(creationMs - (creationMs % 1000)).toISOString(),
    },
  };
}

export function installationUpserted(
  profile: InstallationProfile,
  nowMs: number,
): InstallationUpsertedEvent {
  return {
    type: 'installation.upserted',
    occurredAt: new Date(nowMs).toISOString(),
    installation: profile.installation,
    companyId: profile.companyId,
  };
}

function fillPattern(pattern: string, rng: Rng): string {
  return pattern.replace(/#/g, () => String(rng.int(0, 9)));
}

export function round(value: number, decimals: number): number {
  const factor = 10 ** decimals;
  return Math.round(value * factor) / factor;
}
