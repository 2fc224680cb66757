// The one place the playground proxy's upstream URL is made. It is built from configuration
// (upstream origin, API base path) plus the part of the target after `{upstream}{base}/`, then
// resolved (dot segments, backslashes) and checked again: a result on another origin or outside
// the API base is refused. The request's own authority never takes part. Encoded dots, slashes,
// backslashes and percent signs are refused before that: resolving here leaves `..%2f` alone,
// and an upstream that decodes `%2F` before normalising would then climb out of the base.
// Two forms reach it: the path form `{proxy}{base}/rest` and the form Scalar sends for an
// absolute server URL, `{proxy}?scalar_url=<the whole target, encoded>`; both end in one check.

export type ProxyTarget =
  | { readonly ok: true; readonly url: URL }
  | { readonly ok: false; readonly reason: 'outside-base' | 'bad-target' };

// %2e `.`, %2f `/`, %5c `\`, %25 `%` (a doubly encoded one of the others), any case.
const ENCODED_SEPARATOR = /%(?:2e|2f|5c|25)/i;

interface TargetRules {
  readonly basePath: string;
  readonly upstreamOrigin: string;
}

/** The path form: `/docs/proxy/application/v1/getInstallations?…`. */
export function proxyTarget(
  options: TargetRules & {
    /** The path and query this server received, origin-form. */
    readonly requestUrl: string;
    /** `{proxy prefix}{API base}`, e.g. `/docs/proxy/application/v1`. */
    readonly routePrefix: string;
  },
): ProxyTarget {
  const mount = `${options.routePrefix}/`;
  if (!options.requestUrl.startsWith(mount)) return { ok: false, reason: 'bad-target' };
  return underBase(options.requestUrl.slice(mount.length), options);
}

/**
 * Scalar's form: `/docs/proxy?scalar_url=http%3A%2F%2F127.0.0.1%3A8080%2Fapplication%2Fv1%2F…`.
 * The query holds that one parameter; its value must begin with the upstream origin and the
 * API base exactly as the playground's document names them (no userinfo, no other spelling of
 * the host or port), and the rest is checked as the path form's is.
 */
export function scalarUrlTarget(
  options: TargetRules & {
    readonly requestUrl: string;
    /** The proxy's own path, e.g. `/docs/proxy`. */
    readonly prefix: string;
  },
): ProxyTarget {
  const { requestUrl, prefix, basePath, upstreamOrigin } = options;
  if (!requestUrl.startsWith(`${prefix}?`)) return { ok: false, reason: 'bad-target' };
  const params = new URLSearchParams(requestUrl.slice(prefix.length + 1));
  const values = params.getAll('scalar_url');
  if (values.length !== 1 || [...params.keys()].length !== 1) {
    return { ok: false, reason: 'bad-target' };
  }
  const mount = `${upstreamOrigin}${basePath}/`;
  const value = values[0] as string;
  if (!value.startsWith(mount)) return { ok: false, reason: 'outside-base' };
  return underBase(value.slice(mount.length), options);
}

/** `rest`: what follows `{base}/`, with its query. */
function underBase(rest: string, { basePath, upstreamOrigin }: TargetRules): ProxyTarget {
  const queryAt = rest.indexOf('?');
  const path = queryAt === -1 ? rest : rest.slice(0, queryAt);
  const query = queryAt === -1 ? '' : rest.slice(queryAt);
  if (ENCODED_SEPARATOR.test(path)) return { ok: false, reason: 'outside-base' };
  let url: URL;
  try {
    url = new URL(`${basePath}/${path}${query}`, upstreamOrigin);
  } catch {
    return { ok: false, reason: 'bad-target' };
  }
  if (url.origin !== upstreamOrigin || !url.pathname.startsWith(`${basePath}/`)) {
    return { ok: false, reason: 'outside-base' };
  }
  url.hash = '';
  return { ok: true, url };
}
