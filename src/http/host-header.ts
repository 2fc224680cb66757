import { isIPv6 } from 'node:net';

// Whether a request's `Host` is one this server can build a URL from (RFC 9112 §3.2: an
// invalid one is answered 400). RFC 3986 host [":" port], without percent-encoding, and
// parsable by the WHATWG URL parser too, since code behind the edge (Scalar's page, for one)
// builds `new URL(path, proto://host)` and a host it rejects would end in a 500. Empty is
// refused as well: every target this server has includes an authority.

const SYNTAX = /^(?:\[([0-9A-Fa-f:.]+)\]|[A-Za-z0-9\-._~!$&'()*+,;=]+)(?::[0-9]{1,5})?$/;

// Nearly every request names the same Host: one remembered good value spares the URL parser.
let lastGood = '';

export function isValidHost(host: string): boolean {
  if (host === lastGood) return true;
  const match = SYNTAX.exec(host);
  if (!match) return false;
  if (match[1] !== undefined && !isIPv6(match[1])) return false;
  if (!URL.canParse(`http://${host}/`)) return false;
  lastGood = host;
  return true;
}

/** How many `Host` lines the request carried; Node keeps the first and drops the rest. */
export function hostLineCount(rawHeaders: readonly string[]): number {
  let count = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] as string;
    if (name.length === 4 && name.toLowerCase() === 'host') count++;
  }
  return count;
}
