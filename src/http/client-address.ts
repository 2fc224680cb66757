import { isIP } from 'node:net';

// Who a client is, for limits that count per client. An IPv4 address is one client; an IPv6
// address counts by its /64, the block one subscriber is usually given (counting each address
// would let one host take 2^64 shares). Behind a trusted proxy (API_TRUSTED_PROXIES) the client
// of a request is the address the proxy forwarded; its connections are the proxy's.

/** The per-client identity of a socket's remote address. */
export function clientOf(remoteAddress: string | undefined): string {
  const address = plain(remoteAddress ?? '');
  if (isIP(address) !== 6) return address;
  return `${expandIpv6(address).slice(0, 4).join(':')}::/64`;
}

/** `::ffff:192.0.2.1` is 192.0.2.1: a dual-stack listener reports IPv4 clients so. */
export function plain(address: string): string {
  return address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
}

/**
 * The client of a request: the remote address, or, when that is a trusted proxy, the
 * right-most `X-Forwarded-For` entry that is not itself a trusted proxy (the left ones are
 * whatever the client wrote).
 */
export function forwardedClient(
  remoteAddress: string | undefined,
  forwardedFor: string | string[] | undefined,
  /** Trusted proxies, each as clientOf gives it. */
  trusted: ReadonlySet<string>,
): string {
  const remote = clientOf(remoteAddress);
  if (!trusted.has(remote) || forwardedFor === undefined) return remote;
  const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor)
    .split(',')
    .map((hop) => plain(hop.trim()));
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = hops[i] as string;
    if (isIP(hop) === 0) break;
    if (!trusted.has(clientOf(hop))) return clientOf(hop);
  }
  return remote;
}

function expandIpv6(address: string): string[] {
  const [head = '', tail] = (address.split('%')[0] ?? '').split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const zeros = Array(Math.max(0, 8 - left.length - right.length)).fill('0');
  return [...left, ...zeros, ...right].map((group) => group.toLowerCase().replace(/^0+(?=.)/, ''));
}
