// `installationId` rules of semantics.md "Requests": an optional minus and decimal digits only,
// within the safe integer range; anything else present is INVALID, absent is MISSING.

export type IdResult =
  | { readonly ok: true; readonly id: number }
  | { readonly ok: false; readonly error: 'MISSING_PARAMETERS' | 'INVALID_PARAMETERS' };

const INTEGER = /^-?[0-9]+$/;
const PARAM = 'installationId';

type Source = Record<string, unknown> | null | undefined;

/** A form body value replaces the query value entirely (body wins, no "repeated" check across). */
export function pickParam(query: Source, body: Source, name: string): unknown {
  if (body && typeof body === 'object' && Object.hasOwn(body, name)) return body[name];
  if (query && typeof query === 'object' && Object.hasOwn(query, name)) return query[name];
  return undefined;
}

export function parseIntegerParam(value: unknown): IdResult {
  if (value === undefined) return { ok: false, error: 'MISSING_PARAMETERS' };
  // A repeated parameter arrives as an array: ambiguous, so refused.
  if (typeof value !== 'string' || !INTEGER.test(value)) {
    return { ok: false, error: 'INVALID_PARAMETERS' };
  }
  const id = Number(value);
  if (!Number.isSafeInteger(id)) return { ok: false, error: 'INVALID_PARAMETERS' };
  // `-0` is 0: the echoed id must be written the way JSON writes integers.
  return { ok: true, id: id === 0 ? 0 : id };
}

export function parseInstallationId(query: Source, body: Source): IdResult {
  return parseIntegerParam(pickParam(query, body, PARAM));
}
