// The expiry a key's status record holds (keys.ts `keyStatus`): written by the consumers, read by
// the API on every request it does not answer from memory. Pure, so both sides share one reading.
//
// Format 2 (`v` = '2'): `exp` is '' when the key never expires, else its expiresAt in epoch ms,
// any integer. No instant stands for "never": the epoch (0) and the instants before it (negative)
// are instants like any other, so a key dated there is expired.
//
// Records without `v` were written before format 2, where `exp` '0' meant "never" and so did a
// key expiring at the epoch: the two cannot be told apart from the record. They are read as they
// were meant, '0' as never (a key issued without expiry must not stop working on an upgrade);
// the key's next `apiKey.created` rewrites the record, and a rebuild from access-changes.v1
// (which empties the read model first) writes every record anew, after which an epoch key is
// refused. `v` is written with `exp`, in one script (write-status-1.lua), never apart from it.

export const KEY_STATUS_VERSION = '2';

/** The stored `exp` of an expiresAt in epoch ms; null: never expires. */
export const encodeKeyExpiry = (expiresAtMs: number | null): string =>
  expiresAtMs === null ? '' : String(expiresAtMs);

const INSTANT = /^-?\d{1,16}$/;

/**
 * The expiresAt (epoch ms) a record's `exp` and `v` say; null: never expires; undefined: not an
 * expiry this reader knows (a missing `exp`, a malformed one, an unknown version): refuse the key.
 */
export function decodeKeyExpiry(
  exp: string | null,
  version: string | null,
): number | null | undefined {
  if (exp === null) return undefined;
  if (version === KEY_STATUS_VERSION) return exp === '' ? null : instant(exp);
  if (version !== null) return undefined;
  return exp === '0' ? null : instant(exp);
}

function instant(exp: string): number | undefined {
  if (!INSTANT.test(exp)) return undefined;
  const ms = Number(exp);
  return Number.isSafeInteger(ms) ? ms : undefined;
}
