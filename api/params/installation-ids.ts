import { type IdResult, parseIntegerParam, pickParam } from './installation-id.js';

// `installationIds` of the bulk flow endpoint (beyond.md §4): comma-separated, 1 to
// MAX_INSTALLATION_IDS distinct ids, each with installationId's syntax. Distinct by value:
// `1,01` names one installation twice.

export const MAX_INSTALLATION_IDS = 100;
const PARAM = 'installationIds';

export type IdsResult =
  | { readonly ok: true; readonly ids: readonly number[] }
  | { readonly ok: false; readonly error: 'MISSING_PARAMETERS' | 'INVALID_PARAMETERS' };

const INVALID = { ok: false, error: 'INVALID_PARAMETERS' } as const;

/** The ids in ascending order. */
export function parseInstallationIds(
  query: Record<string, unknown> | undefined,
  body: Record<string, unknown> | undefined,
): IdsResult {
  const value = pickParam(query, body, PARAM);
  if (value === undefined) return { ok: false, error: 'MISSING_PARAMETERS' };
  if (typeof value !== 'string') return INVALID;
  const items = value.split(',');
  if (items.length > MAX_INSTALLATION_IDS) return INVALID;
  const ids = new Set<number>();
  for (const item of items) {
    const id: IdResult = parseIntegerParam(item);
    if (!id.ok || ids.has(id.id)) return INVALID;
    ids.add(id.id);
  }
  return { ok: true, ids: [...ids].sort((a, b) => a - b) };
}
