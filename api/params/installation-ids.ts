import { type IdResult, parseIntegerParam, pickParam } from './installation-id.js';

// `installationIds` of the bulk flow endpoint (beyond.md §4): comma-separated, 1 to
// MAX_INSTALLATION_IDS distinct ids, each with installationId's syntax. Distinct by value:
// `1,01` names one installation twice.

export const MAX_INSTALLATION_IDS = 100;
const PARAM = 'installationIds';

export type IdsResult =
  | {
      readonly ok: true;
      readonly ids: readonly number[];
      /** The value as sent: the same text always names the same ids. */
      readonly text: string;
    }
  | { readonly ok: false; readonly error: 'MISSING_PARAMETERS' | 'INVALID_PARAMETERS' };

const INVALID = { ok: false, error: 'INVALID_PARAMETERS' } as const;

const MISSING = { ok: false, error: 'MISSING_PARAMETERS' } as const;

/**
 * The ids in ascending order. Scanned by character (no split, regular expression or Set per
 * item: up to 100 items per request); a list sent in ascending order, the usual case, is then
 * neither sorted nor checked for duplicates, as strictly ascending ids are distinct.
 */
export function parseInstallationIds(
  query: Record<string, unknown> | undefined,
  body: Record<string, unknown> | undefined,
): IdsResult {
  const value = pickParam(query, body, PARAM);
  if (value === undefined) return MISSING;
  if (typeof value !== 'string') return INVALID;
  const ids: number[] = [];
  let ascending = true;
  let start = 0;
  for (;;) {
    if (ids.length === MAX_INSTALLATION_IDS) return INVALID;
    let end = value.indexOf(',', start);
    if (end < 0) end = value.length;
    const id = idBetween(value, start, end);
    if (id === null) return INVALID;
    if (ids.length > 0 && id <= (ids[ids.length - 1] as number)) ascending = false;
    ids.push(id);
    if (end === value.length) break;
    start = end + 1;
  }
  if (!ascending) {
    ids.sort((a, b) => a - b);
    for (let i = 1; i < ids.length; i++) if (ids[i] === ids[i - 1]) return INVALID;
  }
  return { ok: true, ids, text: value };
}

/** parseIntegerParam of `value.slice(start, end)`, null when invalid, without the slice. */
function idBetween(value: string, start: number, end: number): number | null {
  const negative = value.charCodeAt(start) === 0x2d;
  const first = negative ? start + 1 : start;
  if (first === end) return null;
  // Up to 15 digits the sum below is exact; longer ones take the general rule (safe range).
  if (end - first > 15) {
    const id: IdResult = parseIntegerParam(value.slice(start, end));
    return id.ok ? id.id : null;
  }
  let id = 0;
  for (let i = first; i < end; i++) {
    const digit = value.charCodeAt(i) - 0x30;
    if (digit < 0 || digit > 9) return null;
    id = id * 10 + digit;
  }
  // `-0` is 0, as parseIntegerParam answers it.
  return negative && id !== 0 ? -id : id;
}
