// The API's side of expiry (read-model contract): `exp` 0 = never, else live while now < exp.

/** True when the key view exists (key live) and has not expired at `nowMs`. */
export function isViewLive(app: string | null, exp: string | null, nowMs: number): boolean {
  // A view without both fields is not one the consumer wrote: fail closed.
  if (app === null || exp === null) return false;
  const expMs = Number(exp);
  if (!Number.isFinite(expMs)) return false;
  return expMs === 0 || expMs > nowMs;
}
