// The one place the playground proxy's upstream URL is made. It is built from configuration
// (upstream origin, API base path) plus the part of the path after `{proxy}{base}/`, then
// resolved (dot segments, backslashes) and checked again: a result on another origin or outside
// the API base is refused. The request's own authority never takes part. Encoded dots, slashes,
// backslashes and percent signs are refused before that: resolving here leaves `..%2f` alone,
// and an upstream that decodes `%2F` before normalising would then climb out of the base.

export type ProxyTarget =
  | { readonly ok: true; readonly url: URL }
  | { readonly ok: false; readonly reason: 'outside-base' | 'bad-target' };

// %2e `.`, %2f `/`, %5c `\`, %25 `%` (a doubly encoded one of the others), any case.
const ENCODED_SEPARATOR = /%(?:2e|2f|5c|25)/i;

export function proxyTarget(options: {
  /** The path and query this server received, origin-form. */
  readonly requestUrl: string;
  /** `{proxy prefix}{API base}`, e.g. `/docs/proxy/application/v1`. */
  readonly routePrefix: string;
  readonly basePath: string;
  readonly upstreamOrigin: string;
}): ProxyTarget {
  const { requestUrl, routePrefix, basePath, upstreamOrigin } = options;
  const mount = `${routePrefix}/`;
  if (!requestUrl.startsWith(mount)) return { ok: false, reason: 'bad-target' };
  const queryAt = requestUrl.indexOf('?');
  const path = queryAt === -1 ? requestUrl : requestUrl.slice(0, queryAt);
  const query = queryAt === -1 ? '' : requestUrl.slice(queryAt);
  const rest = path.slice(mount.length);
  if (ENCODED_SEPARATOR.test(rest)) return { ok: false, reason: 'outside-base' };
  let url: URL;
  try {
    url = new URL(`${basePath}/${rest}${query}`, upstreamOrigin);
  } catch {
    return { ok: false, reason: 'bad-target' };
  }
  if (url.origin !== upstreamOrigin || !url.pathname.startsWith(`${basePath}/`)) {
    return { ok: false, reason: 'outside-base' };
  }
  url.hash = '';
  return { ok: true, url };
}
