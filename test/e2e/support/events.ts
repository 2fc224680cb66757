import { hashApiKey } from '../../../src/domain/access-rule.js';
import type { Installation } from '../../../src/domain/installation.js';

// Producer-side event builders of spec/events.md, with the message keys it prescribes.

const at = (ms = Date.now()) => new Date(ms).toISOString();

export type Keyed = { key: string; event: Record<string, unknown> };

export const installationUpserted = (
  installation: Installation,
  companyId: number | null,
): Keyed => ({
  key: String(installation.id),
  event: { type: 'installation.upserted', occurredAt: at(), installation, companyId },
});

export const applicationUpserted = (
  applicationId: number,
  owner: { type: 'user' | 'company'; id: number },
  enabled = true,
): Keyed => ({
  key: `app:${applicationId}`,
  event: { type: 'application.upserted', occurredAt: at(), applicationId, owner, enabled },
});

export const installationDeleted = (installationId: number): Keyed => ({
  key: String(installationId),
  event: { type: 'installation.deleted', occurredAt: at(), installationId },
});

export const applicationDeleted = (applicationId: number): Keyed => ({
  key: `app:${applicationId}`,
  event: { type: 'application.deleted', occurredAt: at(), applicationId },
});

export const apiKeyCreated = (
  keyId: string,
  applicationId: number,
  apiKey: string,
  expiresAt: string | null = null,
): Keyed => ({
  key: `key:${keyId}`,
  event: {
    type: 'apiKey.created',
    occurredAt: at(),
    keyId,
    applicationId,
    keyHash: hashApiKey(apiKey),
    expiresAt,
  },
});

export const apiKeyRevoked = (keyId: string): Keyed => ({
  key: `key:${keyId}`,
  event: { type: 'apiKey.revoked', occurredAt: at(), keyId },
});

export const grant = (added: boolean, applicationId: number, installationId: number): Keyed => ({
  key: `grant:${applicationId}:${installationId}`,
  event: {
    type: added ? 'grant.added' : 'grant.removed',
    occurredAt: at(),
    applicationId,
    installationId,
  },
});

export const membership = (added: boolean, userId: number, installationId: number): Keyed => ({
  key: `member:${userId}:${installationId}`,
  event: {
    type: added ? 'membership.added' : 'membership.removed',
    occurredAt: at(),
    userId,
    installationId,
  },
});

export const deviceState = (
  installationId: number,
  category: string,
  deviceId: number,
  observedMs: number,
  state: Record<string, unknown>,
): Keyed => ({
  key: String(installationId),
  event: {
    type: 'device.state',
    installationId,
    category,
    deviceId,
    observedAt: at(observedMs),
    state,
  },
});
