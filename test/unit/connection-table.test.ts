import { describe, expect, it } from 'vitest';
import { clientOf, forwardedClient } from '../../src/http/client-address.js';
import { ConnectionTable } from '../../src/http/connection-table.js';

interface Conn {
  readonly id: string;
  idle: boolean;
}

function table(max: number, perClient: number, uncapped: string[] = []) {
  const t = new ConnectionTable<Conn>(
    { max, perClient },
    (c) => c.idle,
    (client) => uncapped.includes(client),
  );
  const open = (client: string, idle = true) => {
    const verdict = t.decide(client);
    if (!verdict.admit) return verdict;
    if (verdict.evict) t.remove(verdict.evict.id.split('#')[0] as string, verdict.evict);
    const conn = { id: `${client}#${t.holding(client)}`, idle };
    t.add(client, conn);
    return verdict;
  };
  return { t, open };
}

describe('connection table: fair shares of the connection limit', () => {
  it('caps each client at its own limit while others still get in', () => {
    const { t, open } = table(100, 3);
    for (let i = 0; i < 3; i++) expect(open('a').admit).toBe(true);
    expect(open('a')).toEqual({ admit: false, reason: 'per-client' });
    expect(open('b').admit).toBe(true);
    expect(t.size).toBe(4);
  });

  it('at the limit, takes from the biggest holder, idle connections first', () => {
    const { t, open } = table(4, 0);
    open('a', false);
    open('a', true);
    open('a', false);
    open('b', false);
    const verdict = open('c');
    expect(verdict).toMatchObject({ admit: true, evict: { id: 'a#1', idle: true } });
    expect(t.size).toBe(4);
    expect(t.holding('a')).toBe(2);
  });

  it('takes a busy connection (a stream) of a client over its share when none is idle', () => {
    const { open } = table(3, 0);
    for (let i = 0; i < 3; i++) open('a', false);
    expect(open('b')).toMatchObject({ admit: true, evict: { id: 'a#0' } });
  });

  it('lets the biggest holder only trade its own idle connections, never another client’s', () => {
    const { t, open } = table(4, 0);
    open('a', false);
    open('a', false);
    open('b', true);
    open('b', false);
    // a holds 2, b holds 2: a third for a would take from an equal: refused.
    expect(open('a')).toEqual({ admit: false, reason: 'max-connections' });
    expect(open('b')).toMatchObject({ admit: true, evict: { id: 'b#0' } });
    expect(t.holding('a')).toBe(2);
  });

  it('holds a trusted proxy only to the global limit', () => {
    const { open } = table(10, 2, ['proxy']);
    for (let i = 0; i < 5; i++) expect(open('proxy').admit).toBe(true);
    expect(open('other').admit).toBe(true);
  });
});

describe('client address', () => {
  it('counts an IPv4 address as one client and an IPv6 address by its /64', () => {
    expect(clientOf('127.0.0.2')).toBe('127.0.0.2');
    expect(clientOf('::ffff:10.0.0.1')).toBe('10.0.0.1');
    expect(clientOf('2001:db8:1:2::5')).toBe(clientOf('2001:db8:1:2:ffff::1'));
    expect(clientOf('2001:db8:1:2::5')).not.toBe(clientOf('2001:db8:1:3::5'));
    expect(clientOf('::1')).toBe('0:0:0:0::/64');
  });

  it('takes the forwarded client only from a trusted proxy, right-most untrusted hop', () => {
    const trusted = new Set(['10.0.0.1', '10.0.0.2']);
    expect(forwardedClient('10.0.0.1', '198.51.100.7', trusted)).toBe('198.51.100.7');
    expect(forwardedClient('10.0.0.1', '6.6.6.6, 198.51.100.7, 10.0.0.2', trusted)).toBe(
      '198.51.100.7',
    );
    // Not a trusted proxy: the header is the client's own words.
    expect(forwardedClient('203.0.113.9', '198.51.100.7', trusted)).toBe('203.0.113.9');
    // Garbage in the header: the proxy itself.
    expect(forwardedClient('10.0.0.1', 'not-an-ip', trusted)).toBe('10.0.0.1');
    expect(forwardedClient('10.0.0.1', undefined, trusted)).toBe('10.0.0.1');
  });
});
