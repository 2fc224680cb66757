// Which request-targets reach the router (RFC 9112 §3.2). Origin-form (`/path?query`) passes as
// is. Absolute-form (`http://host/path`) is what a client sends to a forward proxy: this server
// is not one, so it is accepted only when its authority is the Host this request names (then
// the target becomes its origin-form) and refused otherwise; with a foreign authority, code that
// reads `request.url` would be pointed at another host. Any other form is refused.

export type TargetVerdict =
  | { readonly ok: true; readonly url: string }
  | { readonly ok: false; readonly reason: 'foreign-authority' | 'unsupported-form' };

const ABSOLUTE = /^https?:\/\/([^/?#]*)([^#]*)$/i;

export function checkRequestTarget(target: string, host: string | undefined): TargetVerdict {
  // '/' = 47: the common case costs one comparison.
  if (target.charCodeAt(0) === 47) return { ok: true, url: target };
  const match = ABSOLUTE.exec(target);
  if (!match) return { ok: false, reason: 'unsupported-form' };
  const authority = match[1] as string;
  const rest = match[2] as string;
  // Userinfo is never ours to accept (RFC 9110 §4.2.4), and the Host must name the same authority.
  if (
    authority.includes('@') ||
    host === undefined ||
    authority.toLowerCase() !== host.toLowerCase()
  ) {
    return { ok: false, reason: 'foreign-authority' };
  }
  if (rest === '') return { ok: true, url: '/' };
  if (rest.charCodeAt(0) === 63) return { ok: true, url: `/${rest}` }; // '?': empty path
  return { ok: true, url: rest };
}
